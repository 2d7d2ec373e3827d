// Stencils: a 5-point Jacobi step on a 2D grid and a 7-point 3D Laplacian, with a shared-memory tile variant.
#define TILE 16

__global__ void jacobi2d(const float *in, float *out, int nx, int ny) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x <= 0 || y <= 0 || x >= nx - 1 || y >= ny - 1) return;
  int i = y * nx + x;
  out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);
}

__global__ void jacobi2d_tiled(const float *in, float *out, int nx, int ny) {
  __shared__ float tile[TILE + 2][TILE + 2];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x = blockIdx.x * TILE + tx, y = blockIdx.y * TILE + ty;
  bool inside = x < nx && y < ny;
  tile[ty + 1][tx + 1] = inside ? in[y * nx + x] : 0.0f;
  if (tx == 0) tile[ty + 1][0] = (x > 0 && y < ny) ? in[y * nx + x - 1] : 0.0f;
  if (tx == TILE - 1) tile[ty + 1][TILE + 1] = (x + 1 < nx && y < ny) ? in[y * nx + x + 1] : 0.0f;
  if (ty == 0) tile[0][tx + 1] = (y > 0 && x < nx) ? in[(y - 1) * nx + x] : 0.0f;
  if (ty == TILE - 1) tile[TILE + 1][tx + 1] = (y + 1 < ny && x < nx) ? in[(y + 1) * nx + x] : 0.0f;
  __syncthreads();
  if (x <= 0 || y <= 0 || x >= nx - 1 || y >= ny - 1) return;
  out[y * nx + x] = 0.2f * (tile[ty + 1][tx + 1] + tile[ty + 1][tx] + tile[ty + 1][tx + 2] + tile[ty][tx + 1] +
                            tile[ty + 2][tx + 1]);
}

__global__ void laplace3d(const double *u, double *v, int n, double h2inv) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int j = blockIdx.y * blockDim.y + threadIdx.y;
  if (i <= 0 || j <= 0 || i >= n - 1 || j >= n - 1) return;
  for (int k = 1; k < n - 1; ++k) {
    long c = ((long)k * n + j) * n + i;
    v[c] = h2inv * (u[c - 1] + u[c + 1] + u[c - n] + u[c + n] + u[c - (long)n * n] + u[c + (long)n * n] - 6.0 * u[c]);
  }
}
