/* demo-v1: generic sorting algorithms (insertion, shell, heap, merge, quick, radix) plus binary search and quickselect */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*cmp_fn)(const void *, const void *);
typedef void (*sort_fn)(void *base, size_t n, size_t size, cmp_fn cmp);

typedef struct {
    int32_t key;
    uint32_t id;
    char tag[8];
} record;

#define ELEM(base, i, size) ((char *)(base) + (i) * (size))

static void swap_bytes(void *a, void *b, size_t size)
{
    unsigned char *p = a, *q = b;
    while (size--) {
        unsigned char t = *p;
        *p++ = *q;
        *q++ = t;
    }
}

void insertion_sort(void *base, size_t n, size_t size, cmp_fn cmp)
{
    unsigned char tmp[64];
    for (size_t i = 1; i < n; i++) {
        memcpy(tmp, ELEM(base, i, size), size);
        size_t j = i;
        while (j > 0 && cmp(ELEM(base, j - 1, size), tmp) > 0) {
            memcpy(ELEM(base, j, size), ELEM(base, j - 1, size), size);
            j--;
        }
        memcpy(ELEM(base, j, size), tmp, size);
    }
}

void shell_sort(void *base, size_t n, size_t size, cmp_fn cmp)
{
    static const size_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    unsigned char tmp[64];
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        size_t gap = gaps[g];
        for (size_t i = gap; i < n; i++) {
            memcpy(tmp, ELEM(base, i, size), size);
            size_t j = i;
            while (j >= gap && cmp(ELEM(base, j - gap, size), tmp) > 0) {
                memcpy(ELEM(base, j, size), ELEM(base, j - gap, size), size);
                j -= gap;
            }
            memcpy(ELEM(base, j, size), tmp, size);
        }
    }
}

static void sift_down(void *base, size_t root, size_t n, size_t size, cmp_fn cmp)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && cmp(ELEM(base, child, size), ELEM(base, child + 1, size)) < 0) child++;
        if (cmp(ELEM(base, root, size), ELEM(base, child, size)) >= 0) return;
        swap_bytes(ELEM(base, root, size), ELEM(base, child, size), size);
        root = child;
    }
}

void heap_sort(void *base, size_t n, size_t size, cmp_fn cmp)
{
    if (n < 2) return;
    for (size_t i = n / 2; i-- > 0;) sift_down(base, i, n, size, cmp);
    for (size_t end = n - 1; end > 0; end--) {
        swap_bytes(base, ELEM(base, end, size), size);
        sift_down(base, 0, end, size, cmp);
    }
}

static void merge_rec(char *a, char *tmp, size_t n, size_t size, cmp_fn cmp)
{
    if (n < 2) return;
    size_t mid = n / 2;
    merge_rec(a, tmp, mid, size, cmp);
    merge_rec(a + mid * size, tmp, n - mid, size, cmp);
    if (cmp(a + (mid - 1) * size, a + mid * size) <= 0) return; /* already ordered */
    size_t i = 0, j = mid, k = 0;
    while (i < mid && j < n) {
        if (cmp(a + j * size, a + i * size) < 0) memcpy(tmp + k++ * size, a + j++ * size, size);
        else memcpy(tmp + k++ * size, a + i++ * size, size);
    }
    while (i < mid) memcpy(tmp + k++ * size, a + i++ * size, size);
    while (j < n) memcpy(tmp + k++ * size, a + j++ * size, size);
    memcpy(a, tmp, n * size);
}

void merge_sort(void *base, size_t n, size_t size, cmp_fn cmp)
{
    char *tmp = malloc(n * size + 1);
    if (!tmp) return;
    merge_rec(base, tmp, n, size, cmp);
    free(tmp);
}

static void quick_rec(char *a, size_t n, size_t size, cmp_fn cmp)
{
    while (n > 12) {
        size_t mid = n / 2, last = n - 1;
        /* median of three moved to position 0 */
        if (cmp(a + mid * size, a) < 0) swap_bytes(a + mid * size, a, size);
        if (cmp(a + last * size, a) < 0) swap_bytes(a + last * size, a, size);
        if (cmp(a + last * size, a + mid * size) < 0) swap_bytes(a + last * size, a + mid * size, size);
        swap_bytes(a, a + mid * size, size);
        size_t i = 1, j = last;
        for (;;) {
            while (i <= j && cmp(a + i * size, a) < 0) i++;
            while (j >= i && cmp(a + j * size, a) > 0) j--;
            if (i >= j) break;
            swap_bytes(a + i * size, a + j * size, size);
            i++;
            j--;
        }
        swap_bytes(a, a + j * size, size);
        /* recurse into the smaller half, loop on the larger */
        size_t left = j, right = n - j - 1;
        if (left < right) {
            quick_rec(a, left, size, cmp);
            a += (j + 1) * size;
            n = right;
        } else {
            quick_rec(a + (j + 1) * size, right, size, cmp);
            n = left;
        }
    }
    insertion_sort(a, n, size, cmp);
}

void quick_sort(void *base, size_t n, size_t size, cmp_fn cmp) { quick_rec(base, n, size, cmp); }

void radix_sort_u32(uint32_t *a, size_t n)
{
    uint32_t *tmp = malloc(n * sizeof *tmp + 1);
    if (!tmp) return;
    for (unsigned shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) count[((a[i] >> shift) & 0xFF) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++) tmp[count[(a[i] >> shift) & 0xFF]++] = a[i];
        memcpy(a, tmp, n * sizeof *a);
    }
    free(tmp);
}

