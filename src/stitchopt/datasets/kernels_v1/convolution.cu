// Convolutions: a 1-D filter of any width from global memory, a 1-D filter of 17 taps in constant memory with
// its halo staged in shared memory, and a 2-D 5x5 filter with clamped borders.
#define TAPS 17
#define RADIUS (TAPS / 2)
__constant__ float taps[TAPS] = {0.01f, 0.02f, 0.03f, 0.05f, 0.07f, 0.08f, 0.09f, 0.1f, 0.1f,
                                   0.1f,  0.09f, 0.08f, 0.07f, 0.05f, 0.03f, 0.02f, 0.01f};

__global__ void conv1d(const float *in, const float *filter, float *out, int n, int width) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int k = 0; k < width; ++k) {
    int j = i + k - width / 2;
    if (j >= 0 && j < n) sum += filter[k] * in[j];
  }
  out[i] = sum;
}

__global__ void conv1d_tiled(const float *in, float *out, int n) {
  extern __shared__ float window[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = threadIdx.x; j < blockDim.x + 2 * RADIUS; j += blockDim.x) {
    int source = blockIdx.x * blockDim.x + j - RADIUS;
    window[j] = source >= 0 && source < n ? in[source] : 0.0f;
  }
  __syncthreads();
  if (i >= n) return;
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < TAPS; ++k) sum += taps[k] * window[threadIdx.x + k];
  out[i] = sum;
}

__global__ void conv2d_5x5(const float *in, const float *filter, float *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float sum = 0.0f;
  for (int dy = -2; dy <= 2; ++dy)
    for (int dx = -2; dx <= 2; ++dx) {
      int xx = min(max(x + dx, 0), w - 1), yy = min(max(y + dy, 0), h - 1);
      sum += filter[(dy + 2) * 5 + dx + 2] * in[yy * w + xx];
    }
  out[y * w + x] = sum;
}
