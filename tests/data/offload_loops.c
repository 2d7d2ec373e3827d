// Loops of OpenMP target regions for stitchopt-hoist-target-data: one whose maps can stay on the device
// across the loop, one where the host reads a mapped array between launches (that array must be copied every
// time), one whose launch writes an array it maps `to` only (each launch must see the host's copy again).
#include <stdio.h>
#include <stdlib.h>
#define N 4096
static float a[N], b[N], c[N], d[N], e[N], f[N];

void hoisted(int steps) {
  for (int s = 0; s < steps; ++s) {
#pragma omp target teams distribute parallel for map(to: a) map(tofrom: b)
    for (int i = 0; i < N; ++i) b[i] = 0.5f * (b[i] + a[i]);
  }
}

float host_reads(int steps) {
  float seen = 0;
  for (int s = 0; s < steps; ++s) {
#pragma omp target teams distribute parallel for map(tofrom: c) map(to: d)
    for (int i = 0; i < N; ++i) c[i] += d[i];
    seen += c[s];
  }
  return seen;
}

void writes_to_only(int steps) {
  for (int s = 0; s < steps; ++s) {
#pragma omp target teams distribute parallel for map(to: e) map(tofrom: f)
    for (int i = 0; i < N; ++i) {
      f[i] += e[i];
      e[i] = 0;
    }
  }
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 4;
  for (int i = 0; i < N; ++i) a[i] = d[i] = e[i] = (float)(i % 13), b[i] = c[i] = f[i] = 1.0f;
  hoisted(steps);
  float seen = host_reads(steps);
  writes_to_only(steps);
  double sum = 0;
  for (int i = 0; i < N; ++i) sum += b[i] + 2 * c[i] + 3 * f[i];
  printf("%.6e %.6e\n", seen, sum);
  return 0;
}
