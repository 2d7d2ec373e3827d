/* demo-v1: union-find (path halving, union by size) driving Kruskal's MST, checked against Prim and DFS */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int *parent;
    int *size;
    int sets;
} dsu;

typedef struct { int u, v, w; } edge;

static bool dsu_init(dsu *d, int n)
{
    d->parent = malloc((size_t)n * sizeof(int));
    d->size = malloc((size_t)n * sizeof(int));
    if (!d->parent || !d->size) return false;
    for (int i = 0; i < n; i++) {
        d->parent[i] = i;
        d->size[i] = 1;
    }
    d->sets = n;
    return true;
}

static void dsu_free(dsu *d)
{
    free(d->parent);
    free(d->size);
}

int dsu_find(dsu *d, int x)
{
    while (d->parent[x] != x) {
        d->parent[x] = d->parent[d->parent[x]];
        x = d->parent[x];
    }
    return x;
}

bool dsu_union(dsu *d, int a, int b)
{
    a = dsu_find(d, a);
    b = dsu_find(d, b);
    if (a == b) return false;
    if (d->size[a] < d->size[b]) { int t = a; a = b; b = t; }
    d->parent[b] = a;
    d->size[a] += d->size[b];
    d->sets--;
    return true;
}

static int cmp_edge(const void *x, const void *y)
{
    const edge *a = x, *b = y;
    if (a->w != b->w) return a->w < b->w ? -1 : 1;
    if (a->u != b->u) return a->u < b->u ? -1 : 1;
    return (a->v > b->v) - (a->v < b->v);
}

/* returns total weight of the minimum spanning forest and number of edges used */
long kruskal(int n, edge *edges, int m, int *used)
{
    dsu d;
    long total = 0;
    *used = 0;
    if (!dsu_init(&d, n)) return -1;
    qsort(edges, (size_t)m, sizeof *edges, cmp_edge);
    for (int i = 0; i < m && d.sets > 1; i++) {
        if (dsu_union(&d, edges[i].u, edges[i].v)) {
            total += edges[i].w;
            (*used)++;
        }
    }
    dsu_free(&d);
    return total;
}

#define INF 0x3fffffff

/* O(V^2) Prim over an adjacency matrix, restarting for each component */
static long prim_forest(int n, const int *adj)
{
    int *best = malloc((size_t)n * sizeof(int));
    bool *in = calloc((size_t)n, sizeof(bool));
    long total = 0;
    if (!best || !in) { free(best); free(in); return -1; }
    for (int i = 0; i < n; i++) best[i] = INF;
    for (int iter = 0; iter < n; iter++) {
        int u = -1;
        for (int i = 0; i < n; i++)
            if (!in[i] && (u < 0 || best[i] < best[u])) u = i;
        if (best[u] != INF) total += best[u];
        in[u] = true;
        for (int v = 0; v < n; v++) {
            int w = adj[u * n + v];
            if (!in[v] && w < best[v]) best[v] = w;
        }
    }
    free(best);
    free(in);
    return total;
}

static int count_components_dfs(int n, const int *adj)
{
    int *stack = malloc((size_t)n * sizeof(int));
    bool *seen = calloc((size_t)n, sizeof(bool));
    int comps = 0;
    if (!stack || !seen) { free(stack); free(seen); return -1; }
    for (int s = 0; s < n; s++) {
        if (seen[s]) continue;
        comps++;
        int top = 0;
        stack[top++] = s;
        seen[s] = true;
        while (top > 0) {
            int u = stack[--top];
            for (int v = 0; v < n; v++)
                if (adj[u * n + v] != INF && !seen[v]) {
                    seen[v] = true;
                    stack[top++] = v;
                }
        }
    }
    free(stack);
    free(seen);
    return comps;
}

#define NV 240
#define NE 600

int main(void)
{
    int failures = 0, used;

    /* small graph with a hand-computed MST of weight 14 */
    edge small[] = {{0, 1, 4}, {0, 2, 3}, {1, 2, 1}, {1, 3, 2}, {2, 3, 4}, {3, 4, 2}, {4, 5, 6}, {3, 5, 7}};
    if (kruskal(6, small, 8, &used) != 14 || used != 5) failures++;

    /* random sparse graph: several components likely */
    static edge edges[NE];
    static int adj[NV * NV];
    for (int i = 0; i < NV * NV; i++) adj[i] = INF;
    uint32_t s = 977u;
    int m = 0;
    while (m < NE) {
        s = s * 1103515245u + 12345u;
        int u = (int)((s >> 8) % NV);
        s = s * 1103515245u + 12345u;
        int v = (int)((s >> 8) % NV);
        int w = 1 + (int)((s >> 20) % 1000);
        if (u == v || adj[u * NV + v] != INF) continue;
        adj[u * NV + v] = adj[v * NV + u] = w;
        edges[m++] = (edge){u, v, w};
    }
    int comps = count_components_dfs(NV, adj);
    long k = kruskal(NV, edges, NE, &used);
    long p = prim_forest(NV, adj);
    if (k != p || used != NV - comps) failures++;

    /* union-find invariants on the final partition */
    dsu d;
    if (!dsu_init(&d, NV)) return 2;
    for (int i = 0; i < NE; i++) dsu_union(&d, edges[i].u, edges[i].v);
    if (d.sets != comps) failures++;
    int total_size = 0;
    for (int i = 0; i < NV; i++)
        if (dsu_find(&d, i) == i) total_size += d.size[i];
    if (total_size != NV) failures++;
    for (int i = 0; i < NE; i++)
        if (dsu_find(&d, edges[i].u) != dsu_find(&d, edges[i].v)) failures++;
    dsu_free(&d);

    /* incremental connectivity on a grid: joining all cells leaves one set */
    enum { W = 30, H = 20 };
    if (!dsu_init(&d, W * H)) return 2;
    int merges = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            if (x + 1 < W) merges += dsu_union(&d, y * W + x, y * W + x + 1);
            if (y + 1 < H) merges += dsu_union(&d, y * W + x, (y + 1) * W + x);
        }
    if (d.sets != 1 || merges != W * H - 1) failures++;
    dsu_free(&d);

    printf("union_find: MST weight %ld over %d components, %d failures\n", k, comps, failures);
    return failures == 0 ? 0 : 1;
}
