// OpenMP target version of the scan family: an inclusive Hillis-Steele prefix sum, one target region per
// doubling step that maps both buffers and reads one, writes the other (which one by the step's parity).
#include <stdio.h>
#define N (1 << 18)

static int even[N], odd[N];

void prefix_sum(void) {
  int step = 0;
  for (int offset = 1; offset < N; offset <<= 1, ++step) {
    int from_even = step % 2 == 0;
#pragma omp target teams distribute parallel for map(tofrom: even, odd)
    for (int i = 0; i < N; ++i) {
      if (from_even)
        odd[i] = even[i] + (i >= offset ? even[i - offset] : 0);
      else
        even[i] = odd[i] + (i >= offset ? odd[i - offset] : 0);
    }
  }
}

int main(void) {
  for (int i = 0; i < N; ++i) even[i] = i % 7 - 3;
  prefix_sum();  // 18 steps: the result is in even
  long long check = 0;
  for (int i = 0; i < N; i += 97) check += (long long)even[i] * (i % 5 + 1);
  printf("%d %lld\n", even[N - 1], check);
  return 0;
}
