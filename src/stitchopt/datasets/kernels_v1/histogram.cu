// Histograms: global atomics, per-block privatized bins in shared memory, and a byte histogram of text.
#define BINS 256

__global__ void histogram_global(const unsigned char *data, int n, unsigned *bins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomicAdd(&bins[data[i]], 1u);
}

__global__ void histogram_shared(const unsigned char *data, int n, unsigned *bins) {
  __shared__ unsigned local[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < BINS; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

__global__ void histogram_float(const float *values, int n, float lo, float hi, int nbins, unsigned *bins) {
  float scale = nbins / (hi - lo);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    int b = (int)((values[i] - lo) * scale);
    b = b < 0 ? 0 : (b >= nbins ? nbins - 1 : b);
    atomicAdd(&bins[b], 1u);
  }
}
