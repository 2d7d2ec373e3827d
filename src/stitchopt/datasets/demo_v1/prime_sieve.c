/* demo-v1: prime sieves (byte, odd-only bitset, segmented), integer sqrt and Miller-Rabin cross-checks */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT 200000u

uint8_t *sieve_bytes(uint32_t limit)
{
    uint8_t *is_prime = malloc(limit);
    if (!is_prime) return NULL;
    memset(is_prime, 1, limit);
    is_prime[0] = 0;
    if (limit > 1) is_prime[1] = 0;
    for (uint32_t i = 2; (uint64_t)i * i < limit; i++) {
        if (!is_prime[i]) continue;
        for (uint32_t j = i * i; j < limit; j += i) is_prime[j] = 0;
    }
    return is_prime;
}

/* bit k represents the odd number 2k+1; a set bit means composite */
typedef struct {
    uint32_t limit;
    uint64_t *bits;
} odd_sieve;

static bool odd_sieve_init(odd_sieve *s, uint32_t limit)
{
    size_t nbits = limit / 2 + 1;
    s->limit = limit;
    s->bits = calloc((nbits + 63) / 64, sizeof(uint64_t));
    if (!s->bits) return false;
    s->bits[0] |= 1u; /* 1 is not prime */
    for (uint32_t i = 3; (uint64_t)i * i < limit; i += 2) {
        if (s->bits[(i / 2) / 64] >> ((i / 2) % 64) & 1u) continue;
        for (uint32_t j = i * i; j < limit; j += 2 * i)
            s->bits[(j / 2) / 64] |= UINT64_C(1) << ((j / 2) % 64);
    }
    return true;
}

static bool odd_sieve_is_prime(const odd_sieve *s, uint32_t n)
{
    if (n < 2) return false;
    if (n % 2 == 0) return n == 2;
    return !(s->bits[(n / 2) / 64] >> ((n / 2) % 64) & 1u);
}

/* count primes in [lo, hi) using base primes up to sqrt(hi) */
uint32_t segmented_count(uint32_t lo, uint32_t hi, const uint8_t *base, uint32_t base_limit)
{
    enum { SEG = 4096 };
    uint8_t seg[SEG];
    uint32_t count = 0;
    for (uint32_t start = lo; start < hi; start += SEG) {
        uint32_t end = start + SEG < hi ? start + SEG : hi;
        memset(seg, 1, end - start);
        for (uint32_t p = 2; p < base_limit && (uint64_t)p * p < end; p++) {
            if (!base[p]) continue;
            uint32_t first = (start + p - 1) / p * p;
            if (first < p * p) first = p * p;
            for (uint32_t m = first; m < end; m += p) seg[m - start] = 0;
        }
        for (uint32_t n = start; n < end; n++)
            if (seg[n - start] && n >= 2) count++;
    }
    return count;
}

uint64_t isqrt_newton(uint64_t n)
{
    if (n < 2) return n;
    uint64_t x = n, y = (x + 1) / 2;
    if (n == UINT64_MAX) y = UINT64_C(1) << 63; /* avoid x+1 overflow */
    while (y < x) {
        x = y;
        y = (x + n / x) / 2;
    }
    return x;
}

static uint64_t isqrt_binary(uint64_t n)
{
    uint64_t lo = 0, hi = UINT64_C(4294967295);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (mid * mid <= n) lo = mid; /* mid <= 2^32-1 so mid*mid cannot overflow */
        else hi = mid - 1;
    }
    return lo;
}

static uint32_t pow_mod32(uint32_t b, uint32_t e, uint32_t m)
{
    uint64_t r = 1, x = b % m;
    while (e) {
        if (e & 1u) r = r * x % m;
        x = x * x % m;
        e >>= 1;
    }
    return (uint32_t)r;
}

/* deterministic for all 32-bit n with bases 2, 7, 61 */
bool miller_rabin32(uint32_t n)
{
    static const uint32_t bases[] = {2, 7, 61};
    if (n < 2) return false;
    for (size_t i = 0; i < 3; i++) {
        if (n == bases[i]) return true;
        if (n % bases[i] == 0) return false;
    }
    uint32_t d = n - 1;
    int s = 0;
    while (d % 2 == 0) { d /= 2; s++; }
    for (size_t i = 0; i < 3; i++) {
        uint64_t x = pow_mod32(bases[i], d, n);
        if (x == 1 || x == n - 1) continue;
        bool witness = true;
        for (int r = 1; r < s; r++) {
            x = x * x % n;
            if (x == n - 1) { witness = false; break; }
        }
        if (witness) return false;
    }
    return true;
}

static bool trial_division(uint32_t n)
{
    if (n < 2) return false;
    for (uint32_t d = 2; d * d <= n; d++)
        if (n % d == 0) return false;
    return true;
}

int main(void)
{
    int failures = 0;
    uint8_t *sv = sieve_bytes(LIMIT);
    odd_sieve os;
    if (!sv || !odd_sieve_init(&os, LIMIT)) return 2;

    uint32_t count = 0, twins = 0;
    uint64_t sum = 0;
    for (uint32_t n = 0; n < LIMIT; n++) {
        bool p = sv[n] != 0;
        if (p != odd_sieve_is_prime(&os, n)) failures++;
        if (p != miller_rabin32(n)) failures++;
        if (n < 5000 && p != trial_division(n)) failures++;
        if (p) {
            count++;
            sum += n;
            if (n + 2 < LIMIT && sv[n + 2]) twins++;
        }
    }
    if (count != 17984 || sum != UINT64_C(1709600813) || twins != 2160) failures++;
    if (segmented_count(0, LIMIT, sv, LIMIT) != 17984) failures++;
    if (segmented_count(150000, 190000, sv, 1000) != 3322) failures++;

    /* Goldbach for small even numbers */
    for (uint32_t e = 4; e <= 20000; e += 2) {
        bool found = false;
        for (uint32_t p = 2; p <= e / 2 && !found; p++)
            found = sv[p] && sv[e - p];
        if (!found) failures++;
    }

    /* large 32-bit values */
    static const struct { uint32_t n; bool prime; } big[] = {
        {4294967291u, true}, {4294967295u, false}, {561u, false}, {3215031751u, false},
        {2147483647u, true}, {1000000007u, true}, {999999999u, false}, {4294836225u, false},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        if (miller_rabin32(big[i].n) != big[i].prime) failures++;

    /* integer square roots */
    uint64_t v = 1;
    for (int i = 0; i < 2000; i++) {
        uint64_t r = isqrt_newton(v);
        if (r != isqrt_binary(v) || r * r > v || (r + 1) * (r + 1) <= v) failures++;
        v = v * 3 + (uint64_t)i;
        if (v > UINT64_C(1) << 62) v = (v >> 20) + 17;
    }
    for (uint64_t k = 1; k < 3000; k++) {
        if (isqrt_newton(k * k) != k || isqrt_newton(k * k - 1) != k - 1) failures++;
    }
    if (isqrt_newton(UINT64_MAX) != UINT64_C(4294967295) || isqrt_newton(UINT64_C(1000000000000000000)) !=
        UINT64_C(1000000000) || isqrt_newton(UINT64_C(999999999999)) != 999999)
        failures++;

    printf("prime_sieve: pi(%u)=%u, %d failures\n", LIMIT, count, failures);
    free(sv);
    free(os.bits);
    return failures == 0 ? 0 : 1;
}
