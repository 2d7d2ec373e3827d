/* demo-v1: Q16.16 fixed-point arithmetic with saturating mul/div, square root and CORDIC sin/cos */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef int32_t fix16;

#define FIX_ONE 65536
#define FIX_PI 205887
#define FIX_HALF_PI 102944

static fix16 saturate(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (fix16)v; }

/* rounds to nearest, ties away from zero; division keeps everything well defined for negatives */
fix16 fix_mul(fix16 a, fix16 b)
{
    int64_t p = (int64_t)a * b;
    return saturate((p + (p >= 0 ? FIX_ONE / 2 : -FIX_ONE / 2)) / FIX_ONE);
}

fix16 fix_div(fix16 a, fix16 b)
{
    if (b == 0) return a >= 0 ? INT32_MAX : INT32_MIN;
    int64_t n = (int64_t)a * FIX_ONE;
    int64_t half = (b > 0 ? b : -(int64_t)b) / 2;
    return saturate(((n >= 0) == (b > 0) ? n + half : n - half) / b);
}

static fix16 fix_sqrt(fix16 a)
{
    if (a <= 0) return 0;
    uint64_t n = (uint64_t)a << 16, r = 0, bit = UINT64_C(1) << 62;
    while (bit > n) bit >>= 2;
    while (bit) {
        if (n >= r + bit) {
            n -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return (fix16)r;
}

static const fix16 atan_table[16] = {51472, 30386, 16055, 8150, 4091, 2047, 1024, 512,
                                     256,   128,   64,    32,   16,   8,    4,    2};

/* CORDIC rotation mode; any angle is first reduced into [-pi/2, pi/2] */
void fix_sincos(fix16 angle, fix16 *s, fix16 *c)
{
    int64_t a = angle % (2 * FIX_PI);
    if (a > FIX_PI) a -= 2 * FIX_PI;
    if (a < -FIX_PI) a += 2 * FIX_PI;
    int flip = 1;
    if (a > FIX_HALF_PI) { a = FIX_PI - a; flip = -1; }
    else if (a < -FIX_HALF_PI) { a = -FIX_PI - a; flip = -1; }
    int64_t x = 39797, y = 0, z = a; /* x starts at the CORDIC gain */
    for (int i = 0; i < 16; i++) {
        int64_t dx = y / ((int64_t)1 << i), dy = x / ((int64_t)1 << i);
        if (z >= 0) { x -= dx; y += dy; z -= atan_table[i]; }
        else { x += dx; y -= dy; z += atan_table[i]; }
    }
    *s = (fix16)y;
    *c = (fix16)(flip * x);
}

static int32_t iabs32(int32_t v) { return v < 0 ? -v : v; }

int main(void)
{
    static const struct { fix16 angle, sin, cos; } known[] = {
        {0, 0, 65536},          {34315, 32768, 56756},   {51472, 46341, 46341},
        {68629, 56756, 32768},  {102944, 65536, 0},      {-51472, -46341, 46341},
        {163840, 39221, -52504}, {-196608, -9248, -64880}, {203162, 2725, -65479},
    };
    int failures = 0;
    int32_t worst = 0;

    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        fix16 s, c;
        fix_sincos(known[i].angle, &s, &c);
        int32_t err = iabs32(s - known[i].sin) > iabs32(c - known[i].cos) ? iabs32(s - known[i].sin)
                                                                             : iabs32(c - known[i].cos);
        if (err > worst) worst = err;
        if (err > 12) failures++;
    }
    /* Pythagorean identity over a sweep of angles */
    for (fix16 a = -4 * FIX_ONE; a <= 4 * FIX_ONE; a += 977) {
        fix16 s, c;
        fix_sincos(a, &s, &c);
        if (iabs32(fix_mul(s, s) + fix_mul(c, c) - FIX_ONE) > 40) failures++;
    }

    if (fix_mul(3 * FIX_ONE / 2, -2 * FIX_ONE) != -3 * FIX_ONE) failures++;
    if (fix_mul(INT32_MAX, 2 * FIX_ONE) != INT32_MAX || fix_mul(INT32_MIN, 2 * FIX_ONE) != INT32_MIN) failures++;
    if (fix_div(FIX_ONE, 3 * FIX_ONE) != 21845 || fix_div(-FIX_ONE, 3 * FIX_ONE) != -21845) failures++;
    if (fix_div(7, 0) != INT32_MAX) failures++;
    if (fix_sqrt(2 * FIX_ONE) != 92681 && fix_sqrt(2 * FIX_ONE) != 92682) failures++;
    if (iabs32(fix_sqrt(688128) - 212361) > 1 || fix_sqrt(4 * FIX_ONE) != 2 * FIX_ONE) failures++;

    uint32_t lcg = 5u;
    for (int i = 0; i < 2000; i++) {
        lcg = lcg * 1664525u + 1013904223u;
        fix16 a = (fix16)(lcg >> 9) - (1 << 22); /* about [-64, 64) */
        lcg = lcg * 1664525u + 1013904223u;
        fix16 b = (fix16)(lcg >> 12) + FIX_ONE / 4; /* about [0.25, 16.25) */
        fix16 back = fix_mul(fix_div(a, b), b);
        if (iabs32(back - a) > b / FIX_ONE + 2) failures++;
        fix16 r = fix_sqrt(b);
        if (iabs32(fix_mul(r, r) - b) > r / FIX_ONE * 2 + 2) failures++;
    }

    printf("fixed_point: worst CORDIC error %d ulp, %d failures\n", (int)worst, failures);
    return failures == 0 ? 0 : 1;
}
