/* demo-v1: PackBits-style run-length coder and LZSS coder with hash chains, round-trip tested */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef long (*codec_fn)(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

typedef struct {
    const char *name;
    codec_fn encode, decode;
} codec;

/* ---------------- run-length (PackBits variant) ---------------- */

long rle_encode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n) {
        size_t run = 1;
        while (i + run < n && run < 128 && in[i + run] == in[i]) run++;
        if (run >= 3) {
            if (o + 2 > cap) return -1;
            out[o++] = (uint8_t)(257 - run);
            out[o++] = in[i];
            i += run;
            continue;
        }
        /* literal stretch: stop before a run of 3+ identical bytes */
        size_t start = i, len = 0;
        while (i < n && len < 128) {
            if (i + 2 < n && in[i + 1] == in[i] && in[i + 2] == in[i]) break;
            i++;
            len++;
        }
        if (len == 0) { i++; len = 1; } /* cannot happen, defensive */
        if (o + 1 + len > cap) return -1;
        out[o++] = (uint8_t)(len - 1);
        memcpy(out + o, in + start, len);
        o += len;
    }
    return (long)o;
}

long rle_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t h = in[i++];
        if (h < 128) {
            size_t len = (size_t)h + 1;
            if (i + len > n || o + len > cap) return -1;
            memcpy(out + o, in + i, len);
            i += len;
            o += len;
        } else if (h > 128) {
            size_t len = 257 - (size_t)h;
            if (i >= n || o + len > cap) return -1;
            memset(out + o, in[i++], len);
            o += len;
        }
    }
    return (long)o;
}

/* ---------------- LZSS ---------------- */

#define WINDOW 4096
#define MIN_MATCH 3
#define MAX_MATCH 18
#define HASH_BITS 12
#define CHAIN_LIMIT 32

static unsigned hash3(const uint8_t *p) { return ((p[0] << 8) ^ (p[1] << 4) ^ p[2]) & ((1u << HASH_BITS) - 1); }

long lzss_encode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    static int32_t head[1 << HASH_BITS];
    static int32_t prev[WINDOW];
    size_t o = 0, i = 0, flag_pos = 0;
    int nitems = 8;
    for (size_t k = 0; k < (1u << HASH_BITS); k++) head[k] = -1;

    while (i < n) {
        if (nitems == 8) {
            if (o >= cap) return -1;
            flag_pos = o;
            out[o++] = 0;
            nitems = 0;
        }
        size_t best_len = 0, best_off = 0;
        if (i + MIN_MATCH <= n) {
            int32_t cand = head[hash3(in + i)];
            for (int chain = 0; cand >= 0 && chain < CHAIN_LIMIT; chain++) {
                size_t c = (size_t)cand;
                if (i - c > WINDOW) break;
                size_t len = 0;
                while (len < MAX_MATCH && i + len < n && in[c + len] == in[i + len]) len++;
                if (len > best_len) {
                    best_len = len;
                    best_off = i - c;
                    if (len == MAX_MATCH) break;
                }
                int32_t nxt = prev[c % WINDOW];
                if (nxt >= cand) break; /* stale entry from an older window */
                cand = nxt;
            }
        }
        size_t advance;
        if (best_len >= MIN_MATCH) {
            if (o + 2 > cap) return -1;
            uint16_t code = (uint16_t)(((best_off - 1) << 4) | (best_len - MIN_MATCH));
            out[o++] = (uint8_t)(code >> 8);
            out[o++] = (uint8_t)(code & 0xFF);
            out[flag_pos] |= (uint8_t)(1u << nitems);
            advance = best_len;
        } else {
            if (o + 1 > cap) return -1;
            out[o++] = in[i];
            advance = 1;
        }
        nitems++;
        /* insert every position we step over into the hash chains */
        for (size_t k = 0; k < advance; k++, i++) {
            if (i + MIN_MATCH <= n) {
                unsigned h = hash3(in + i);
                prev[i % WINDOW] = head[h];
                head[h] = (int32_t)i;
            }
        }
    }
    return (long)o;
}

long lzss_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n) {
        uint8_t flags = in[i++];
        for (int bit = 0; bit < 8 && i < n; bit++) {
            if (flags & (1u << bit)) {
                if (i + 2 > n) return -1;
                unsigned code = (unsigned)in[i] << 8 | in[i + 1];
                i += 2;
                size_t off = (code >> 4) + 1, len = (code & 15u) + MIN_MATCH;
                if (off > o || o + len > cap) return -1;
                for (size_t k = 0; k < len; k++, o++) out[o] = out[o - off]; /* may overlap */
            } else {
                if (o >= cap) return -1;
                out[o++] = in[i++];
            }
        }
    }
    return (long)o;
}

