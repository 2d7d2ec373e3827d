// Sorting: one bitonic merge step over global memory, a block-local bitonic sort in shared memory, and the
// per-digit counting pass of a radix sort.
__global__ void bitonic_step(unsigned *keys, int j, int k) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned partner = i ^ j;
  if (partner <= i) return;
  bool ascending = (i & k) == 0;
  unsigned a = keys[i], b = keys[partner];
  if ((a > b) == ascending) {
    keys[i] = b;
    keys[partner] = a;
  }
}

__global__ void bitonic_block(float *keys) {
  __shared__ float s[512];
  unsigned t = threadIdx.x, base = blockIdx.x * 512;
  s[t] = keys[base + t];
  s[t + 256] = keys[base + t + 256];
  for (unsigned k = 2; k <= 512; k <<= 1) {
    for (unsigned j = k >> 1; j > 0; j >>= 1) {
      __syncthreads();
      unsigned i = 2 * t - (t & (j - 1));
      bool ascending = (i & k) == 0;
      float a = s[i], b = s[i + j];
      if ((a > b) == ascending) {
        s[i] = b;
        s[i + j] = a;
      }
    }
  }
  __syncthreads();
  keys[base + t] = s[t];
  keys[base + t + 256] = s[t + 256];
}

__global__ void radix_count(const unsigned *keys, int n, int shift, unsigned *counts) {
  __shared__ unsigned local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[(keys[i] >> shift) & 15u], 1u);
  __syncthreads();
  if (threadIdx.x < 16) counts[blockIdx.x * 16 + threadIdx.x] = local[threadIdx.x];
}
