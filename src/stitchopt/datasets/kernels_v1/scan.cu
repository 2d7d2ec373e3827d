// Prefix sums: a work-efficient (Blelloch) block scan in shared memory and the pass that adds block totals.
__global__ void block_scan(const int *in, int *out, int *block_sums, int n) {
  extern __shared__ int temp[];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x * 2;
  int a = base + t, b = base + t + blockDim.x;
  temp[t] = a < n ? in[a] : 0;
  temp[t + blockDim.x] = b < n ? in[b] : 0;
  int offset = 1;
  for (int d = blockDim.x; d > 0; d >>= 1) {
    __syncthreads();
    if (t < d) {
      int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      temp[bi] += temp[ai];
    }
    offset *= 2;
  }
  if (t == 0) {
    if (block_sums) block_sums[blockIdx.x] = temp[2 * blockDim.x - 1];
    temp[2 * blockDim.x - 1] = 0;
  }
  for (int d = 1; d < 2 * (int)blockDim.x; d *= 2) {
    offset >>= 1;
    __syncthreads();
    if (t < d) {
      int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      int v = temp[ai];
      temp[ai] = temp[bi];
      temp[bi] += v;
    }
  }
  __syncthreads();
  if (a < n) out[a] = temp[t];
  if (b < n) out[b] = temp[t + blockDim.x];
}

__global__ void add_block_sums(int *data, const int *block_sums, int n) {
  int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
  int add = block_sums[blockIdx.x];
  if (i < n) data[i] += add;
  if (i + blockDim.x < n) data[i + blockDim.x] += add;
}
