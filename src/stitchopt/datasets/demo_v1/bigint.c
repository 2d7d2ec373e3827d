/* demo-v1: signed arbitrary-precision integers in base 1e9 (add, sub, mul, long division, gcd, pow, I/O) */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE 1000000000u
#define MAX_LIMBS 96

typedef struct {
    int sign;     /* -1, 0 or +1 */
    int n;        /* number of limbs in use; 0 for zero */
    uint32_t d[MAX_LIMBS]; /* little-endian limbs, each < BASE */
} bigint;

static void trim(bigint *a)
{
    while (a->n > 0 && a->d[a->n - 1] == 0) a->n--;
    if (a->n == 0) a->sign = 0;
}

static void big_from_u64(bigint *a, uint64_t v)
{
    a->n = 0;
    while (v) {
        a->d[a->n++] = (uint32_t)(v % BASE);
        v /= BASE;
    }
    a->sign = a->n ? 1 : 0;
}

bool big_from_string(bigint *a, const char *s)
{
    int sign = 1;
    if (*s == '-') { sign = -1; s++; }
    size_t len = strlen(s);
    if (len == 0 || (len + 8) / 9 > MAX_LIMBS) return false;
    a->n = 0;
    for (size_t end = len; end > 0;) {
        size_t start = end >= 9 ? end - 9 : 0;
        uint32_t limb = 0;
        for (size_t i = start; i < end; i++) {
            if (s[i] < '0' || s[i] > '9') return false;
            limb = limb * 10 + (uint32_t)(s[i] - '0');
        }
        a->d[a->n++] = limb;
        end = start;
    }
    a->sign = sign;
    trim(a);
    return true;
}

void big_to_string(const bigint *a, char *out)
{
    if (a->sign == 0) { strcpy(out, "0"); return; }
    char *p = out;
    if (a->sign < 0) *p++ = '-';
    p += sprintf(p, "%lu", (unsigned long)a->d[a->n - 1]);
    for (int i = a->n - 2; i >= 0; i--) p += sprintf(p, "%09lu", (unsigned long)a->d[i]);
}

static int cmp_mag(const bigint *a, const bigint *b)
{
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (int i = a->n - 1; i >= 0; i--)
        if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}

int big_cmp(const bigint *a, const bigint *b)
{
    if (a->sign != b->sign) return a->sign < b->sign ? -1 : 1;
    int c = cmp_mag(a, b);
    return a->sign >= 0 ? c : -c;
}

/* |r| = |a| + |b| */
static bool add_mag(bigint *r, const bigint *a, const bigint *b)
{
    int n = a->n > b->n ? a->n : b->n;
    uint32_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint32_t s = carry + (i < a->n ? a->d[i] : 0) + (i < b->n ? b->d[i] : 0);
        carry = s >= BASE;
        r->d[i] = carry ? s - BASE : s;
    }
    r->n = n;
    if (carry) {
        if (n >= MAX_LIMBS) return false;
        r->d[r->n++] = carry;
    }
    return true;
}

/* |r| = |a| - |b|, requires |a| >= |b| */
static void sub_mag(bigint *r, const bigint *a, const bigint *b)
{
    uint32_t borrow = 0;
    for (int i = 0; i < a->n; i++) {
        uint32_t sub = (i < b->n ? b->d[i] : 0) + borrow;
        if (a->d[i] >= sub) {
            r->d[i] = a->d[i] - sub;
            borrow = 0;
        } else {
            r->d[i] = a->d[i] + BASE - sub;
            borrow = 1;
        }
    }
    r->n = a->n;
}

bool big_add(bigint *r, const bigint *a, const bigint *b)
{
    bigint t;
    if (a->sign == 0) { *r = *b; return true; }
    if (b->sign == 0) { *r = *a; return true; }
    if (a->sign == b->sign) {
        if (!add_mag(&t, a, b)) return false;
        t.sign = a->sign;
    } else {
        int c = cmp_mag(a, b);
        if (c == 0) { r->sign = 0; r->n = 0; return true; }
        if (c > 0) { sub_mag(&t, a, b); t.sign = a->sign; }
        else { sub_mag(&t, b, a); t.sign = b->sign; }
    }
    trim(&t);
    *r = t;
    return true;
}

