// Sparse matrix-vector products: CSR with one thread per row, CSR vector (a warp per row), and ELL.
__global__ void spmv_csr_scalar(int rows, const int *row_ptr, const int *cols, const float *vals, const float *x,
                                float *y) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) sum += vals[k] * x[cols[k]];
  y[row] = sum;
}

__global__ void spmv_csr_vector(int rows, const int *row_ptr, const int *cols, const float *vals, const float *x,
                                float *y) {
  int lane = threadIdx.x & 31;
  int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int k = row_ptr[row] + lane; k < row_ptr[row + 1]; k += 32) sum += vals[k] * x[cols[k]];
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}

__global__ void spmv_ell(int rows, int width, const int *cols, const double *vals, const double *x, double *y) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  double sum = 0.0;
  for (int k = 0; k < width; ++k) {
    int c = cols[k * rows + row];
    if (c >= 0) sum += vals[k * rows + row] * x[c];
  }
  y[row] = sum;
}
