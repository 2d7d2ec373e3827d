// Reductions: a tree in shared memory, a warp-shuffle sum, and an arg-max with a grid-stride loop.
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void sum_tree(const float *in, float *partial, int n) {
  extern __shared__ float buf[];
  unsigned t = threadIdx.x;
  float s = 0.0f;
  for (int i = blockIdx.x * blockDim.x * 2 + t; i < n; i += blockDim.x * gridDim.x * 2) {
    s += in[i];
    if (i + blockDim.x < n) s += in[i + blockDim.x];
  }
  buf[t] = s;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (t < w) buf[t] += buf[t + w];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = buf[0];
}

__global__ void sum_shuffle(const float *in, float *out, int n) {
  __shared__ float warps[32];
  float s = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += in[i];
  s = warp_sum(s);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warps[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < (blockDim.x + 31) / 32 ? warps[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) atomicAdd(out, s);
  }
}

__global__ void argmax(const float *in, int n, float *best_value, int *best_index) {
  __shared__ float values[256];
  __shared__ int indices[256];
  float best = -3.4e38f;
  int where = -1;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    if (in[i] > best) { best = in[i]; where = i; }
  values[threadIdx.x] = best;
  indices[threadIdx.x] = where;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w && values[threadIdx.x + w] > values[threadIdx.x]) {
      values[threadIdx.x] = values[threadIdx.x + w];
      indices[threadIdx.x] = indices[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) { best_value[blockIdx.x] = values[0]; best_index[blockIdx.x] = indices[0]; }
}