bool big_sub(bigint *r, const bigint *a, const bigint *b)
{
    bigint nb = *b;
    nb.sign = -nb.sign;
    return big_add(r, a, &nb);
}

bool big_mul(bigint *r, const bigint *a, const bigint *b)
{
    bigint t;
    if (a->sign == 0 || b->sign == 0) { r->sign = 0; r->n = 0; return true; }
    if (a->n + b->n > MAX_LIMBS) return false;
    memset(t.d, 0, sizeof t.d);
    for (int i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < b->n; j++) {
            uint64_t cur = t.d[i + j] + (uint64_t)a->d[i] * b->d[j] + carry;
            t.d[i + j] = (uint32_t)(cur % BASE);
            carry = cur / BASE;
        }
        for (int k = i + b->n; carry; k++) {
            uint64_t cur = t.d[k] + carry;
            t.d[k] = (uint32_t)(cur % BASE);
            carry = cur / BASE;
        }
    }
    t.n = a->n + b->n;
    t.sign = a->sign * b->sign;
    trim(&t);
    *r = t;
    return true;
}

static bool big_mul_small(bigint *r, const bigint *a, uint32_t m)
{
    uint64_t carry = 0;
    bigint t = *a;
    for (int i = 0; i < t.n; i++) {
        uint64_t cur = (uint64_t)t.d[i] * m + carry;
        t.d[i] = (uint32_t)(cur % BASE);
        carry = cur / BASE;
    }
    while (carry) {
        if (t.n >= MAX_LIMBS) return false;
        t.d[t.n++] = (uint32_t)(carry % BASE);
        carry /= BASE;
    }
    trim(&t);
    *r = t;
    return true;
}

/* truncating division: a = q*b + r with sign(r) = sign(a) */
bool big_divmod(bigint *q, bigint *r, const bigint *a, const bigint *b)
{
    if (b->sign == 0) return false;
    bigint quot, rem, babs = *b, tmp;
    babs.sign = 1;
    quot.n = a->n;
    quot.sign = 1;
    memset(quot.d, 0, sizeof quot.d);
    rem.sign = 0;
    rem.n = 0;
    for (int i = a->n - 1; i >= 0; i--) {
        /* rem = rem * BASE + a->d[i] */
        if (rem.n > 0) {
            if (rem.n >= MAX_LIMBS) return false;
            memmove(rem.d + 1, rem.d, (size_t)rem.n * sizeof rem.d[0]);
            rem.n++;
        } else {
            rem.n = 1;
        }
        rem.d[0] = a->d[i];
        rem.sign = 1;
        trim(&rem);
        /* binary search the largest digit x with babs * x <= rem */
        uint32_t lo = 0, hi = BASE - 1;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo + 1) / 2;
            if (!big_mul_small(&tmp, &babs, mid)) return false;
            if (cmp_mag(&tmp, &rem) <= 0) lo = mid;
            else hi = mid - 1;
        }
        quot.d[i] = lo;
        if (lo) {
            big_mul_small(&tmp, &babs, lo);
            sub_mag(&rem, &rem, &tmp);
            rem.sign = 1;
            trim(&rem);
        }
    }
    quot.sign = a->sign * b->sign;
    trim(&quot);
    if (rem.sign != 0) rem.sign = a->sign;
    if (q) *q = quot;
    if (r) *r = rem;
    return true;
}

static bool big_pow(bigint *r, const bigint *base, unsigned e)
{
    bigint result, b = *base;
    big_from_u64(&result, 1);
    while (e) {
        if ((e & 1u) && !big_mul(&result, &result, &b)) return false;
        e >>= 1;
        if (e && !big_mul(&b, &b, &b)) return false;
    }
    *r = result;
    return true;
}

static bool big_gcd(bigint *g, const bigint *a, const bigint *b)
{
    bigint x = *a, y = *b, r;
    x.sign = x.sign ? 1 : 0;
    y.sign = y.sign ? 1 : 0;
    while (y.sign != 0) {
        if (!big_divmod(NULL, &r, &x, &y)) return false;
        x = y;
        y = r;
    }
    *g = x;
    return true;
}

static bool expect_str(const bigint *a, const char *want)
{
    char buf[MAX_LIMBS * 9 + 2];
    big_to_string(a, buf);
    return strcmp(buf, want) == 0;
}

