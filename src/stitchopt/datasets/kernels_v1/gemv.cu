// Matrix-vector products and BLAS-1: a thread per row, a warp per row with shuffles, the transposed product
// (a thread per column, coalesced), and axpy with a grid-stride loop.
__global__ void gemv_rows(int rows, int columns, const float *a, const float *x, float *y) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int c = 0; c < columns; ++c) sum += a[(size_t)row * columns + c] * x[c];
  y[row] = sum;
}

__global__ void gemv_warp(int rows, int columns, const float *a, const float *x, float *y) {
  int lane = threadIdx.x & 31, row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int c = lane; c < columns; c += 32) sum += a[(size_t)row * columns + c] * x[c];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}

__global__ void gemv_transposed(int rows, int columns, const double *a, const double *x, double *y) {
  int column = blockIdx.x * blockDim.x + threadIdx.x;
  if (column >= columns) return;
  double sum = 0.0;
  for (int r = 0; r < rows; ++r) sum += a[(size_t)r * columns + column] * x[r];
  y[column] = sum;
}

__global__ void axpy(int n, float alpha, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] += alpha * x[i];
}
