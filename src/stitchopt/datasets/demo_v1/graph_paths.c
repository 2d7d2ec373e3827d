/* demo-v1: CSR graphs with BFS, heap-based Dijkstra, Bellman-Ford, Floyd-Warshall and topological DAG paths */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INF INT64_MAX

typedef struct { int from, to, w; } edge;

typedef struct {
    int n, m;
    int *offset; /* n + 1 entries */
    int *target;
    int *weight;
} graph;

static bool graph_build(graph *g, int n, const edge *edges, int m)
{
    g->n = n;
    g->m = m;
    g->offset = calloc((size_t)n + 1, sizeof(int));
    g->target = malloc((size_t)m * sizeof(int) + 1);
    g->weight = malloc((size_t)m * sizeof(int) + 1);
    if (!g->offset || !g->target || !g->weight) return false;
    for (int i = 0; i < m; i++) g->offset[edges[i].from + 1]++;
    for (int v = 0; v < n; v++) g->offset[v + 1] += g->offset[v];
    int *fill = malloc((size_t)n * sizeof(int) + 1);
    if (!fill) return false;
    memcpy(fill, g->offset, (size_t)n * sizeof(int));
    for (int i = 0; i < m; i++) {
        int slot = fill[edges[i].from]++;
        g->target[slot] = edges[i].to;
        g->weight[slot] = edges[i].w;
    }
    free(fill);
    return true;
}

static void graph_free(graph *g)
{
    free(g->offset);
    free(g->target);
    free(g->weight);
}

/* ---- binary min-heap of (dist, node) ---- */

typedef struct { int64_t d; int v; } heap_item;
typedef struct { heap_item *a; int n, cap; } min_heap;

static void heap_push(min_heap *h, int64_t d, int v)
{
    int i = h->n++;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (h->a[p].d <= d) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = (heap_item){d, v};
}

static heap_item heap_pop(min_heap *h)
{
    heap_item top = h->a[0], last = h->a[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->a[c + 1].d < h->a[c].d) c++;
        if (last.d <= h->a[c].d) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n > 0) h->a[i] = last;
    return top;
}

void dijkstra(const graph *g, int src, int64_t *dist, int *pred)
{
    min_heap h = {malloc(((size_t)g->m + 1) * sizeof(heap_item)), 0, g->m + 1};
    for (int v = 0; v < g->n; v++) { dist[v] = INF; pred[v] = -1; }
    dist[src] = 0;
    heap_push(&h, 0, src);
    while (h.n > 0) {
        heap_item it = heap_pop(&h);
        if (it.d != dist[it.v]) continue; /* stale entry */
        for (int e = g->offset[it.v]; e < g->offset[it.v + 1]; e++) {
            int t = g->target[e];
            int64_t nd = it.d + g->weight[e];
            if (nd < dist[t]) {
                dist[t] = nd;
                pred[t] = it.v;
                heap_push(&h, nd, t); /* at most one push per relaxed edge */
            }
        }
    }
    free(h.a);
}

static void bellman_ford(int n, const edge *edges, int m, int src, int64_t *dist)
{
    for (int v = 0; v < n; v++) dist[v] = INF;
    dist[src] = 0;
    for (int round = 0; round < n - 1; round++) {
        bool changed = false;
        for (int i = 0; i < m; i++) {
            if (dist[edges[i].from] == INF) continue;
            int64_t nd = dist[edges[i].from] + edges[i].w;
            if (nd < dist[edges[i].to]) { dist[edges[i].to] = nd; changed = true; }
        }
        if (!changed) break;
    }
}

int bfs_hops(const graph *g, int src, int *hops)
{
    int *queue = malloc((size_t)g->n * sizeof(int));
    int head = 0, tail = 0, reached = 0;
    for (int v = 0; v < g->n; v++) hops[v] = -1;
    hops[src] = 0;
    queue[tail++] = src;
    while (head < tail) {
        int u = queue[head++];
        reached++;
        for (int e = g->offset[u]; e < g->offset[u + 1]; e++) {
            int t = g->target[e];
            if (hops[t] < 0) { hops[t] = hops[u] + 1; queue[tail++] = t; }
        }
    }
    free(queue);
    return reached;
}

static void floyd_warshall(int n, const edge *edges, int m, int64_t *d)
{
    for (int i = 0; i < n * n; i++) d[i] = INF;
    for (int i = 0; i < n; i++) d[i * n + i] = 0;
    for (int i = 0; i < m; i++)
        if (edges[i].w < d[edges[i].from * n + edges[i].to]) d[edges[i].from * n + edges[i].to] = edges[i].w;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < n; i++) {
            if (d[i * n + k] == INF) continue;
            for (int j = 0; j < n; j++)
                if (d[k * n + j] != INF && d[i * n + k] + d[k * n + j] < d[i * n + j])
                    d[i * n + j] = d[i * n + k] + d[k * n + j];
        }
}

/* Kahn's algorithm; returns number of nodes ordered (n if acyclic) */
static int topo_sort(const graph *g, int *order)
{
    int *indeg = calloc((size_t)g->n, sizeof(int));
    int head = 0, tail = 0;
    for (int e = 0; e < g->m; e++) indeg[g->target[e]]++;
    for (int v = 0; v < g->n; v++) if (indeg[v] == 0) order[tail++] = v;
    while (head < tail) {
        int u = order[head++];
        for (int e = g->offset[u]; e < g->offset[u + 1]; e++)
            if (--indeg[g->target[e]] == 0) order[tail++] = g->target[e];
    }
    free(indeg);
    return tail;
}