static int cmp_record(const void *x, const void *y)
{
    const record *a = x, *b = y;
    return (a->key > b->key) - (a->key < b->key);
}

static int cmp_record_desc_tag(const void *x, const void *y)
{
    const record *a = x, *b = y;
    int c = strcmp(b->tag, a->tag);
    return c != 0 ? c : cmp_record(x, y);
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* first index whose key >= target */
size_t lower_bound(const record *a, size_t n, int32_t target)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].key < target) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static size_t upper_bound(const record *a, size_t n, int32_t target)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid].key <= target) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int32_t quickselect(int32_t *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int32_t pivot = a[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i <= j) {
                int32_t t = a[i]; a[i] = a[j]; a[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return a[k];
    }
    return a[k];
}

#define NREC 1500

static uint32_t rng = 42u;
static uint32_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

static void make_data(record *r, size_t n, int pattern)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t x = next_rand();
        switch (pattern) {
        case 0: r[i].key = (int32_t)(x % 100000) - 50000; break; /* random */
        case 1: r[i].key = (int32_t)i; break;                     /* sorted */
        case 2: r[i].key = (int32_t)(n - i); break;               /* reversed */
        case 3: r[i].key = (int32_t)(x % 7); break;               /* few unique */
        default: r[i].key = 5; break;                             /* constant */
        }
        r[i].id = (uint32_t)i;
        snprintf(r[i].tag, sizeof r[i].tag, "t%03u", (unsigned)(x % 50));
    }
}

static uint64_t fingerprint(const record *r, size_t n)
{
    uint64_t f = 0;
    for (size_t i = 0; i < n; i++)
        f += (uint64_t)((uint32_t)r[i].key * 2654435761u) ^ ((uint64_t)r[i].id << 32);
    return f;
}

int main(void)
{
    static const struct { const char *name; sort_fn fn; bool stable; } sorts[] = {
        {"insertion", insertion_sort, true}, {"shell", shell_sort, false}, {"heap", heap_sort, false},
        {"merge", merge_sort, true},         {"quick", quick_sort, false},
    };
    static record orig[NREC], work[NREC], ref[NREC];
    int failures = 0;

    for (int pattern = 0; pattern < 5; pattern++) {
        make_data(orig, NREC, pattern);
        memcpy(ref, orig, sizeof orig);
        merge_sort(ref, NREC, sizeof(record), cmp_record);
        uint64_t fp = fingerprint(orig, NREC);
        for (size_t s = 0; s < sizeof sorts / sizeof sorts[0]; s++) {
            memcpy(work, orig, sizeof orig);
            sorts[s].fn(work, NREC, sizeof(record), cmp_record);
            if (fingerprint(work, NREC) != fp) failures++;
            for (size_t i = 0; i < NREC; i++) {
                if (work[i].key != ref[i].key) { failures++; break; }
                if (i > 0 && sorts[s].stable && work[i].key == work[i - 1].key && work[i].id < work[i - 1].id) {
                    failures++;
                    break;
                }
            }
        }
        /* a secondary comparator, checked against the C library */
        memcpy(work, orig, sizeof orig);
        memcpy(ref, orig, sizeof orig);
        quick_sort(work, NREC, sizeof(record), cmp_record_desc_tag);
        qsort(ref, NREC, sizeof(record), cmp_record_desc_tag);
        for (size_t i = 0; i < NREC; i++)
            if (cmp_record_desc_tag(&work[i], &ref[i]) != 0) { failures++; break; }
    }

    /* searching in sorted random data */
    make_data(orig, NREC, 3);
    memcpy(work, orig, sizeof orig);
    merge_sort(work, NREC, sizeof(record), cmp_record);
    for (int32_t t = -1; t <= 7; t++) {
        size_t lin_lo = 0, lin_hi = 0;
        for (size_t i = 0; i < NREC; i++) {
            lin_lo += work[i].key < t;
            lin_hi += work[i].key <= t;
        }
        if (lower_bound(work, NREC, t) != lin_lo || upper_bound(work, NREC, t) != lin_hi) failures++;
    }
    record probe = {3, 0, ""};
    const record *hit = bsearch(&probe, work, NREC, sizeof(record), cmp_record);
    if (!hit || hit->key != 3) failures++;

    /* radix sort vs qsort */
    static uint32_t u[NREC], v[NREC];
    for (size_t i = 0; i < NREC; i++) u[i] = v[i] = next_rand();
    radix_sort_u32(u, NREC);
    qsort(v, NREC, sizeof v[0], cmp_u32);
    if (memcmp(u, v, sizeof u) != 0) failures++;

    /* quickselect: every 100th order statistic */
    static int32_t sel[NREC], sorted_keys[NREC];
    make_data(orig, NREC, 0);
    memcpy(work, orig, sizeof orig);
    heap_sort(work, NREC, sizeof(record), cmp_record);
    for (size_t i = 0; i < NREC; i++) sorted_keys[i] = work[i].key;
    for (size_t k = 0; k < NREC; k += 100) {
        for (size_t i = 0; i < NREC; i++) sel[i] = orig[i].key;
        if (quickselect(sel, NREC, k) != sorted_keys[k]) failures++;
    }

    printf("sort_search: %zu algorithms x 5 patterns, %d failures\n", sizeof sorts / sizeof sorts[0], failures);
    return failures == 0 ? 0 : 1;
}
