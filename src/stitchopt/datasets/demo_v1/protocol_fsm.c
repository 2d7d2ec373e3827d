/* demo-v1: HDLC-style framing (byte stuffing, CRC-16) with a decoder FSM and a session state machine */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FLAG 0x7E
#define ESC 0x7D
#define ESC_XOR 0x20
#define MAX_PAYLOAD 64
#define MAX_BODY (MAX_PAYLOAD + 5)

enum msg_type { M_HELLO = 1, M_AUTH, M_DATA, M_PING, M_BYE };
enum session_state { S_IDLE, S_GREETED, S_AUTHED, S_CLOSED };
enum rx_state { RX_HUNT, RX_FRAME, RX_ESCAPE };

uint16_t crc16_ccitt(const uint8_t *data, size_t len)
{
    uint16_t crc = 0xFFFF;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(data[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

static size_t put_stuffed(uint8_t *out, size_t n, uint8_t byte)
{
    if (byte == FLAG || byte == ESC) {
        out[n++] = ESC;
        out[n++] = byte ^ ESC_XOR;
    } else {
        out[n++] = byte;
    }
    return n;
}

/* out needs room for 2 + 2 * MAX_BODY bytes */
size_t frame_encode(uint8_t type, uint8_t seq, const uint8_t *payload, uint8_t len, uint8_t *out)
{
    uint8_t body[MAX_BODY];
    size_t blen = 0, n = 0;
    body[blen++] = type;
    body[blen++] = seq;
    body[blen++] = len;
    memcpy(body + blen, payload, len);
    blen += len;
    uint16_t crc = crc16_ccitt(body, blen);
    body[blen++] = (uint8_t)(crc >> 8);
    body[blen++] = (uint8_t)(crc & 0xFF);
    out[n++] = FLAG;
    for (size_t i = 0; i < blen; i++) n = put_stuffed(out, n, body[i]);
    out[n++] = FLAG;
    return n;
}

/* ---- ring buffer between the "wire" and the decoder ---- */

#define RING_CAP 64

typedef struct {
    uint8_t buf[RING_CAP];
    size_t head, tail, count;
} ring;

static size_t ring_push(ring *r, const uint8_t *src, size_t n)
{
    size_t done = 0;
    while (done < n && r->count < RING_CAP) {
        r->buf[r->head] = src[done++];
        r->head = (r->head + 1) % RING_CAP;
        r->count++;
    }
    return done;
}

static bool ring_pop(ring *r, uint8_t *out)
{
    if (r->count == 0) return false;
    *out = r->buf[r->tail];
    r->tail = (r->tail + 1) % RING_CAP;
    r->count--;
    return true;
}

/* ---- decoder FSM ---- */

typedef void (*frame_sink)(void *ctx, uint8_t type, uint8_t seq, const uint8_t *payload, uint8_t len);

typedef struct {
    enum rx_state state;
    uint8_t body[MAX_BODY];
    size_t len;
    bool overflow;
    unsigned crc_errors, runts, overflows, frames;
    frame_sink sink;
    void *ctx;
} decoder;

static void decoder_finish(decoder *d)
{
    if (d->len == 0 && !d->overflow) return; /* back-to-back flags */
    if (d->overflow) {
        d->overflows++;
    } else if (d->len < 5 || d->body[2] != d->len - 5) {
        d->runts++;
    } else {
        uint16_t want = (uint16_t)((d->body[d->len - 2] << 8) | d->body[d->len - 1]);
        if (crc16_ccitt(d->body, d->len - 2) != want) {
            d->crc_errors++;
        } else {
            d->frames++;
            d->sink(d->ctx, d->body[0], d->body[1], d->body + 3, d->body[2]);
        }
    }
    d->len = 0;
    d->overflow = false;
}

void decoder_feed(decoder *d, uint8_t byte)
{
    switch (d->state) {
    case RX_HUNT:
        if (byte == FLAG) {
            d->state = RX_FRAME;
            d->len = 0;
            d->overflow = false;
        }
        break;
    case RX_FRAME:
        if (byte == FLAG) {
            decoder_finish(d);
            break;
        }
        if (byte == ESC) {
            d->state = RX_ESCAPE;
            break;
        }
        if (d->len < MAX_BODY) d->body[d->len++] = byte;
        else d->overflow = true;
        break;
    case RX_ESCAPE:
        if (byte == FLAG) { /* abort sequence */
            d->runts++;
            d->len = 0;
            d->state = RX_FRAME;
            break;
        }
        if (d->len < MAX_BODY) d->body[d->len++] = byte ^ ESC_XOR;
        else d->overflow = true;
        d->state = RX_FRAME;
        break;
    }
}

/* ---- session state machine ---- */

typedef struct {
    enum session_state state;
    uint8_t expected_seq;
    unsigned lost, violations, auth_failures, pongs, data_bytes;
    uint32_t data_hash;
} session;

typedef bool (*msg_handler)(session *s, const uint8_t *payload, uint8_t len);

static bool on_hello(session *s, const uint8_t *payload, uint8_t len)
{
    (void)payload;
    (void)len;
    if (s->state != S_IDLE) return false;
    s->state = S_GREETED;
    return true;
}

static bool on_auth(session *s, const uint8_t *payload, uint8_t len)
{
    static const char secret[] = "s3cret";
    if (s->state != S_GREETED) return false;
    if (len == sizeof secret - 1 && memcmp(payload, secret, len) == 0) s->state = S_AUTHED;
    else s->auth_failures++;
    return true;
}

static bool on_data(session *s, const uint8_t *payload, uint8_t len)
{
    if (s->state != S_AUTHED) return false;
    for (uint8_t i = 0; i < len; i++) s->data_hash = s->data_hash * 31u + payload[i];
    s->data_bytes += len;
    return true;
}

static bool on_ping(session *s, const uint8_t *payload, uint8_t len)
{
    (void)payload;
    (void)len;
    if (s->state == S_IDLE || s->state == S_CLOSED) return false;
    s->pongs++;
    return true;
}

static bool on_bye(session *s, const uint8_t *payload, uint8_t len)
{
    (void)payload;
    (void)len;
    if (s->state != S_GREETED && s->state != S_AUTHED) return false;
    s->state = S_CLOSED;
    return true;
}

static const msg_handler handlers[] = {NULL, on_hello, on_auth, on_data, on_ping, on_bye};

static void session_sink(void *ctx, uint8_t type, uint8_t seq, const uint8_t *payload, uint8_t len)
{
    session *s = ctx;
    if (seq != s->expected_seq) s->lost += (uint8_t)(seq - s->expected_seq);
    s->expected_seq = (uint8_t)(seq + 1);
    msg_handler h = type < sizeof handlers / sizeof handlers[0] ? handlers[type] : NULL;
    if (!h || !h(s, payload, len)) s->violations++;
}

/* ---- scenario ---- */

static uint8_t wire[4096];
static size_t wire_len;

static void emit(uint8_t type, uint8_t seq, const void *payload, uint8_t len)
{
    wire_len += frame_encode(type, seq, payload, len, wire + wire_len);
}

static void data_payload(int i, uint8_t *buf, uint8_t *len)
{
    *len = (uint8_t)(1 + (i * 3) % 17);
    for (uint8_t j = 0; j < *len; j++) buf[j] = (uint8_t)(i * 37 + j * 11 + 0x5A);
}

int main(void)
{
    int failures = 0;
    uint8_t buf[MAX_PAYLOAD], len;
    uint32_t ref_hash = 0;
    unsigned ref_bytes = 0, escapes = 0;

    if (crc16_ccitt((const uint8_t *)"123456789", 9) != 0x29B1) failures++;

    emit(M_HELLO, 0, "", 0);
    emit(M_AUTH, 1, "wrong", 5);
    emit(M_AUTH, 2, "s3cret", 6);
    for (int i = 0; i < 20; i++) {
        data_payload(i, buf, &len);
        emit(M_DATA, (uint8_t)(3 + i), buf, len);
        for (uint8_t j = 0; j < len; j++) {
            ref_hash = ref_hash * 31u + buf[j];
            escapes += buf[j] == FLAG || buf[j] == ESC;
        }
        ref_bytes += len;
        if (i == 2) {
            static const uint8_t noise[] = {0x01, 0x02, 0x03};
            memcpy(wire + wire_len, noise, sizeof noise);
            wire_len += sizeof noise;
        }
    }
    size_t corrupt_at = wire_len + 8;
    emit(M_DATA, 23, "corrupt me", 10);
    wire[corrupt_at] ^= 0x01;
    emit(M_PING, 24, "", 0);
    emit(M_PING, 26, "p", 1);
    emit(M_BYE, 27, "", 0);
    emit(M_DATA, 28, "late", 4);
    emit(9, 29, "??", 2);
    wire[wire_len++] = FLAG; /* trailing partial frame */
    wire[wire_len++] = M_PING;

    session s;
    memset(&s, 0, sizeof s);
    decoder d;
    memset(&d, 0, sizeof d);
    d.sink = session_sink;
    d.ctx = &s;

    /* move the wire through a small ring buffer in irregular chunks */
    ring r = {{0}, 0, 0, 0};
    uint32_t lcg = 7u;
    size_t sent = 0;
    while (sent < wire_len || r.count > 0) {
        lcg = lcg * 1103515245u + 12345u;
        size_t chunk = 1 + (lcg >> 16) % 23;
        if (chunk > wire_len - sent) chunk = wire_len - sent;
        sent += ring_push(&r, wire + sent, chunk);
        size_t drain = 1 + (lcg >> 8) % 19;
        uint8_t byte;
        while (drain-- > 0 && ring_pop(&r, &byte)) decoder_feed(&d, byte);
    }

    if (d.frames != 28 || d.crc_errors != 1 || d.runts != 1 || d.overflows != 0) failures++;
    if (d.state != RX_FRAME || d.len != 1) failures++;
    if (s.state != S_CLOSED || s.lost != 2 || s.violations != 2) failures++;
    if (s.auth_failures != 1 || s.pongs != 2) failures++;
    if (s.data_bytes != ref_bytes || s.data_hash != ref_hash) failures++;
    if (escapes == 0) failures++; /* the data must exercise byte stuffing */

    printf("protocol_fsm: %zu wire bytes, %u frames, %u escaped bytes, %d failures\n", wire_len, d.frames,
           escapes, failures);
    return failures == 0 ? 0 : 1;
}