int main(void)
{
    static bigint a, b, c, q, r, t;
    int failures = 0;

    /* 30! and 50! / 2^47 */
    big_from_u64(&a, 1);
    for (uint32_t i = 2; i <= 30; i++) big_mul_small(&a, &a, i);
    if (!expect_str(&a, "265252859812191058636308480000000")) failures++;
    for (uint32_t i = 31; i <= 50; i++) big_mul_small(&a, &a, i);
    big_from_u64(&b, 2);
    big_pow(&b, &b, 47);
    if (!big_divmod(&q, &r, &a, &b) || r.sign != 0 ||
        !expect_str(&q, "216105129892080882169214875191192738017616943359375"))
        failures++;

    big_from_u64(&b, 2);
    big_pow(&c, &b, 200);
    if (!expect_str(&c, "1606938044258990275541962092341162602522202993782792835301376")) failures++;

    /* Fibonacci numbers and gcd(F300, F200) = F100 */
    bigint f0, f1, f100, f200;
    big_from_u64(&f0, 0);
    big_from_u64(&f1, 1);
    for (int i = 1; i <= 300; i++) {
        big_add(&t, &f0, &f1);
        f0 = f1;
        f1 = t;
        if (i == 100) f100 = f0;
        if (i == 200) f200 = f0;
    }
    if (!expect_str(&f0, "222232244629420445529739893461909967206666939096499764990979600")) failures++;
    if (!expect_str(&f100, "354224848179261915075")) failures++;
    if (!big_gcd(&t, &f0, &f200) || big_cmp(&t, &f100) != 0) failures++;

    /* signed arithmetic */
    big_from_string(&a, "-123456789012345678901234567890");
    big_from_string(&b, "123456789012345678901234567891");
    big_add(&c, &a, &b);
    if (!expect_str(&c, "1")) failures++;
    big_sub(&c, &a, &b);
    if (!expect_str(&c, "-246913578024691357802469135781")) failures++;
    big_from_u64(&t, 3);
    big_pow(&a, &t, 100);
    big_from_u64(&t, 2);
    big_pow(&b, &t, 150);
    big_sub(&c, &a, &b);
    if (!expect_str(&c, "513950273039305371155402843796171777565724775377")) failures++;
    big_sub(&c, &b, &a);
    if (c.sign != -1 || big_cmp(&c, &a) >= 0) failures++;
    big_from_string(&a, "-7");
    big_from_string(&b, "2");
    big_divmod(&q, &r, &a, &b);
    if (!expect_str(&q, "-3") || !expect_str(&r, "-1")) failures++;
    if (big_divmod(&q, &r, &a, &(bigint){0, 0, {0}})) failures++;
    if (big_from_string(&a, "12x4") || big_from_string(&a, "")) failures++;
    big_from_string(&a, "-0000");
    if (a.sign != 0 || !expect_str(&a, "0")) failures++;

    /* randomized division identity: a = q*b + r, |r| < |b| */
    uint64_t s = 0x9E3779B97F4A7C15u;
    for (int iter = 0; iter < 60; iter++) {
        char digits[200];
        int la = 10 + iter * 2, lb = 1 + iter % 37;
        for (int k = 0; k < la; k++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            digits[k] = (char)('0' + (s >> 59) % 10);
        }
        digits[0] = digits[0] == '0' ? '7' : digits[0];
        digits[la] = '\0';
        big_from_string(&a, digits);
        if (iter % 3 == 0) a.sign = -a.sign;
        for (int k = 0; k < lb; k++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            digits[k] = (char)('1' + (s >> 59) % 9);
        }
        digits[lb] = '\0';
        big_from_string(&b, digits);
        if (iter % 5 == 0) b.sign = -b.sign;
        if (!big_divmod(&q, &r, &a, &b)) { failures++; continue; }
        big_mul(&t, &q, &b);
        big_add(&t, &t, &r);
        if (big_cmp(&t, &a) != 0 || cmp_mag(&r, &b) >= 0) failures++;
        if (r.sign != 0 && r.sign != a.sign) failures++;
        /* round trip through text */
        char text[MAX_LIMBS * 9 + 2];
        big_to_string(&a, text);
        big_from_string(&t, text);
        if (big_cmp(&t, &a) != 0) failures++;
    }

    printf("bigint: F300 has %d limbs, %d failures\n", f0.n, failures);
    return failures == 0 ? 0 : 1;
}
