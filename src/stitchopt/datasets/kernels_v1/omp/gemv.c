// OpenMP target version of the gemv family: y = A x then x = A^T y repeated, each product a target region that
// maps the matrix again, the vectors scaled on the host between products.
#include <stdio.h>
#define ROWS 1024
#define COLUMNS 768
#define STEPS 6

static float a[ROWS * COLUMNS], x[COLUMNS], y[ROWS];

void gemv(void) {
#pragma omp target teams distribute parallel for map(to: a, x) map(from: y)
  for (int r = 0; r < ROWS; ++r) {
    float sum = 0.0f;
    for (int c = 0; c < COLUMNS; ++c) sum += a[r * COLUMNS + c] * x[c];
    y[r] = sum;
  }
}

void gemv_transposed(void) {
#pragma omp target teams distribute parallel for map(to: a, y) map(from: x)
  for (int c = 0; c < COLUMNS; ++c) {
    float sum = 0.0f;
    for (int r = 0; r < ROWS; ++r) sum += a[r * COLUMNS + c] * y[r];
    x[c] = sum;
  }
}

int main(void) {
  for (int i = 0; i < ROWS * COLUMNS; ++i) a[i] = (float)((i * 131) % 97) / 97.0f - 0.5f;
  for (int c = 0; c < COLUMNS; ++c) x[c] = 1.0f;
  for (int step = 0; step < STEPS; ++step) {
    gemv();
    gemv_transposed();
    float largest = 0.0f;
    for (int c = 0; c < COLUMNS; ++c) largest = x[c] > largest ? x[c] : -x[c] > largest ? -x[c] : largest;
    for (int c = 0; c < COLUMNS; ++c) x[c] /= largest;
  }
  double check = 0;
  for (int c = 0; c < COLUMNS; ++c) check += (double)x[c] * (c % 5 + 1);
  printf("%.6e\n", check);
  return 0;
}
