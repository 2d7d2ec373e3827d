// OpenMP target version of the softmax family: row softmax of a matrix of logits and each row's cross-entropy
// against its label, two target regions; main prints the mean loss and a checksum of the probabilities.
#include <math.h>
#include <stdio.h>
#define ROWS 2048
#define COLUMNS 500

static float logits[ROWS * COLUMNS], probabilities[ROWS * COLUMNS], loss[ROWS];
static int labels[ROWS];

void softmax(void) {
#pragma omp target teams distribute parallel for map(to: logits) map(from: probabilities)
  for (int r = 0; r < ROWS; ++r) {
    float peak = logits[r * COLUMNS], sum = 0.0f;
    for (int c = 1; c < COLUMNS; ++c) peak = fmaxf(peak, logits[r * COLUMNS + c]);
    for (int c = 0; c < COLUMNS; ++c) sum += expf(logits[r * COLUMNS + c] - peak);
    for (int c = 0; c < COLUMNS; ++c) probabilities[r * COLUMNS + c] = expf(logits[r * COLUMNS + c] - peak) / sum;
  }
}

void cross_entropy(void) {
#pragma omp target teams distribute parallel for map(to: probabilities, labels) map(from: loss)
  for (int r = 0; r < ROWS; ++r) loss[r] = -logf(probabilities[r * COLUMNS + labels[r]] + 1e-12f);
}

int main(void) {
  for (int i = 0; i < ROWS * COLUMNS; ++i) logits[i] = (float)((i * 7) % 113) / 8.0f - 7.0f;
  for (int r = 0; r < ROWS; ++r) labels[r] = (r * 31) % COLUMNS;
  softmax();
  cross_entropy();
  double mean = 0, check = 0;
  for (int r = 0; r < ROWS; ++r) mean += loss[r] / ROWS;
  for (int i = 0; i < ROWS * COLUMNS; i += 7) check += probabilities[i];
  printf("loss %.4e checksum %.4e\n", mean, check);
  return 0;
}
