// OpenMP target version of the histogram family: one pass over 8-bit samples with atomic increments. A single
// target region: nothing to keep on the device between launches (a program the transfer pass leaves alone).
#include <stdio.h>
#define SAMPLES (1 << 20)
#define BINS 256

static unsigned char samples[SAMPLES];
static unsigned bins[BINS];

void histogram(void) {
#pragma omp target teams distribute parallel for map(to: samples) map(tofrom: bins)
  for (int i = 0; i < SAMPLES; ++i) {
#pragma omp atomic
    bins[samples[i]]++;
  }
}

int main(void) {
  unsigned state = 2463534242u;
  for (int i = 0; i < SAMPLES; ++i) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    samples[i] = (unsigned char)(state >> 24);
  }
  histogram();
  unsigned long long weighted = 0;
  for (int b = 0; b < BINS; ++b) weighted += (unsigned long long)bins[b] * (b + 1);
  printf("%llu\n", weighted);
  return 0;
}