/* ---------------- test data ---------------- */

static const char prose[] =
    "A lighthouse keeper counts the ships that pass each night. Some nights the ships are many, "
    "some nights the ships are few, and on the stormy nights the keeper counts the waves instead. "
    "The keeper writes every count in a ledger; the ledger grows, the ledger repeats, the ledger "
    "remembers what the keeper forgets. ";

#define BUF 20000

static size_t make_input(int kind, uint8_t *buf)
{
    uint32_t s = 0xC0FFEEu;
    size_t n = 0;
    switch (kind) {
    case 0: return 0;
    case 1: buf[0] = 'x'; return 1;
    case 2: memset(buf, 0, 5000); return 5000;
    case 3:
        for (int r = 0; r < 12; r++) {
            memcpy(buf + n, prose, sizeof prose - 1);
            n += sizeof prose - 1;
        }
        return n;
    case 4:
        for (n = 0; n < 3000; n++) {
            s = s * 1103515245u + 12345u;
            buf[n] = (uint8_t)(s >> 16);
        }
        return n;
    case 5:
        for (n = 0; n < 4099; n++) buf[n] = (uint8_t)("abc"[n % 3]);
        return n;
    default:
        /* runs of random length and value mixed with noise */
        while (n < 6000) {
            s = s * 1103515245u + 12345u;
            size_t run = 1 + (s >> 24) % 40;
            uint8_t v = (uint8_t)(s >> 8);
            for (size_t k = 0; k < run && n < 6000; k++)
                buf[n++] = (s & 0x10000u) ? v : (uint8_t)(v + k * 7);
        }
        return n;
    }
}

static long rle_lzss_encode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    static uint8_t tmp[BUF * 2];
    long m = rle_encode(in, n, tmp, sizeof tmp);
    return m < 0 ? -1 : lzss_encode(tmp, (size_t)m, out, cap);
}

static long rle_lzss_decode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    static uint8_t tmp[BUF * 2];
    long m = lzss_decode(in, n, tmp, sizeof tmp);
    return m < 0 ? -1 : rle_decode(tmp, (size_t)m, out, cap);
}

int main(void)
{
    static const codec codecs[] = {
        {"rle", rle_encode, rle_decode},
        {"lzss", lzss_encode, lzss_decode},
        {"rle+lzss", rle_lzss_encode, rle_lzss_decode},
    };
    static uint8_t input[BUF], packed[BUF * 2], unpacked[BUF];
    int failures = 0;
    long sizes[7][3];

    for (int kind = 0; kind < 7; kind++) {
        size_t n = make_input(kind, input);
        for (int c = 0; c < 3; c++) {
            long m = codecs[c].encode(input, n, packed, sizeof packed);
            sizes[kind][c] = m;
            if (m < 0) { failures++; continue; }
            long d = codecs[c].decode(packed, (size_t)m, unpacked, sizeof unpacked);
            if (d != (long)n || memcmp(unpacked, input, n) != 0) {
                printf("round trip failed: %s on input %d\n", codecs[c].name, kind);
                failures++;
            }
            /* worst-case expansion bounds */
            if (c == 0 && (size_t)m > n + n / 128 + 1) failures++;
            if (c == 1 && (size_t)m > n + n / 8 + 1) failures++;
            /* a truncated stream must never decode to the full original */
            if (m > 2) {
                long t = codecs[c].decode(packed, (size_t)m - 1, unpacked, sizeof unpacked);
                if (t == (long)n && memcmp(unpacked, input, n) == 0) failures++;
            }
        }
    }
    /* compression actually happens where it should */
    if (sizes[2][0] > 100 || sizes[2][1] > 800) failures++;  /* zeros */
    if (sizes[3][1] * 4 > (long)(12 * (sizeof prose - 1))) failures++;   /* repeated prose */
    if (sizes[5][1] > 600 || sizes[5][0] < 4099) failures++; /* periodic: lzss wins, rle cannot */

    /* corrupted back-reference is rejected */
    static const uint8_t bad[] = {0x01, 0xFF, 0xF0};
    if (lzss_decode(bad, sizeof bad, unpacked, sizeof unpacked) != -1) failures++;
    static const uint8_t bad_rle[] = {0x05, 'a', 'b'};
    if (rle_decode(bad_rle, sizeof bad_rle, unpacked, sizeof unpacked) != -1) failures++;

    printf("lz_compress: prose %zu -> %ld bytes, %d failures\n", 12 * (sizeof prose - 1), sizes[3][1], failures);
    return failures == 0 ? 0 : 1;
}
