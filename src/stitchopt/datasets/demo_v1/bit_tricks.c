/* demo-v1: bit manipulation: popcount variants, bit reversal, bitsets, LEB128 varints, zigzag, N-queens */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned (*popcount_fn)(uint32_t);

static unsigned popcount_naive(uint32_t x)
{
    unsigned n = 0;
    for (int i = 0; i < 32; i++) n += (x >> i) & 1u;
    return n;
}

static unsigned popcount_kernighan(uint32_t x)
{
    unsigned n = 0;
    while (x) {
        x &= x - 1;
        n++;
    }
    return n;
}

unsigned popcount_swar(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0F0F0F0Fu;
    return (x * 0x01010101u) >> 24;
}

static uint8_t popcount_lut[256];

static unsigned popcount_table(uint32_t x)
{
    return popcount_lut[x & 0xFF] + popcount_lut[(x >> 8) & 0xFF] + popcount_lut[(x >> 16) & 0xFF] +
           popcount_lut[x >> 24];
}

uint32_t reverse_bits(uint32_t x)
{
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
    x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
    return (x >> 16) | (x << 16);
}

static uint32_t reverse_bits_slow(uint32_t x)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}

static unsigned ctz32(uint32_t x)
{
    if (x == 0) return 32;
    unsigned n = 0;
    if (!(x & 0xFFFF)) { n += 16; x >>= 16; }
    if (!(x & 0xFF)) { n += 8; x >>= 8; }
    if (!(x & 0xF)) { n += 4; x >>= 4; }
    if (!(x & 0x3)) { n += 2; x >>= 2; }
    return n + !(x & 1u);
}

static uint32_t next_pow2(uint32_t x)
{
    if (x <= 1) return 1;
    x--;
    x |= x >> 1; x |= x >> 2; x |= x >> 4; x |= x >> 8; x |= x >> 16;
    return x + 1;
}

static uint32_t gray_encode(uint32_t x) { return x ^ (x >> 1); }

static uint32_t gray_decode(uint32_t g)
{
    for (uint32_t shift = 1; shift < 32; shift <<= 1) g ^= g >> shift;
    return g;
}

/* ---- bitset ---- */

typedef struct {
    size_t nbits;
    uint64_t *words;
} bitset;

static bitset bs_new(size_t nbits)
{
    bitset b = {nbits, calloc((nbits + 63) / 64, sizeof(uint64_t))};
    return b;
}

static void bs_set(bitset *b, size_t i) { b->words[i / 64] |= UINT64_C(1) << (i % 64); }
static bool bs_test(const bitset *b, size_t i) { return (b->words[i / 64] >> (i % 64)) & 1u; }

typedef uint64_t (*word_op)(uint64_t, uint64_t);
static uint64_t op_or(uint64_t a, uint64_t b) { return a | b; }
static uint64_t op_and(uint64_t a, uint64_t b) { return a & b; }
static uint64_t op_andnot(uint64_t a, uint64_t b) { return a & ~b; }

static void bs_combine(bitset *dst, const bitset *a, const bitset *b, word_op op)
{
    for (size_t w = 0; w < (dst->nbits + 63) / 64; w++) dst->words[w] = op(a->words[w], b->words[w]);
}

static size_t bs_count(const bitset *b)
{
    size_t n = 0;
    for (size_t w = 0; w < (b->nbits + 63) / 64; w++) {
        n += popcount_swar((uint32_t)b->words[w]) + popcount_swar((uint32_t)(b->words[w] >> 32));
    }
    return n;
}

/* index of next set bit at or after i, or nbits */
static size_t bs_next(const bitset *b, size_t i)
{
    while (i < b->nbits) {
        uint64_t w = b->words[i / 64] >> (i % 64);
        if (w) {
            uint32_t lo = (uint32_t)w;
            size_t off = lo ? ctz32(lo) : 32 + ctz32((uint32_t)(w >> 32));
            return i + off < b->nbits ? i + off : b->nbits;
        }
        i = (i / 64 + 1) * 64;
    }
    return b->nbits;
}

/* ---- varints ---- */

