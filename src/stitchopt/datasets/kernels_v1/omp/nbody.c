// OpenMP target version of the n-body family: forces and a leapfrog step per time step, each a target region
// with its own maps; positions go back to the host every step. main runs a few steps on a lattice.
#include <math.h>
#include <stdio.h>
#define N 2048

static float pos[4 * N], vel[3 * N], acc[3 * N];

static void step(float dt, float soft2) {
#pragma omp target teams distribute parallel for map(to: pos) map(from: acc)
  for (int i = 0; i < N; ++i) {
    float ax = 0, ay = 0, az = 0;
    for (int j = 0; j < N; ++j) {
      float dx = pos[4 * j] - pos[4 * i], dy = pos[4 * j + 1] - pos[4 * i + 1], dz = pos[4 * j + 2] - pos[4 * i + 2];
      float inv = 1.0f / sqrtf(dx * dx + dy * dy + dz * dz + soft2);
      float s = pos[4 * j + 3] * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    acc[3 * i] = ax;
    acc[3 * i + 1] = ay;
    acc[3 * i + 2] = az;
  }
#pragma omp target teams distribute parallel for map(tofrom: pos, vel) map(to: acc)
  for (int i = 0; i < N; ++i)
    for (int d = 0; d < 3; ++d) {
      vel[3 * i + d] += acc[3 * i + d] * dt;
      pos[4 * i + d] += vel[3 * i + d] * dt;
    }
}

void simulate(int steps, float dt) {
  for (int s = 0; s < steps; ++s) step(dt, 1e-3f);
}

int main(void) {
  for (int i = 0; i < N; ++i) {
    pos[4 * i] = (float)(i % 16), pos[4 * i + 1] = (float)(i / 16 % 16), pos[4 * i + 2] = (float)(i / 256);
    pos[4 * i + 3] = 1.0f + (float)(i % 3);
    vel[3 * i] = vel[3 * i + 1] = vel[3 * i + 2] = 0.0f;
  }
  simulate(4, 1e-3f);
  double sum = 0;
  for (int i = 0; i < 4 * N; ++i) sum += (double)pos[i] * (i % 7 + 1);
  printf("%.6e\n", sum);
  return 0;
}
