// OpenMP target version of the SpMV family: a power iteration over a CSR matrix, the matrix mapped for every
// product, the vector normalized on the host between products.
#include <math.h>

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
