// OpenMP target version of the sort family: odd-even transposition sort, one target region per phase that
// maps the keys both ways.
#include <stdio.h>
#define N 1024

static unsigned keys[N];

void sort(void) {
  for (int phase = 0; phase < N; ++phase) {
    int first = phase % 2;
#pragma omp target teams distribute parallel for map(tofrom: keys)
    for (int i = first; i < N - 1; i += 2)
      if (keys[i] > keys[i + 1]) {
        unsigned t = keys[i];
        keys[i] = keys[i + 1];
        keys[i + 1] = t;
      }
  }
}

int main(void) {
  unsigned state = 123456789u;
  for (int i = 0; i < N; ++i) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    keys[i] = state % 100000u;
  }
  sort();
  int sorted = 1;
  unsigned long long check = 0;
  for (int i = 0; i < N; ++i) {
    sorted &= i == 0 || keys[i - 1] <= keys[i];
    check += (unsigned long long)keys[i] * (i % 7 + 1);
  }
  printf("%s %llu\n", sorted ? "sorted" : "UNSORTED", check);
  return 0;
}
