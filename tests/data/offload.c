// OpenMP target offload: a target region with array sections (sized at run time), a data region around
// a loop of target regions (constant sizes) and an update inside it, and unstructured data mapping (enter
// data with alloc, an update to the device, exit data with release).
#define N 4096
float grid[N], out[N];
void saxpy(int n, float a, const float *x, float *y) {
#pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: y[0:n])
  for (int i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
void smooth(int steps) {
#pragma omp target data map(tofrom: grid) map(alloc: out)
  for (int s = 0; s < steps; ++s) {
#pragma omp target teams distribute parallel for
    for (int i = 1; i < N - 1; ++i) out[i] = (grid[i - 1] + grid[i] + grid[i + 1]) / 3;
#pragma omp target update from(out[0:16])
  }
}

void resident(float *p, int n) {
#pragma omp target enter data map(alloc: p[0:n])
#pragma omp target update to(p[0:n])
#pragma omp target exit data map(release: p[0:n])
}
