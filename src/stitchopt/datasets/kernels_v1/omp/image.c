// OpenMP target version of the image family: repeated box blurs, each a row pass and a column pass through a
// scratch image, two target regions that map the image and the scratch again.
#include <stdio.h>
#define W 512
#define H 384
#define PASSES 5

static float image[W * H], scratch[W * H];

void blur(void) {
  for (int pass = 0; pass < PASSES; ++pass) {
#pragma omp target teams distribute parallel for collapse(2) map(to: image) map(from: scratch)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        float left = image[y * W + (x > 0 ? x - 1 : x)], right = image[y * W + (x < W - 1 ? x + 1 : x)];
        scratch[y * W + x] = (left + image[y * W + x] + right) / 3;
      }
#pragma omp target teams distribute parallel for collapse(2) map(to: scratch) map(from: image)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        float up = scratch[(y > 0 ? y - 1 : y) * W + x], down = scratch[(y < H - 1 ? y + 1 : y) * W + x];
        image[y * W + x] = (up + scratch[y * W + x] + down) / 3;
      }
  }
}

int main(void) {
  for (int i = 0; i < W * H; ++i) image[i] = (float)((i * 37) % 255);
  blur();
  double check = 0;
  for (int i = 0; i < W * H; ++i) check += (double)image[i] * (i % 5 + 1);
  printf("%.6e\n", check);
  return 0;
}
