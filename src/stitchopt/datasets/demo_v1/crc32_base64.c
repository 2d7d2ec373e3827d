/* demo-v1: CRC-32 (bitwise, table, streaming), Adler-32 and Base64 (standard/URL-safe) codecs */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t crc_table[256];

static void crc32_init_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t crc32_bitwise(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    while (n--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* streaming form: pass the previous return value (0 to start) */
uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = crc_table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

uint32_t adler32(const uint8_t *p, size_t n)
{
    uint32_t a = 1, b = 0;
    while (n > 0) {
        size_t block = n < 5552 ? n : 5552; /* largest block that cannot overflow */
        n -= block;
        while (block--) {
            a += *p++;
            b += a;
        }
        a %= 65521u;
        b %= 65521u;
    }
    return (b << 16) | a;
}

typedef struct {
    const char *alphabet;
    bool pad;
    int8_t reverse[256];
} b64_codec;

static void b64_codec_init(b64_codec *c, const char *alphabet, bool pad)
{
    c->alphabet = alphabet;
    c->pad = pad;
    memset(c->reverse, -1, sizeof c->reverse);
    for (int i = 0; i < 64; i++) c->reverse[(unsigned char)alphabet[i]] = (int8_t)i;
}

size_t b64_encode(const b64_codec *c, const uint8_t *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = c->alphabet[v >> 18];
        out[o++] = c->alphabet[(v >> 12) & 63];
        out[o++] = c->alphabet[(v >> 6) & 63];
        out[o++] = c->alphabet[v & 63];
    }
    size_t rem = n - i;
    if (rem) {
        uint32_t v = (uint32_t)in[i] << 16 | (rem == 2 ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = c->alphabet[v >> 18];
        out[o++] = c->alphabet[(v >> 12) & 63];
        if (rem == 2) out[o++] = c->alphabet[(v >> 6) & 63];
        else if (c->pad) out[o++] = '=';
        if (c->pad) out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

/* returns decoded length, or -1 on malformed input; newlines are skipped */
long b64_decode(const b64_codec *c, const char *in, uint8_t *out)
{
    uint32_t acc = 0;
    int nbits = 0, pads = 0;
    long o = 0;
    size_t symbols = 0;
    for (const char *p = in; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '\n' || ch == '\r') continue;
        if (ch == '=') {
            pads++;
            symbols++;
            continue;
        }
        if (pads > 0) return -1; /* data after padding */
        int v = c->reverse[ch];
        if (v < 0) return -1;
        symbols++;
        acc = (acc << 6) | (uint32_t)v;
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            out[o++] = (uint8_t)(acc >> nbits);
            acc &= (1u << nbits) - 1u;
        }
    }
    if (pads > 2) return -1;
    if (c->pad && symbols % 4 != 0) return -1;
    if (!c->pad && pads > 0) return -1;
    if (symbols % 4 == 1) return -1;
    if (acc != 0) return -1; /* non-canonical trailing bits */
    return o;
}

static uint32_t lcg_state = 99991u;

static uint8_t next_byte(void)
{
    lcg_state = lcg_state * 214013u + 2531011u;
    return (uint8_t)(lcg_state >> 16);
}

int main(void)
{
    static const char *const rfc_plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const rfc_enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    static const char *const bad_inputs[] = {"Zg=", "Zm9v=Zm9v", "Z===", "Zm9*", "Zh==", "Z"};
    b64_codec std, url;
    char enc[512];
    uint8_t data[300], dec[300];
    int failures = 0;

    crc32_init_table();
    b64_codec_init(&std, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", true);
    b64_codec_init(&url, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", false);

    const uint8_t *digits = (const uint8_t *)"123456789";
    const char *fox = "The quick brown fox jumps over the lazy dog";
    if (crc32_bitwise(digits, 9) != 0xCBF43926u || crc32_update(0, digits, 9) != 0xCBF43926u) failures++;
    if (crc32_update(0, (const uint8_t *)fox, strlen(fox)) != 0x414FA339u) failures++;
    if (adler32((const uint8_t *)"Wikipedia", 9) != 0x11E60398u) failures++;

    for (size_t i = 0; i < sizeof data; i++) data[i] = next_byte();

    /* table vs bitwise, and streaming in uneven pieces */
    for (size_t n = 0; n <= sizeof data; n += 7) {
        uint32_t ref = crc32_bitwise(data, n);
        uint32_t streamed = 0;
        size_t off = 0, step = 1;
        while (off < n) {
            size_t take = step < n - off ? step : n - off;
            streamed = crc32_update(streamed, data + off, take);
            off += take;
            step = step * 2 + 1;
        }
        if (ref != crc32_update(0, data, n) || ref != streamed) failures++;
    }

    /* appending the little-endian CRC yields the fixed residue */
    uint8_t msg[16] = "hello world";
    uint32_t c = crc32_update(0, msg, 11);
    for (int k = 0; k < 4; k++) msg[11 + k] = (uint8_t)(c >> (8 * k));
    if (crc32_update(0, msg, 15) != 0x2144DF1Cu) failures++;

    for (size_t i = 0; i < sizeof rfc_plain / sizeof rfc_plain[0]; i++) {
        size_t n = strlen(rfc_plain[i]);
        b64_encode(&std, (const uint8_t *)rfc_plain[i], n, enc);
        if (strcmp(enc, rfc_enc[i]) != 0) failures++;
        long d = b64_decode(&std, rfc_enc[i], dec);
        if (d != (long)n || memcmp(dec, rfc_plain[i], n) != 0) failures++;
    }
    for (size_t i = 0; i < sizeof bad_inputs / sizeof bad_inputs[0]; i++)
        if (b64_decode(&std, bad_inputs[i], dec) != -1) failures++;

    static const uint8_t special[] = {0xfb, 0xff, 0xbe};
    b64_encode(&std, special, 2, enc);
    if (strcmp(enc, "+/8=") != 0) failures++;
    b64_encode(&url, special, 3, enc);
    if (strcmp(enc, "-_--") != 0) failures++;
    if (b64_decode(&url, "-_8", dec) != 2 || dec[0] != 0xfb || dec[1] != 0xff) failures++;
    if (b64_decode(&std, "TWFueSBoYW5kcyBt\nYWtlIGxpZ2h0IHdvcmsu\n", dec) != 27 ||
        memcmp(dec, "Many hands make light work.", 27) != 0)
        failures++;

    /* round trips for every length with both codecs */
    uint32_t mix = 0;
    for (size_t n = 0; n <= 120; n++) {
        const b64_codec *codecs[2] = {&std, &url};
        for (int k = 0; k < 2; k++) {
            size_t elen = b64_encode(codecs[k], data + n, n, enc);
            size_t want = codecs[k]->pad ? (n + 2) / 3 * 4 : (n * 4 + 2) / 3;
            if (elen != want) failures++;
            long d = b64_decode(codecs[k], enc, dec);
            if (d != (long)n || memcmp(dec, data + n, n) != 0) failures++;
            mix = crc32_update(mix, (const uint8_t *)enc, elen);
        }
    }

    printf("crc32_base64: mix=%08lx, %d failures\n", (unsigned long)mix, failures);
    return failures == 0 ? 0 : 1;
}
