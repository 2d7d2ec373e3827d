/* demo-v1: integer matrix multiply kernels (naive, ikj, transposed, tiled) cross-checked, plus matrix power */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 50
#define TILE 16

typedef struct {
    int rows, cols;
    int64_t *data;
} matrix;

typedef void (*matmul_fn)(const matrix *a, const matrix *b, matrix *c);

static uint32_t rng_state = 0x2545F491u;

static int32_t small_random(void)
{
    /* xorshift32 mapped into [-50, 50] */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return (int32_t)(rng_state % 101u) - 50;
}

static matrix mat_new(int rows, int cols)
{
    matrix m = {rows, cols, calloc((size_t)rows * (size_t)cols, sizeof(int64_t))};
    return m;
}

static inline int64_t *at(const matrix *m, int r, int c) { return &m->data[(size_t)r * (size_t)m->cols + (size_t)c]; }

static void mat_fill_random(matrix *m)
{
    for (int i = 0; i < m->rows * m->cols; i++)
        m->data[i] = small_random();
}

static void mat_zero(matrix *m) { memset(m->data, 0, (size_t)m->rows * (size_t)m->cols * sizeof(int64_t)); }

void matmul_naive(const matrix *a, const matrix *b, matrix *c)
{
    for (int i = 0; i < a->rows; i++)
        for (int j = 0; j < b->cols; j++) {
            int64_t s = 0;
            for (int k = 0; k < a->cols; k++)
                s += *at(a, i, k) * *at(b, k, j);
            *at(c, i, j) = s;
        }
}

void matmul_ikj(const matrix *a, const matrix *b, matrix *c)
{
    mat_zero(c);
    for (int i = 0; i < a->rows; i++)
        for (int k = 0; k < a->cols; k++) {
            int64_t aik = *at(a, i, k);
            int64_t *crow = at(c, i, 0);
            const int64_t *brow = at(b, k, 0);
            for (int j = 0; j < b->cols; j++)
                crow[j] += aik * brow[j];
        }
}

void matmul_transposed(const matrix *a, const matrix *b, matrix *c)
{
    matrix bt = mat_new(b->cols, b->rows);
    for (int i = 0; i < b->rows; i++)
        for (int j = 0; j < b->cols; j++)
            *at(&bt, j, i) = *at(b, i, j);
    for (int i = 0; i < a->rows; i++) {
        const int64_t *arow = at(a, i, 0);
        for (int j = 0; j < b->cols; j++) {
            const int64_t *btrow = at(&bt, j, 0);
            int64_t s = 0;
            for (int k = 0; k < a->cols; k++)
                s += arow[k] * btrow[k];
            *at(c, i, j) = s;
        }
    }
    free(bt.data);
}

static int imin(int x, int y) { return x < y ? x : y; }

void matmul_tiled(const matrix *a, const matrix *b, matrix *c)
{
    mat_zero(c);
    for (int ii = 0; ii < a->rows; ii += TILE)
        for (int kk = 0; kk < a->cols; kk += TILE)
            for (int jj = 0; jj < b->cols; jj += TILE) {
                int iend = imin(ii + TILE, a->rows);
                int kend = imin(kk + TILE, a->cols);
                int jend = imin(jj + TILE, b->cols);
                for (int i = ii; i < iend; i++)
                    for (int k = kk; k < kend; k++) {
                        int64_t aik = *at(a, i, k);
                        for (int j = jj; j < jend; j++)
                            *at(c, i, j) += aik * *at(b, k, j);
                    }
            }
}

static int mat_equal(const matrix *x, const matrix *y)
{
    return x->rows == y->rows && x->cols == y->cols &&
           memcmp(x->data, y->data, (size_t)x->rows * (size_t)x->cols * sizeof(int64_t)) == 0;
}

static int64_t trace(const matrix *m)
{
    int64_t t = 0;
    for (int i = 0; i < m->rows && i < m->cols; i++)
        t += *at(m, i, i);
    return t;
}

/* 2x2 matrix power over Z/2^64 */
typedef struct { uint64_t m[2][2]; } mat2;

static mat2 mat2_mul(mat2 x, mat2 y)
{
    mat2 r;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            r.m[i][j] = x.m[i][0] * y.m[0][j] + x.m[i][1] * y.m[1][j];
    return r;
}

uint64_t fib_matrix(unsigned n)
{
    mat2 result = {{{1, 0}, {0, 1}}};
    mat2 base = {{{1, 1}, {1, 0}}};
    while (n) {
        if (n & 1u) result = mat2_mul(result, base);
        base = mat2_mul(base, base);
        n >>= 1;
    }
    return result.m[0][1];
}

static uint64_t fib_loop(unsigned n)
{
    uint64_t a = 0, b = 1;
    for (unsigned i = 0; i < n; i++) {
        uint64_t t = a + b;
        a = b;
        b = t;
    }
    return a;
}

int main(void)
{
    static const struct { const char *name; matmul_fn fn; } kernels[] = {
        {"ikj", matmul_ikj}, {"transposed", matmul_transposed}, {"tiled", matmul_tiled},
    };
    int failures = 0;
    matrix a = mat_new(N, N + 3), b = mat_new(N + 3, N - 2);
    matrix ref = mat_new(N, N - 2), out = mat_new(N, N - 2);
    mat_fill_random(&a);
    mat_fill_random(&b);

    matmul_naive(&a, &b, &ref);
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        mat_zero(&out);
        kernels[k].fn(&a, &b, &out);
        if (!mat_equal(&ref, &out)) {
            printf("kernel %s mismatch\n", kernels[k].name);
            failures++;
        }
    }

    /* Freivalds-style check: (AB)x == A(Bx) for a fixed vector x */
    int64_t x[N], bx[N + 3];
    for (int j = 0; j < N - 2; j++) x[j] = (j * 7) % 11 - 5;
    for (int k = 0; k < N + 3; k++) {
        bx[k] = 0;
        for (int j = 0; j < N - 2; j++) bx[k] += *at(&b, k, j) * x[j];
    }
    for (int i = 0; i < N; i++) {
        int64_t lhs = 0, rhs = 0;
        for (int j = 0; j < N - 2; j++) lhs += *at(&ref, i, j) * x[j];
        for (int k = 0; k < N + 3; k++) rhs += *at(&a, i, k) * bx[k];
        if (lhs != rhs) failures++;
    }

    /* trace(S*S^T) equals the sum of squares of S */
    matrix s = mat_new(N, N), st = mat_new(N, N), sst = mat_new(N, N);
    mat_fill_random(&s);
    int64_t sumsq = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            *at(&st, j, i) = *at(&s, i, j);
            sumsq += *at(&s, i, j) * *at(&s, i, j);
        }
    matmul_tiled(&s, &st, &sst);
    if (trace(&sst) != sumsq) failures++;

    /* Fibonacci via matrix power */
    for (unsigned n = 0; n <= 120; n++)
        if (fib_matrix(n) != fib_loop(n)) failures++;
    if (fib_matrix(90) != UINT64_C(2880067194370816120)) failures++;

    printf("matrix_multiply: trace=%lld, %d failures\n", (long long)trace(&sst), failures);
    free(a.data); free(b.data); free(ref.data); free(out.data);
    free(s.data); free(st.data); free(sst.data);
    return failures == 0 ? 0 : 1;
}
