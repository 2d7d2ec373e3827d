// Radix-2 FFT of complex floats: the bit-reversal permutation, one butterfly stage a launch (twiddles from
// sincospif), and a whole 1024-point transform in shared memory, one block per transform.
__global__ void bit_reverse(const float2 *in, float2 *out, int log2n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (1u << log2n)) return;
  out[__brev(i) >> (32 - log2n)] = in[i];
}

__global__ void butterfly_stage(float2 *data, int n, int half) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n / 2) return;
  int group = t / half, k = t % half;
  int a = group * 2 * half + k, b = a + half;
  float s, c;
  sincospif(-(float)k / half, &s, &c);
  float2 u = data[a], v = data[b];
  float2 w = make_float2(v.x * c - v.y * s, v.x * s + v.y * c);
  data[a] = make_float2(u.x + w.x, u.y + w.y);
  data[b] = make_float2(u.x - w.x, u.y - w.y);
}

__global__ void fft1024_shared(float2 *data) {
  __shared__ float2 buffer[1024];
  float2 *signal = data + (size_t)blockIdx.x * 1024;
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) buffer[__brev(i) >> 22] = signal[i];
  for (int half = 1; half < 1024; half *= 2) {
    __syncthreads();
    for (int t = threadIdx.x; t < 512; t += blockDim.x) {
      int k = t % half, a = (t / half) * 2 * half + k, b = a + half;
      float s, c;
      sincospif(-(float)k / half, &s, &c);
      float2 u = buffer[a], v = buffer[b];
      float2 w = make_float2(v.x * c - v.y * s, v.x * s + v.y * c);
      buffer[a] = make_float2(u.x + w.x, u.y + w.y);
      buffer[b] = make_float2(u.x - w.x, u.y - w.y);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) signal[i] = buffer[i];
}
