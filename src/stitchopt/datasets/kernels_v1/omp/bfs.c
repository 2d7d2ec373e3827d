// OpenMP target version of the BFS family: level-synchronous breadth-first search over a CSR graph, one target
// region per level mapping the graph and the levels again; the host resets and reads a `changed` flag around
// every level to decide whether to go on.
#include <stdio.h>
#define NODES (1 << 14)
#define DEGREE 8

static int row_ptr[NODES + 1], cols[NODES * DEGREE], level[NODES];
static int changed;

int bfs(int source) {
  for (int v = 0; v < NODES; ++v) level[v] = -1;
  level[source] = 0;
  int depth = 0;
  do {
    changed = 0;
#pragma omp target teams distribute parallel for map(to: row_ptr, cols) map(tofrom: level, changed)
    for (int v = 0; v < NODES; ++v)
      if (level[v] == depth)
        for (int k = row_ptr[v]; k < row_ptr[v + 1]; ++k)
          if (level[cols[k]] == -1) {  // every writer writes the same value
            level[cols[k]] = depth + 1;
            changed = 1;
          }
    ++depth;
  } while (changed);
  return depth;
}

int main(void) {
  unsigned state = 88172645u;
  for (int v = 0; v <= NODES; ++v) row_ptr[v] = v * DEGREE;
  for (int k = 0; k < NODES * DEGREE; ++k) {
    state = state * 1103515245u + 12345u;
    cols[k] = k % DEGREE == 0 ? (k / DEGREE + 1) % NODES : (int)(state >> 9) % NODES;
  }
  int depth = bfs(0);
  long long sum = 0;
  for (int v = 0; v < NODES; ++v) sum += (long long)level[v] * (v % 11 + 1);
  printf("depth %d checksum %lld\n", depth, sum);
  return 0;
}
