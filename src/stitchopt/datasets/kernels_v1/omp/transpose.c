// OpenMP target version of the transpose family: a matrix transposed back and forth, each transpose a target
// region that maps both matrices; main checks the round trip and prints a checksum of one transpose.
#include <stdio.h>
#define ROWS 768
#define COLUMNS 1000
#define ROUNDS 4

static float matrix[ROWS * COLUMNS], transposed[COLUMNS * ROWS];

void transpose(const float *in, float *out, int rows, int columns) {
#pragma omp target teams distribute parallel for collapse(2) map(to: in[0:rows * columns]) map(from: out[0:rows * columns])
  for (int y = 0; y < rows; ++y)
    for (int x = 0; x < columns; ++x) out[x * rows + y] = in[y * columns + x];
}

int main(void) {
  for (int i = 0; i < ROWS * COLUMNS; ++i) matrix[i] = (float)((i * 7919) % 1009) / 16.0f;
  double check = 0;
  for (int round = 0; round < ROUNDS; ++round) {
    transpose(matrix, transposed, ROWS, COLUMNS);
    transpose(transposed, matrix, COLUMNS, ROWS);
  }
  for (int i = 0; i < ROWS * COLUMNS; ++i) check += (double)transposed[i] * (i % 7 + 1);
  int same = 1;
  for (int i = 0; i < ROWS * COLUMNS; ++i) same &= matrix[i] == (float)((i * 7919) % 1009) / 16.0f;
  printf("round trip %s checksum %.6e\n", same ? "ok" : "broken", check);
  return 0;
}
