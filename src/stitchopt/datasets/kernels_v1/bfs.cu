// Breadth-first search on a CSR graph: a level-synchronous top-down step over a frontier queue and a
// bottom-up step over unvisited vertices.
__global__ void bfs_top_down(const int *row_ptr, const int *cols, const int *frontier, int frontier_size, int *levels,
                             int level, int *next, int *next_size) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= frontier_size) return;
  int v = frontier[i];
  for (int k = row_ptr[v]; k < row_ptr[v + 1]; ++k) {
    int u = cols[k];
    if (atomicCAS(&levels[u], -1, level + 1) == -1) next[atomicAdd(next_size, 1)] = u;
  }
}

__global__ void bfs_bottom_up(const int *row_ptr, const int *cols, int vertices, int *levels, int level, int *changed) {
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= vertices || levels[v] != -1) return;
  for (int k = row_ptr[v]; k < row_ptr[v + 1]; ++k) {
    if (levels[cols[k]] == level) {
      levels[v] = level + 1;
      *changed = 1;
      return;
    }
  }
}