size_t varint_encode(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7F;
        v >>= 7;
        out[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    return n;
}

/* returns bytes consumed, 0 on truncation or overlong input */
size_t varint_decode(const uint8_t *in, size_t avail, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < avail && i < 10; i++) {
        uint64_t chunk = in[i] & 0x7Fu;
        if (i == 9 && chunk > 1) return 0;
        v |= chunk << (7 * i);
        if (!(in[i] & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

static uint64_t zigzag_encode(int64_t n) { return ((uint64_t)n << 1) ^ (n < 0 ? UINT64_MAX : 0); }

static int64_t zigzag_decode(uint64_t u)
{
    return (u & 1u) ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

/* ---- N-queens with bitmasks ---- */

static unsigned queens(unsigned n, uint32_t cols, uint32_t diag1, uint32_t diag2)
{
    uint32_t full = (1u << n) - 1;
    if (cols == full) return 1;
    unsigned count = 0;
    uint32_t avail = full & ~(cols | diag1 | diag2);
    while (avail) {
        uint32_t bit = avail & (0u - avail);
        avail ^= bit;
        count += queens(n, cols | bit, ((diag1 | bit) << 1) & full, (diag2 | bit) >> 1);
    }
    return count;
}

int main(void)
{
    static const popcount_fn impls[] = {popcount_kernighan, popcount_swar, popcount_table};
    int failures = 0;

    for (int i = 0; i < 256; i++) popcount_lut[i] = (uint8_t)popcount_naive((uint32_t)i);

    unsigned long total = 0;
    for (uint32_t i = 0; i < 5000; i++) {
        uint32_t x = i * 2654435761u;
        unsigned ref = popcount_naive(x);
        for (size_t k = 0; k < sizeof impls / sizeof impls[0]; k++)
            if (impls[k](x) != ref) failures++;
        total += ref;
        if (reverse_bits(x) != reverse_bits_slow(x) || reverse_bits(reverse_bits(x)) != x) failures++;
        if (gray_decode(gray_encode(x)) != x || popcount_naive(gray_encode(i) ^ gray_encode(i + 1)) != 1)
            failures++;
        if (x && (x >> ctz32(x) & 1u) != 1u) failures++;
        uint32_t small = x >> 2;
        uint32_t p = next_pow2(small);
        if (popcount_naive(p) != 1 || p < small || (p > 1 && p / 2 >= small)) failures++;
    }
    if (total != 80001) failures++;
    if (reverse_bits(0x12345678u) != 0x1E6A2C48u || reverse_bits(1) != 0x80000000u) failures++;
    if (popcount_swar(UINT32_MAX) != 32 || ctz32(0) != 32 || ctz32(0x80000000u) != 31) failures++;

    /* bitsets: multiples of 3 and 5 below 1000 */
    bitset m3 = bs_new(1000), m5 = bs_new(1000), tmp = bs_new(1000);
    for (size_t i = 0; i < 1000; i += 3) bs_set(&m3, i);
    for (size_t i = 0; i < 1000; i += 5) bs_set(&m5, i);
    bs_combine(&tmp, &m3, &m5, op_or);
    if (bs_count(&tmp) != 467) failures++;
    bs_combine(&tmp, &m3, &m5, op_and);
    if (bs_count(&tmp) != 67) failures++;
    size_t visited = 0, last = 0;
    for (size_t i = bs_next(&tmp, 0); i < tmp.nbits; i = bs_next(&tmp, i + 1)) {
        if (i % 15 != 0 || (visited > 0 && i != last + 15)) failures++;
        last = i;
        visited++;
    }
    if (visited != 67) failures++;
    bs_combine(&tmp, &m3, &m5, op_andnot);
    if (bs_count(&tmp) != 267 || bs_test(&tmp, 15) || !bs_test(&tmp, 999)) failures++;
    free(m3.words); free(m5.words); free(tmp.words);

    /* varints */
    uint8_t buf[16];
    uint64_t v;
    if (varint_encode(300, buf) != 2 || buf[0] != 0xAC || buf[1] != 0x02) failures++;
    if (varint_encode(UINT64_MAX, buf) != 10 || buf[9] != 0x01) failures++;
    if (varint_decode(buf, 10, &v) != 10 || v != UINT64_MAX) failures++;
    if (varint_decode(buf, 9, &v) != 0) failures++;
    buf[9] = 0x02;
    if (varint_decode(buf, 10, &v) != 0) failures++;
    uint64_t x = 1;
    for (int i = 0; i < 300; i++) {
        size_t n = varint_encode(x, buf);
        size_t want = 1;
        for (uint64_t t = x >> 7; t; t >>= 7) want++;
        if (n != want || varint_decode(buf, n, &v) != n || v != x) failures++;
        x = x * 6364136223846793005u + 1442695040888963407u;
        x >>= (unsigned)(i % 64);
    }

    static const int64_t zz[] = {0, -1, 1, -2, 2, INT64_MAX, INT64_MIN, -123456789, 987654321};
    static const uint64_t zz_enc[] = {0, 1, 2, 3, 4, UINT64_MAX - 1, UINT64_MAX, 246913577, 1975308642};
    for (size_t i = 0; i < sizeof zz / sizeof zz[0]; i++)
        if (zigzag_encode(zz[i]) != zz_enc[i] || zigzag_decode(zz_enc[i]) != zz[i]) failures++;

    static const unsigned queens_expected[] = {1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724};
    for (unsigned n = 1; n <= 10; n++)
        if (queens(n, 0, 0, 0) != queens_expected[n]) failures++;

    printf("bit_tricks: popcount total %lu, %d failures\n", total, failures);
    return failures == 0 ? 0 : 1;
}
