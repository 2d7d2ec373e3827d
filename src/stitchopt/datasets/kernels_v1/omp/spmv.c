// OpenMP target version of the SpMV family: a power iteration over a CSR matrix, the matrix mapped for every
// product, the vector normalized on the host between products; main runs it on a random sparse matrix.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void spmv(int rows, int nnz, const int *row_ptr, const int *cols, const float *vals, const float *x, float *y) {
#pragma omp target teams distribute parallel for map(to: row_ptr[0:rows + 1], cols[0:nnz], vals[0:nnz], x[0:rows]) map(from: y[0:rows])
  for (int r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (int k = row_ptr[r]; k < row_ptr[r + 1]; ++k) sum += vals[k] * x[cols[k]];
    y[r] = sum;
  }
}

float power_iteration(int rows, int nnz, const int *row_ptr, const int *cols, const float *vals, float *x, float *y,
                      int steps) {
  float norm = 0.0f;
  for (int s = 0; s < steps; ++s) {
    spmv(rows, nnz, row_ptr, cols, vals, x, y);
    norm = 0.0f;
    for (int r = 0; r < rows; ++r) norm += y[r] * y[r];
    norm = sqrtf(norm);
    for (int r = 0; r < rows; ++r) x[r] = y[r] / norm;
  }
  return norm;
}

int main(void) {
  enum { ROWS = 1 << 14, PER_ROW = 16, STEPS = 8 };
  int *row_ptr = malloc((ROWS + 1) * sizeof(int)), *cols = malloc(ROWS * PER_ROW * sizeof(int));
  float *vals = malloc(ROWS * PER_ROW * sizeof(float)), *x = malloc(ROWS * sizeof(float));
  float *y = malloc(ROWS * sizeof(float));
  unsigned state = 12345;
  for (int r = 0; r <= ROWS; ++r) row_ptr[r] = r * PER_ROW;
  for (int k = 0; k < ROWS * PER_ROW; ++k) {
    state = state * 1664525u + 1013904223u;
    cols[k] = (int)(state >> 8) % ROWS;
    vals[k] = (float)((state >> 4) % 1000) / 1000.0f;
  }
  for (int r = 0; r < ROWS; ++r) x[r] = 1.0f;
  float norm = power_iteration(ROWS, ROWS * PER_ROW, row_ptr, cols, vals, x, y, STEPS);
  double sum = 0;
  for (int r = 0; r < ROWS; ++r) sum += x[r] * (r % 5 + 1);
  printf("norm %.6e checksum %.6e\n", norm, sum);
  free(row_ptr), free(cols), free(vals), free(x), free(y);
  return 0;
}
