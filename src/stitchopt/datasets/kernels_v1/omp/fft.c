// OpenMP target version of the FFT family: an iterative radix-2 FFT of 2^14 complex points, the bit reversal and
// each butterfly stage a target region that maps the signal again; main prints the spectrum's energy.
#include <math.h>
#include <stdio.h>
#define LOG2N 14
#define N (1 << LOG2N)

static float re[N], im[N], out_re[N], out_im[N];

void bit_reverse(void) {
#pragma omp target teams distribute parallel for map(to: re, im) map(from: out_re, out_im)
  for (int i = 0; i < N; ++i) {
    int j = 0;
    for (int b = 0; b < LOG2N; ++b) j |= ((i >> b) & 1) << (LOG2N - 1 - b);
    out_re[j] = re[i];
    out_im[j] = im[i];
  }
}

void stage(int half) {
#pragma omp target teams distribute parallel for map(tofrom: out_re, out_im)
  for (int t = 0; t < N / 2; ++t) {
    int k = t % half, a = (t / half) * 2 * half + k, b = a + half;
    float angle = -3.14159265f * (float)k / (float)half, c = cosf(angle), s = sinf(angle);
    float wr = out_re[b] * c - out_im[b] * s, wi = out_re[b] * s + out_im[b] * c;
    out_re[b] = out_re[a] - wr, out_im[b] = out_im[a] - wi;
    out_re[a] += wr, out_im[a] += wi;
  }
}

int main(void) {
  for (int i = 0; i < N; ++i) re[i] = (float)((i * 37) % 101) / 101.0f, im[i] = 0.0f;
  bit_reverse();
  for (int half = 1; half < N; half *= 2) stage(half);
  double energy = 0, check = 0;
  for (int i = 0; i < N; ++i) {
    energy += (double)out_re[i] * out_re[i] + (double)out_im[i] * out_im[i];
    check += fabs((double)out_re[i]) * (i % 3 + 1);
  }
  printf("energy %.4e checksum %.4e\n", energy, check);
  return 0;
}
