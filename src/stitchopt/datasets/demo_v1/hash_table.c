/* demo-v1: separate-chaining string hash table (FNV-1a, linked buckets, rehashing, deletion) */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    struct entry *next;
    uint32_t hash;
    long value;
    char key[];
} entry;

typedef struct {
    entry **buckets;
    size_t nbuckets; /* always a power of two */
    size_t count;
    size_t rehashes;
} hash_table;

typedef void (*visit_fn)(const char *key, long value, void *ctx);

uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 16777619u;
    }
    return h;
}

static bool ht_init(hash_table *t, size_t nbuckets)
{
    t->buckets = malloc(nbuckets * sizeof *t->buckets);
    if (!t->buckets)
        return false;
    for (size_t i = 0; i < nbuckets; i++)
        t->buckets[i] = NULL;
    t->nbuckets = nbuckets;
    t->count = 0;
    t->rehashes = 0;
    return true;
}

static void ht_free(hash_table *t)
{
    for (size_t i = 0; i < t->nbuckets; i++) {
        entry *e = t->buckets[i];
        while (e) {
            entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = NULL;
    t->nbuckets = t->count = 0;
}

static bool ht_grow(hash_table *t)
{
    size_t newn = t->nbuckets * 2;
    entry **nb = malloc(newn * sizeof *nb);
    if (!nb)
        return false;
    for (size_t i = 0; i < newn; i++)
        nb[i] = NULL;
    for (size_t i = 0; i < t->nbuckets; i++) {
        entry *e = t->buckets[i];
        while (e) {
            entry *next = e->next;
            size_t idx = e->hash & (newn - 1);
            e->next = nb[idx];
            nb[idx] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = nb;
    t->nbuckets = newn;
    t->rehashes++;
    return true;
}

/* Find an entry; on hit, move it to the front of its chain. */
static entry *ht_lookup(hash_table *t, const char *key, uint32_t h)
{
    entry **link = &t->buckets[h & (t->nbuckets - 1)];
    entry **head = link;
    while (*link) {
        entry *e = *link;
        if (e->hash == h && strcmp(e->key, key) == 0) {
            if (link != head) {
                *link = e->next;
                e->next = *head;
                *head = e;
            }
            return e;
        }
        link = &e->next;
    }
    return NULL;
}

bool ht_add(hash_table *t, const char *key, long delta)
{
    uint32_t h = fnv1a(key);
    entry *e = ht_lookup(t, key, h);
    if (e) {
        e->value += delta;
        return true;
    }
    if (t->count + 1 > t->nbuckets && !ht_grow(t))
        return false;
    size_t len = strlen(key);
    e = malloc(sizeof *e + len + 1);
    if (!e)
        return false;
    memcpy(e->key, key, len + 1);
    e->hash = h;
    e->value = delta;
    size_t idx = h & (t->nbuckets - 1);
    e->next = t->buckets[idx];
    t->buckets[idx] = e;
    t->count++;
    return true;
}

bool ht_get(hash_table *t, const char *key, long *out)
{
    entry *e = ht_lookup(t, key, fnv1a(key));
    if (!e)
        return false;
    *out = e->value;
    return true;
}

bool ht_remove(hash_table *t, const char *key)
{
    uint32_t h = fnv1a(key);
    entry **link = &t->buckets[h & (t->nbuckets - 1)];
    while (*link) {
        entry *e = *link;
        if (e->hash == h && strcmp(e->key, key) == 0) {
            *link = e->next;
            free(e);
            t->count--;
            return true;
        }
        link = &e->next;
    }
    return false;
}

static void ht_foreach(const hash_table *t, visit_fn fn, void *ctx)
{
    for (size_t i = 0; i < t->nbuckets; i++)
        for (const entry *e = t->buckets[i]; e; e = e->next)
            fn(e->key, e->value, ctx);
}

static size_t ht_longest_chain(const hash_table *t)
{
    size_t best = 0;
    for (size_t i = 0; i < t->nbuckets; i++) {
        size_t n = 0;
        for (const entry *e = t->buckets[i]; e; e = e->next)
            n++;
        if (n > best)
            best = n;
    }
    return best;
}

/* ---- deterministic test data ---- */

static uint32_t lcg_state = 12345u;

static uint32_t lcg_next(void)
{
    lcg_state = lcg_state * 1103515245u + 12345u;
    return (lcg_state >> 16) & 0x7fffu;
}

static const char *const syllables[] = {
    "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qu", "bri", "sho",
};

#define NWORDS 3000
#define WORDLEN 12

static void make_word(char *buf)
{
    size_t nsyl = 1 + lcg_next() % 3;
    buf[0] = '\0';
    for (size_t i = 0; i < nsyl; i++)
        strcat(buf, syllables[lcg_next() % (sizeof syllables / sizeof syllables[0])]);
}

static int cmp_words(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

struct sum_ctx {
    long total;
    size_t visited;
    unsigned long key_mix;
};

static void sum_visitor(const char *key, long value, void *ctx)
{
    struct sum_ctx *c = ctx;
    c->total += value;
    c->visited++;
    c->key_mix ^= fnv1a(key) * (unsigned long)value;
}

int main(void)
{
    static char words[NWORDS][WORDLEN];
    static char sorted[NWORDS][WORDLEN];
    hash_table t;
    int failures = 0;

    /* known FNV-1a test vectors */
    if (fnv1a("") != 0x811c9dc5u) failures++;
    if (fnv1a("a") != 0xe40c292cu) failures++;
    if (fnv1a("foobar") != 0xbf9cf968u) failures++;

    if (!ht_init(&t, 8))
        return 2;
    for (size_t i = 0; i < NWORDS; i++) {
        make_word(words[i]);
        if (!ht_add(&t, words[i], 1))
            return 2;
    }

    /* reference: sort a copy and count runs */
    memcpy(sorted, words, sizeof words);
    qsort(sorted, NWORDS, WORDLEN, cmp_words);
    size_t distinct = 0;
    for (size_t i = 0; i < NWORDS;) {
        size_t j = i;
        while (j < NWORDS && strcmp(sorted[i], sorted[j]) == 0)
            j++;
        long v = -1;
        if (!ht_get(&t, sorted[i], &v) || v != (long)(j - i))
            failures++;
        distinct++;
        i = j;
    }
    if (distinct != t.count) failures++;
    if (t.rehashes == 0) failures++;

    struct sum_ctx ctx = {0, 0, 0};
    ht_foreach(&t, sum_visitor, &ctx);
    if (ctx.total != NWORDS || ctx.visited != distinct) failures++;

    /* remove every key with an odd count, then verify survivors */
    size_t removed = 0;
    for (size_t i = 0; i < NWORDS;) {
        size_t j = i;
        while (j < NWORDS && strcmp(sorted[i], sorted[j]) == 0)
            j++;
        if ((j - i) % 2 == 1) {
            if (!ht_remove(&t, sorted[i])) failures++;
            if (ht_remove(&t, sorted[i])) failures++; /* second removal must fail */
            removed++;
        }
        i = j;
    }
    if (t.count != distinct - removed) failures++;
    for (size_t i = 0; i < NWORDS; i++) {
        long v;
        bool present = ht_get(&t, words[i], &v);
        if (present && v % 2 != 0) failures++;
    }
    long dummy;
    if (ht_get(&t, "notaword", &dummy)) failures++;
    if (ht_longest_chain(&t) > 16) failures++;

    printf("hash_table: %zu distinct, %zu removed, %zu rehashes, %d failures\n",
           distinct, removed, t.rehashes, failures);
    ht_free(&t);
    return failures == 0 ? 0 : 1;
}
