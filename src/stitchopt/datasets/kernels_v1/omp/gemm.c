// OpenMP target version of the GEMM family: powers of a matrix, each step a product (c = a * b) and a rescaled
// copy back (b = c / n), two target regions that map the matrices again.
#include <stdio.h>
#define N 192
#define POWER 4

static float a[N * N], b[N * N], c[N * N];

void matrix_power(void) {
  for (int p = 0; p < POWER; ++p) {
#pragma omp target teams distribute parallel for collapse(2) map(to: a, b) map(from: c)
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        float sum = 0;
        for (int k = 0; k < N; ++k) sum += a[i * N + k] * b[k * N + j];
        c[i * N + j] = sum;
      }
#pragma omp target teams distribute parallel for map(to: c) map(from: b)
    for (int i = 0; i < N * N; ++i) b[i] = c[i] / N;
  }
}

int main(void) {
  for (int i = 0; i < N * N; ++i) a[i] = b[i] = (float)(i % 17) / 16.0f;
  matrix_power();
  double check = 0;
  for (int i = 0; i < N * N; ++i) check += (double)b[i] * (i % 3 + 1);
  printf("%.6e\n", check);
  return 0;
}
