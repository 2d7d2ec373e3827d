// OpenMP target version of the reduction family: centering integer samples step by step, each step a target
// reduction (the host reads the sum) and a target region that subtracts the mean, both mapping the samples.
#include <stdio.h>
#define N (1 << 20)
#define STEPS 6

static int samples[N];

long long center(void) {
  long long total = 0;
  for (int s = 0; s < STEPS; ++s) {
    long long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(to: samples)
    for (int i = 0; i < N; ++i) sum += samples[i];
    int mean = (int)(sum / N) + s;  // the host decides each step's shift
#pragma omp target teams distribute parallel for map(tofrom: samples)
    for (int i = 0; i < N; ++i) samples[i] -= mean;
    total += sum;
  }
  return total;
}

int main(void) {
  unsigned state = 7u;
  for (int i = 0; i < N; ++i) {
    state = state * 1664525u + 1013904223u;
    samples[i] = (int)(state >> 20);
  }
  long long total = center();
  long long check = 0;
  for (int i = 0; i < N; ++i) check += (long long)samples[i] * (i % 9 + 1);
  printf("%lld %lld\n", total, check);
  return 0;
}
