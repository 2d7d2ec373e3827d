/* demo-v1: power-of-two ring buffer with overwrite mode, used for a sliding-window moving sum */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CAP 16u /* must be a power of two */

typedef struct {
    int32_t items[CAP];
    uint32_t head; /* free-running write counter */
    uint32_t tail; /* free-running read counter */
} ring;

static uint32_t ring_len(const ring *r) { return r->head - r->tail; }

bool ring_push(ring *r, int32_t v, bool overwrite)
{
    if (ring_len(r) == CAP) {
        if (!overwrite) return false;
        r->tail++;
    }
    r->items[r->head++ & (CAP - 1)] = v;
    return true;
}

bool ring_pop(ring *r, int32_t *out)
{
    if (ring_len(r) == 0) return false;
    *out = r->items[r->tail++ & (CAP - 1)];
    return true;
}

static int32_t ring_peek(const ring *r, uint32_t i) { return r->items[(r->tail + i) & (CAP - 1)]; }

int main(void)
{
    ring r = {{0}, UINT32_MAX - 40, UINT32_MAX - 40}; /* counters wrap during the test */
    int failures = 0;
    int32_t v, samples[1000];
    uint32_t seed = 1;

    for (int i = 0; i < 1000; i++) {
        seed = seed * 1664525u + 1013904223u;
        samples[i] = (int32_t)(seed >> 20) - 2048;
    }

    /* FIFO behaviour with back-pressure */
    int next_in = 0, next_out = 0;
    for (int step = 0; step < 400; step++) {
        int burst = (step * 7) % 5;
        for (int k = 0; k < burst; k++) {
            bool full = ring_len(&r) == CAP;
            if (ring_push(&r, samples[next_in], false) == full) failures++;
            if (!full) next_in++;
        }
        int drain = (step * 3) % 4;
        for (int k = 0; k < drain && ring_pop(&r, &v); k++)
            if (v != samples[next_out++]) failures++;
    }
    while (ring_pop(&r, &v))
        if (v != samples[next_out++]) failures++;
    if (next_out != next_in || ring_len(&r) != 0) failures++;

    /* overwrite mode as a sliding window: sum of the last CAP samples */
    int64_t window_sum = 0;
    for (int i = 0; i < 1000; i++) {
        if (ring_len(&r) == CAP) window_sum -= ring_peek(&r, 0);
        ring_push(&r, samples[i], true);
        window_sum += samples[i];
        int64_t ref = 0;
        for (int j = i; j >= 0 && j > i - (int)CAP; j--) ref += samples[j];
        if (ref != window_sum) failures++;
    }
    for (uint32_t i = 0; i < CAP; i++)
        if (ring_peek(&r, i) != samples[1000 - CAP + i]) failures++;

    printf("ring_buffer: %d items moved, %d failures\n", next_out, failures);
    return failures == 0 ? 0 : 1;
}
