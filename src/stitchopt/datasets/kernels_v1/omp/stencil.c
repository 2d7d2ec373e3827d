// OpenMP target version of the stencil family: Jacobi sweeps on a 2D grid, written the way ported code often
// is, each sweep its own target region mapping both grids (every sweep copies them in and out); main checks
// it against the same sweeps inside one data region.
#include <stdio.h>
#define NX 1024
#define NY 1024
#define SWEEPS 8

static float grid[NX * NY], next[NX * NY];

void jacobi_sweep(void) {
#pragma omp target teams distribute parallel for collapse(2) map(to: grid) map(tofrom: next)
  for (int y = 1; y < NY - 1; ++y)
    for (int x = 1; x < NX - 1; ++x) {
      int i = y * NX + x;
      next[i] = 0.2f * (grid[i] + grid[i - 1] + grid[i + 1] + grid[i - NX] + grid[i + NX]);
    }
}

void jacobi(int sweeps) {
  for (int s = 0; s < sweeps; ++s) {
    jacobi_sweep();
#pragma omp target teams distribute parallel for map(tofrom: grid) map(to: next)
    for (int i = 0; i < NX * NY; ++i) grid[i] = next[i];
  }
}

void jacobi_resident(int sweeps) {
#pragma omp target data map(tofrom: grid) map(to: next)
  for (int s = 0; s < sweeps; ++s) {
    jacobi_sweep();
#pragma omp target teams distribute parallel for
    for (int i = 0; i < NX * NY; ++i) grid[i] = next[i];
  }
}

static double checksum(void) {
  double sum = 0;
  for (int i = 0; i < NX * NY; ++i) sum += (double)grid[i] * (i % 7 + 1);
  return sum;
}

int main(void) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < NX * NY; ++i) grid[i] = next[i] = (float)(i % 101 * 7919 % 101);
    if (pass == 0)
      jacobi(SWEEPS);
    else
      jacobi_resident(SWEEPS);
    printf("%s %.6e\n", pass == 0 ? "jacobi" : "jacobi_resident", checksum());
  }
  return 0;
}
