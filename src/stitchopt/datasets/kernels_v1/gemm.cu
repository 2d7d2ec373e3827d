// Dense matrix products: naive, shared-memory tiled, and a register-blocked variant (4 outputs per thread).
#define T 16

__global__ void gemm_naive(int m, int n, int k, float alpha, const float *a, const float *b, float beta, float *c) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float sum = 0.0f;
  for (int p = 0; p < k; ++p) sum += a[row * k + p] * b[p * n + col];
  c[row * n + col] = alpha * sum + beta * c[row * n + col];
}

__global__ void gemm_tiled(int m, int n, int k, const float *a, const float *b, float *c) {
  __shared__ float as[T][T], bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float sum = 0.0f;
  for (int p0 = 0; p0 < k; p0 += T) {
    as[ty][tx] = (row < m && p0 + tx < k) ? a[row * k + p0 + tx] : 0.0f;
    bs[ty][tx] = (col < n && p0 + ty < k) ? b[(p0 + ty) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < T; ++p) sum += as[ty][p] * bs[p][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = sum;
}

__global__ void gemm_register4(int m, int n, int k, const double *a, const double *b, double *c) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (row >= m) return;
  double acc[4] = {0, 0, 0, 0};
  for (int p = 0; p < k; ++p) {
    double av = a[row * k + p];
    for (int j = 0; j < 4; ++j)
      if (col + j < n) acc[j] += av * b[p * n + col + j];
  }
  for (int j = 0; j < 4; ++j)
    if (col + j < n) c[row * n + col + j] = acc[j];
}
