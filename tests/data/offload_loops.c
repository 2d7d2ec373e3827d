// Loops of OpenMP target regions for stitchopt-hoist-target-data: one whose maps can stay on the device
// across the loop, one where the host reads a mapped array between launches (that array must be copied every
// time), one whose launch writes an array it maps `to` only (each launch must see the host's copy again), the
// same where only the device code writes it, one that maps an array again through a pointer to it, one whose
// second launch copies an array the first one wrote from the host (firstprivate), and a straight run of
// launches (what a loop the optimizer unrolled looks like).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define N 4096
static float a[N], b[N], c[N], d[N], e[N], f[N];
static int g[N], first[64], h[N], r[N], q[16], q_sums[64];
int *h_alias = h;
long total;

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

void device_only_writes(int steps) {
  for (int s = 0; s < steps; ++s) {
#pragma omp target map(to: g) map(tofrom: first)
    {
      first[s] = g[0];
      if (!omp_is_initial_device()) g[0] += 1;  // the host fallback never writes g
    }
  }
}

void through_a_pointer(int steps) {
  for (int s = 0; s < steps; ++s) {
#pragma omp target map(to: h) map(tofrom: total)
    for (int i = 0; i < N; ++i) total += h[i];
#pragma omp target map(tofrom: h_alias[0:N])
    for (int i = 0; i < N; ++i) h_alias[i] += 1;
  }
}

void firstprivate_reader(int steps) {
  for (int s = 0; s < steps; ++s) {
#pragma omp target map(tofrom: q)
    for (int i = 0; i < 16; ++i) q[i] += i;
#pragma omp target firstprivate(q) map(tofrom: q_sums)
    for (int i = 0; i < 16; ++i) q_sums[s] += q[i];
  }
}

void straight_run(void) {
#pragma omp target teams distribute parallel for map(tofrom: r)
  for (int i = 0; i < N; ++i) r[i] += i;
#pragma omp target teams distribute parallel for map(tofrom: r)
  for (int i = 0; i < N; ++i) r[i] *= 3;
#pragma omp target teams distribute parallel for map(tofrom: r)
  for (int i = 0; i < N; ++i) r[i] -= 1;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 4;
  for (int i = 0; i < N; ++i) a[i] = d[i] = e[i] = (float)(i % 13), b[i] = c[i] = f[i] = 1.0f;
  hoisted(steps);
  float seen = host_reads(steps);
  writes_to_only(steps);
  device_only_writes(steps);
  through_a_pointer(steps);
  firstprivate_reader(steps);
  straight_run();
  double sum = 0;
  for (int i = 0; i < N; ++i) sum += b[i] + 2 * c[i] + 3 * f[i];
  printf("%.6e %.6e %d %d %ld %d %d %d\n", seen, sum, first[steps - 1], g[0], total, h[0], r[N - 1], q_sums[steps - 1]);
  return 0;
}