static int path_length(const int *pred, int dst, int *path, int cap)
{
    int n = 0;
    for (int v = dst; v >= 0 && n < cap; v = pred[v]) path[n++] = v;
    for (int i = 0; i < n / 2; i++) { int t = path[i]; path[i] = path[n - 1 - i]; path[n - 1 - i] = t; }
    return n;
}

#define BIG_N 500
#define BIG_M 3000

int main(void)
{
    enum { A, B, C, D, E, F, G, H, NSMALL };
    static const edge small[] = {
        {A, B, 4}, {A, C, 2}, {C, B, 1}, {B, D, 5}, {C, D, 8}, {C, E, 10}, {D, E, 2},
        {D, F, 6}, {E, F, 2}, {F, G, 1}, {E, G, 7}, {G, H, 3}, {H, A, 1}, {B, H, 20},
    };
    static const int64_t want_dist[NSMALL] = {0, 3, 2, 8, 10, 12, 13, 16};
    static const int want_hops[NSMALL] = {0, 1, 1, 2, 2, 3, 3, 2};
    static const int want_path[] = {A, C, B, D, E, F, G, H};
    int nsmall_e = (int)(sizeof small / sizeof small[0]);
    int failures = 0;
    graph g;
    int64_t dist[BIG_N], ref[BIG_N];
    int pred[BIG_N], hops[BIG_N], path[BIG_N];

    if (!graph_build(&g, NSMALL, small, nsmall_e)) return 2;
    dijkstra(&g, A, dist, pred);
    bfs_hops(&g, A, hops);
    for (int v = 0; v < NSMALL; v++)
        if (dist[v] != want_dist[v] || hops[v] != want_hops[v]) failures++;
    int plen = path_length(pred, H, path, BIG_N);
    if (plen != 8 || memcmp(path, want_path, sizeof want_path) != 0) failures++;

    static int64_t fw[NSMALL * NSMALL];
    floyd_warshall(NSMALL, small, nsmall_e, fw);
    for (int s = 0; s < NSMALL; s++) {
        dijkstra(&g, s, dist, pred);
        for (int v = 0; v < NSMALL; v++) if (fw[s * NSMALL + v] != dist[v]) failures++;
    }
    int order[BIG_N];
    if (topo_sort(&g, order) == NSMALL) failures++; /* H->A closes a cycle */
    graph_free(&g);

    /* larger random graph: Dijkstra vs Bellman-Ford from several sources */
    static edge big[BIG_M];
    uint32_t s = 123456789u;
    for (int i = 0; i < BIG_M; i++) {
        s = s * 1664525u + 1013904223u;
        big[i].from = (int)((s >> 8) % BIG_N);
        s = s * 1664525u + 1013904223u;
        big[i].to = (int)((s >> 8) % BIG_N);
        big[i].w = 1 + (int)((s >> 24) % 100);
    }
    if (!graph_build(&g, BIG_N, big, BIG_M)) return 2;
    long checksum = 0;
    for (int src = 0; src < BIG_N; src += 97) {
        dijkstra(&g, src, dist, pred);
        bellman_ford(BIG_N, big, BIG_M, src, ref);
        int reached = bfs_hops(&g, src, hops);
        int finite = 0;
        for (int v = 0; v < BIG_N; v++) {
            if (dist[v] != ref[v]) failures++;
            if ((hops[v] >= 0) != (dist[v] != INF)) failures++;
            if (dist[v] != INF) { finite++; checksum += (long)dist[v]; }
        }
        if (finite != reached) failures++;
        /* every predecessor edge must be tight */
        for (int v = 0; v < BIG_N; v++) {
            if (pred[v] < 0) continue;
            bool tight = false;
            for (int e = g.offset[pred[v]]; e < g.offset[pred[v] + 1]; e++)
                if (g.target[e] == v && dist[pred[v]] + g.weight[e] == dist[v]) tight = true;
            if (!tight) failures++;
        }
    }
    graph_free(&g);

    /* DAG (edges only go from lower to higher index): topological DP equals Dijkstra */
    for (int i = 0; i < BIG_M; i++) {
        if (big[i].from > big[i].to) { int t = big[i].from; big[i].from = big[i].to; big[i].to = t; }
        if (big[i].from == big[i].to) {
            big[i].from = 0;
            if (big[i].to == 0) big[i].to = 1;
        }
    }
    if (!graph_build(&g, BIG_N, big, BIG_M)) return 2;
    if (topo_sort(&g, order) != BIG_N) failures++;
    int64_t dp[BIG_N];
    for (int v = 0; v < BIG_N; v++) dp[v] = INF;
    dp[0] = 0;
    for (int i = 0; i < BIG_N; i++) {
        int u = order[i];
        if (dp[u] == INF) continue;
        for (int e = g.offset[u]; e < g.offset[u + 1]; e++)
            if (dp[u] + g.weight[e] < dp[g.target[e]]) dp[g.target[e]] = dp[u] + g.weight[e];
    }
    dijkstra(&g, 0, dist, pred);
    for (int v = 0; v < BIG_N; v++) if (dp[v] != dist[v]) failures++;
    graph_free(&g);

    printf("graph_paths: distance checksum %ld, %d failures\n", checksum, failures);
    return failures == 0 ? 0 : 1;
}
