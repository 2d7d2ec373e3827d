// Row-wise softmax and its relatives: one block per row (shared-memory max and sum), one warp per row (shuffles,
// log-softmax), and the cross-entropy of each row against its label.
__device__ float block_reduce(float value, float *scratch, bool maximum) {
  scratch[threadIdx.x] = value;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      float other = scratch[threadIdx.x + stride];
      scratch[threadIdx.x] = maximum ? fmaxf(scratch[threadIdx.x], other) : scratch[threadIdx.x] + other;
    }
    __syncthreads();
  }
  float result = scratch[0];
  __syncthreads();
  return result;
}

__global__ void softmax_block(const float *in, float *out, int columns) {
  extern __shared__ float scratch[];
  const float *row = in + (size_t)blockIdx.x * columns;
  float *target = out + (size_t)blockIdx.x * columns;
  float peak = -INFINITY;
  for (int c = threadIdx.x; c < columns; c += blockDim.x) peak = fmaxf(peak, row[c]);
  peak = block_reduce(peak, scratch, true);
  float sum = 0.0f;
  for (int c = threadIdx.x; c < columns; c += blockDim.x) sum += __expf(row[c] - peak);
  sum = block_reduce(sum, scratch, false);
  for (int c = threadIdx.x; c < columns; c += blockDim.x) target[c] = __expf(row[c] - peak) / sum;
}

__global__ void log_softmax_warp(const float *in, float *out, int rows, int columns) {
  int lane = threadIdx.x & 31, r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (r >= rows) return;
  const float *row = in + (size_t)r * columns;
  float peak = -INFINITY, sum = 0.0f;
  for (int c = lane; c < columns; c += 32) peak = fmaxf(peak, row[c]);
  for (int offset = 16; offset > 0; offset >>= 1) peak = fmaxf(peak, __shfl_xor_sync(0xffffffffu, peak, offset));
  for (int c = lane; c < columns; c += 32) sum += expf(row[c] - peak);
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  float shift = peak + logf(sum);
  for (int c = lane; c < columns; c += 32) out[(size_t)r * columns + c] = row[c] - shift;
}

__global__ void cross_entropy(const float *logits, const int *labels, float *loss, int rows, int columns) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *row = logits + (size_t)r * columns;
  float peak = row[0];
  for (int c = 1; c < columns; ++c) peak = fmaxf(peak, row[c]);
  float sum = 0.0f;
  for (int c = 0; c < columns; ++c) sum += expf(row[c] - peak);
  loss[r] = peak + logf(sum) - row[labels[r]];
}
