/* demo-v1: number-theoretic transform (mod 998244353) for polynomial and decimal big-number multiplication */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD 998244353u
#define PRIMITIVE_ROOT 3u

static uint32_t mod_mul(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a * b % MOD); }
static uint32_t mod_add(uint32_t a, uint32_t b) { uint32_t s = a + b; return s >= MOD ? s - MOD : s; }
static uint32_t mod_sub(uint32_t a, uint32_t b) { return a >= b ? a - b : a + MOD - b; }

uint32_t mod_pow(uint32_t base, uint64_t exp)
{
    uint32_t r = 1;
    base %= MOD;
    while (exp) {
        if (exp & 1) r = mod_mul(r, base);
        base = mod_mul(base, base);
        exp >>= 1;
    }
    return r;
}

static uint32_t mod_inv(uint32_t a) { return mod_pow(a, MOD - 2); }

static void bit_reverse_permute(uint32_t *a, size_t n)
{
    for (size_t i = 1, j = 0; i < n; i++) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            uint32_t t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
}

void ntt(uint32_t *a, size_t n, bool inverse)
{
    bit_reverse_permute(a, n);
    for (size_t len = 2; len <= n; len <<= 1) {
        uint32_t w = mod_pow(PRIMITIVE_ROOT, (MOD - 1) / len);
        if (inverse) w = mod_inv(w);
        for (size_t i = 0; i < n; i += len) {
            uint32_t wn = 1;
            for (size_t j = 0; j < len / 2; j++) {
                uint32_t u = a[i + j];
                uint32_t v = mod_mul(a[i + j + len / 2], wn);
                a[i + j] = mod_add(u, v);
                a[i + j + len / 2] = mod_sub(u, v);
                wn = mod_mul(wn, w);
            }
        }
    }
    if (inverse) {
        uint32_t inv_n = mod_inv((uint32_t)n);
        for (size_t i = 0; i < n; i++) a[i] = mod_mul(a[i], inv_n);
    }
}

/* c must hold na + nb - 1 entries */
void poly_mul_ntt(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, uint32_t *c)
{
    size_t n = 1, need = na + nb - 1;
    while (n < need) n <<= 1;
    uint32_t *fa = calloc(n, sizeof *fa), *fb = calloc(n, sizeof *fb);
    if (!fa || !fb) { free(fa); free(fb); return; }
    memcpy(fa, a, na * sizeof *a);
    memcpy(fb, b, nb * sizeof *b);
    ntt(fa, n, false);
    ntt(fb, n, false);
    for (size_t i = 0; i < n; i++) fa[i] = mod_mul(fa[i], fb[i]);
    ntt(fa, n, true);
    memcpy(c, fa, need * sizeof *c);
    free(fa);
    free(fb);
}

static void poly_mul_naive(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, uint32_t *c)
{
    memset(c, 0, (na + nb - 1) * sizeof *c);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            c[i + j] = mod_add(c[i + j], mod_mul(a[i], b[j]));
}

/* ---- decimal big numbers, little-endian digit arrays ---- */

typedef struct {
    size_t len;
    uint8_t digits[512];
} decimal;

static void dec_from_string(decimal *d, const char *s)
{
    size_t n = strlen(s);
    d->len = n;
    for (size_t i = 0; i < n; i++) d->digits[i] = (uint8_t)(s[n - 1 - i] - '0');
}

static void dec_to_string(const decimal *d, char *out)
{
    for (size_t i = 0; i < d->len; i++) out[i] = (char)('0' + d->digits[d->len - 1 - i]);
    out[d->len] = '\0';
}

static bool dec_mul(const decimal *x, const decimal *y, decimal *out)
{
    size_t n = x->len + y->len - 1;
    if (n + 1 > sizeof out->digits) return false;
    uint32_t *a = malloc(x->len * sizeof *a), *b = malloc(y->len * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) { free(a); free(b); free(c); return false; }
    for (size_t i = 0; i < x->len; i++) a[i] = x->digits[i];
    for (size_t i = 0; i < y->len; i++) b[i] = y->digits[i];
    poly_mul_ntt(a, x->len, b, y->len, c);
    uint64_t carry = 0;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = c[i] + carry;
        out->digits[len++] = (uint8_t)(v % 10);
        carry = v / 10;
    }
    while (carry) {
        if (len >= sizeof out->digits) { free(a); free(b); free(c); return false; }
        out->digits[len++] = (uint8_t)(carry % 10);
        carry /= 10;
    }
    while (len > 1 && out->digits[len - 1] == 0) len--;
    out->len = len;
    free(a); free(b); free(c);
    return true;
}

static bool dec_pow(unsigned base, unsigned exp, decimal *out)
{
    decimal result, b, tmp;
    char buf[16];
    snprintf(buf, sizeof buf, "%u", base);
    dec_from_string(&result, "1");
    dec_from_string(&b, buf);
    while (exp) {
        if (exp & 1u) {
            if (!dec_mul(&result, &b, &tmp)) return false;
            result = tmp;
        }
        exp >>= 1;
        if (exp) {
            if (!dec_mul(&b, &b, &tmp)) return false;
            b = tmp;
        }
    }
    *out = result;
    return true;
}

static uint32_t lcg = 20240601u;
static uint32_t next_coeff(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return lcg % MOD;
}

int main(void)
{
    static const size_t sizes[][2] = {{1, 1}, {2, 3}, {7, 9}, {64, 64}, {100, 37}, {255, 2}, {300, 211}};
    static uint32_t a[300], b[300], c1[600], c2[600];
    int failures = 0;

    /* sanity: root of unity of order 2^23 */
    uint32_t w = mod_pow(PRIMITIVE_ROOT, (MOD - 1) >> 23);
    if (mod_pow(w, 1u << 23) != 1 || mod_pow(w, 1u << 22) != MOD - 1) failures++;

    /* forward then inverse transform is the identity */
    uint32_t round[128], orig[128];
    for (size_t i = 0; i < 128; i++) orig[i] = round[i] = next_coeff();
    ntt(round, 128, false);
    ntt(round, 128, true);
    if (memcmp(round, orig, sizeof orig) != 0) failures++;

    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        size_t na = sizes[t][0], nb = sizes[t][1];
        for (size_t i = 0; i < na; i++) a[i] = next_coeff();
        for (size_t i = 0; i < nb; i++) b[i] = next_coeff();
        poly_mul_ntt(a, na, b, nb, c1);
        poly_mul_naive(a, na, b, nb, c2);
        if (memcmp(c1, c2, (na + nb - 1) * sizeof c1[0]) != 0) failures++;
    }

    decimal x, y, z;
    char text[600];
    dec_from_string(&x, "12345678901234567890");
    dec_from_string(&y, "98765432109876543210");
    if (!dec_mul(&x, &y, &z)) failures++;
    dec_to_string(&z, text);
    if (strcmp(text, "1219326311370217952237463801111263526900") != 0) failures++;

    if (!dec_pow(7, 150, &z)) failures++;
    dec_to_string(&z, text);
    if (strcmp(text, "58170929338243431654325240033916911649198596497193405326275672076076568590343569955"
                     "66589707894210757866827613621721127496191249") != 0)
        failures++;

    printf("ntt_polymul: 7^150 has %zu digits, %d failures\n", z.len, failures);
    return failures == 0 ? 0 : 1;
}
