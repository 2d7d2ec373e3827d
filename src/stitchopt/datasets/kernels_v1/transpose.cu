// Matrix transposes: naive (coalesced reads, strided writes), tiled through shared memory padded against bank
// conflicts, and a batched transpose of many small matrices, one block each.
#define TILE 32

__global__ void transpose_naive(const float *in, float *out, int rows, int columns) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < columns && y < rows) out[x * rows + y] = in[y * columns + x];
}

__global__ void transpose_tiled(const float *in, float *out, int rows, int columns) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += blockDim.y)
    if (x < columns && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * columns + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += blockDim.y)
    if (x < rows && y + j < columns) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

__global__ void transpose_batched(const double *in, double *out, int n) {
  extern __shared__ double square[];
  const double *source = in + (size_t)blockIdx.x * n * n;
  double *target = out + (size_t)blockIdx.x * n * n;
  for (int i = threadIdx.x; i < n * n; i += blockDim.x) square[i] = source[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n * n; i += blockDim.x) target[i] = square[(i % n) * n + i / n];
}
