// OpenMP target version of the convolution family: a signal smoothed by a 17-tap filter several times, then an
// image filtered by a 5x5 kernel, each a target region that maps its input, filter and output.
#include <stdio.h>
#define N (1 << 16)
#define TAPS 17
#define W 512
#define H 256
#define PASSES 4

static float signal[N], smoothed[N], taps[TAPS], image[W * H], filtered[W * H], filter[25];

void conv1d(void) {
#pragma omp target teams distribute parallel for map(to: signal, taps) map(from: smoothed)
  for (int i = 0; i < N; ++i) {
    float sum = 0.0f;
    for (int k = 0; k < TAPS; ++k) {
      int j = i + k - TAPS / 2;
      if (j >= 0 && j < N) sum += taps[k] * signal[j];
    }
    smoothed[i] = sum;
  }
}

void conv2d(void) {
#pragma omp target teams distribute parallel for collapse(2) map(to: image, filter) map(from: filtered)
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      float sum = 0.0f;
      for (int dy = -2; dy <= 2; ++dy)
        for (int dx = -2; dx <= 2; ++dx) {
          int xx = x + dx < 0 ? 0 : x + dx >= W ? W - 1 : x + dx;
          int yy = y + dy < 0 ? 0 : y + dy >= H ? H - 1 : y + dy;
          sum += filter[(dy + 2) * 5 + dx + 2] * image[yy * W + xx];
        }
      filtered[y * W + x] = sum;
    }
}

int main(void) {
  for (int i = 0; i < N; ++i) signal[i] = (float)((i * 53) % 211) / 211.0f;
  for (int k = 0; k < TAPS; ++k) taps[k] = 1.0f / TAPS;
  for (int i = 0; i < W * H; ++i) image[i] = (float)((i * 29) % 255);
  for (int k = 0; k < 25; ++k) filter[k] = (k % 2 ? 1.0f : 2.0f) / 37.0f;
  for (int pass = 0; pass < PASSES; ++pass) {
    conv1d();
    for (int i = 0; i < N; ++i) signal[i] = smoothed[i];
  }
  conv2d();
  double check = 0;
  for (int i = 0; i < N; ++i) check += (double)signal[i] * (i % 5 + 1);
  for (int i = 0; i < W * H; ++i) check += (double)filtered[i] * (i % 3 + 1);
  printf("%.6e\n", check);
  return 0;
}
