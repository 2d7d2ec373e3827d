// Image filters: a separable Gaussian blur (row and column passes), a Sobel edge magnitude and RGB to grey.
__constant__ float weights[9] = {0.0162f, 0.0540f, 0.1216f, 0.1945f, 0.2270f, 0.1945f, 0.1216f, 0.0540f, 0.0162f};

__global__ void blur_rows(const float *in, float *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float s = 0.0f;
  for (int d = -4; d <= 4; ++d) {
    int xx = min(max(x + d, 0), w - 1);
    s += weights[d + 4] * in[y * w + xx];
  }
  out[y * w + x] = s;
}

__global__ void blur_columns(const float *in, float *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float s = 0.0f;
  for (int d = -4; d <= 4; ++d) {
    int yy = min(max(y + d, 0), h - 1);
    s += weights[d + 4] * in[yy * w + x];
  }
  out[y * w + x] = s;
}

__global__ void sobel(const unsigned char *in, unsigned char *out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= w - 1 || y >= h - 1) return;
  const unsigned char *p = in + y * w + x;
  int gx = -p[-w - 1] - 2 * p[-1] - p[w - 1] + p[-w + 1] + 2 * p[1] + p[w + 1];
  int gy = -p[-w - 1] - 2 * p[-w] - p[-w + 1] + p[w - 1] + 2 * p[w] + p[w + 1];
  float m = sqrtf((float)(gx * gx + gy * gy));
  out[y * w + x] = (unsigned char)fminf(m, 255.0f);
}

__global__ void rgb_to_grey(const uchar3 *rgb, unsigned char *grey, int pixels) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  uchar3 c = rgb[i];
  grey[i] = (unsigned char)(0.299f * c.x + 0.587f * c.y + 0.114f * c.z + 0.5f);
}
