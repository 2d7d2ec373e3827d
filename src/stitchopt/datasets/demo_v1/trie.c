/* demo-v1: pooled prefix trie with counts, deletion, autocomplete and longest-prefix match */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALPHA 26
#define MAX_WORD 24

typedef struct {
    int32_t child[ALPHA];
    uint32_t terminal; /* number of times this exact word was inserted */
    uint32_t passing;  /* number of inserted words in this subtree */
} trie_node;

typedef struct {
    trie_node *nodes;
    size_t count, cap;
} trie;

typedef void (*word_visitor)(const char *word, uint32_t mult, void *ctx);

static int32_t trie_alloc(trie *t)
{
    if (t->count == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        trie_node *n = realloc(t->nodes, ncap * sizeof *n);
        if (!n) return -1;
        t->nodes = n;
        t->cap = ncap;
    }
    trie_node *nd = &t->nodes[t->count];
    for (int i = 0; i < ALPHA; i++) nd->child[i] = -1;
    nd->terminal = nd->passing = 0;
    return (int32_t)t->count++;
}

static bool trie_init(trie *t)
{
    t->nodes = NULL;
    t->count = t->cap = 0;
    return trie_alloc(t) == 0;
}

bool trie_insert(trie *t, const char *w)
{
    size_t len = strlen(w);
    if (len >= MAX_WORD) return false;
    for (size_t i = 0; i < len; i++)
        if (w[i] < 'a' || w[i] > 'z') return false;
    int32_t cur = 0;
    t->nodes[0].passing++;
    for (; *w; w++) {
        int c = *w - 'a';
        if (t->nodes[cur].child[c] < 0) {
            int32_t n = trie_alloc(t); /* may move t->nodes */
            if (n < 0) return false;
            t->nodes[cur].child[c] = n;
        }
        cur = t->nodes[cur].child[c];
        t->nodes[cur].passing++;
    }
    t->nodes[cur].terminal++;
    return true;
}

static int32_t trie_walk(const trie *t, const char *prefix)
{
    int32_t cur = 0;
    for (; *prefix && cur >= 0; prefix++) cur = t->nodes[cur].child[*prefix - 'a'];
    return cur;
}

uint32_t trie_count(const trie *t, const char *w)
{
    int32_t n = trie_walk(t, w);
    return n < 0 ? 0 : t->nodes[n].terminal;
}

static uint32_t trie_prefix_count(const trie *t, const char *prefix)
{
    int32_t n = trie_walk(t, prefix);
    return n < 0 ? 0 : t->nodes[n].passing;
}

/* removes one occurrence; nodes are kept but their counts drop to zero */
static bool trie_remove(trie *t, const char *w)
{
    if (trie_count(t, w) == 0) return false;
    int32_t cur = 0;
    t->nodes[0].passing--;
    for (; *w; w++) {
        cur = t->nodes[cur].child[*w - 'a'];
        t->nodes[cur].passing--;
    }
    t->nodes[cur].terminal--;
    return true;
}

/* length of the longest inserted word that is a prefix of s, or -1 */
static int trie_longest_prefix(const trie *t, const char *s)
{
    int best = t->nodes[0].terminal ? 0 : -1;
    int32_t cur = 0;
    for (int i = 0; s[i]; i++) {
        cur = t->nodes[cur].child[s[i] - 'a'];
        if (cur < 0 || t->nodes[cur].passing == 0) break;
        if (t->nodes[cur].terminal) best = i + 1;
    }
    return best;
}

static size_t visit_rec(const trie *t, int32_t node, char *buf, size_t depth, size_t limit, word_visitor fn,
                        void *ctx)
{
    size_t emitted = 0;
    if (t->nodes[node].passing == 0) return 0;
    if (t->nodes[node].terminal) {
        buf[depth] = '\0';
        fn(buf, t->nodes[node].terminal, ctx);
        emitted++;
    }
    for (int c = 0; c < ALPHA && emitted < limit; c++) {
        int32_t ch = t->nodes[node].child[c];
        if (ch < 0 || depth + 1 >= MAX_WORD) continue;
        buf[depth] = (char)('a' + c);
        emitted += visit_rec(t, ch, buf, depth + 1, limit - emitted, fn, ctx);
    }
    return emitted;
}

/* visit up to limit distinct words starting with prefix, in lexicographic order */
size_t trie_complete(const trie *t, const char *prefix, size_t limit, word_visitor fn, void *ctx)
{
    char buf[MAX_WORD];
    size_t plen = strlen(prefix);
    int32_t n = trie_walk(t, prefix);
    if (n < 0 || plen >= MAX_WORD || limit == 0) return 0;
    memcpy(buf, prefix, plen);
    return visit_rec(t, n, buf, plen, limit, fn, ctx);
}

/* ---- test harness ---- */

#define NWORDS 900

static char words[NWORDS][MAX_WORD];
static char sorted[NWORDS][MAX_WORD];

static void make_words(void)
{
    static const char *const parts[] = {"an", "ant", "be", "bet", "car", "ca", "t", "ion", "re", "s", "ter", "x"};
    uint32_t s = 31337u;
    for (int i = 0; i < NWORDS; i++) {
        s = s * 1664525u + 1013904223u;
        int nparts = 1 + (int)((s >> 28) % 3);
        words[i][0] = '\0';
        for (int k = 0; k < nparts; k++) {
            s = s * 1664525u + 1013904223u;
            strcat(words[i], parts[(s >> 16) % 12]);
        }
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(a, b); }

struct collect_ctx {
    char got[16][MAX_WORD];
    size_t n;
    uint32_t mult_sum;
};

static void collect(const char *word, uint32_t mult, void *vctx)
{
    struct collect_ctx *c = vctx;
    if (c->n < 16) strcpy(c->got[c->n], word);
    c->n++;
    c->mult_sum += mult;
}

static bool starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int check_all(const trie *t, int live_from)
{
    static const char *const prefixes[] = {"", "a", "an", "ant", "be", "ca", "car", "re", "t", "ter", "z", "xx"};
    int failures = 0;
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        const char *pre = prefixes[p];
        uint32_t ref = 0;
        for (int i = live_from; i < NWORDS; i++) ref += starts_with(words[i], pre);
        if (trie_prefix_count(t, pre) != ref) failures++;

        /* reference autocomplete: first 10 distinct sorted live words with this prefix */
        int nsorted = NWORDS - live_from;
        memcpy(sorted, words[live_from], (size_t)nsorted * MAX_WORD);
        qsort(sorted, (size_t)nsorted, MAX_WORD, cmp_str);
        struct collect_ctx c;
        memset(&c, 0, sizeof c);
        trie_complete(t, pre, 10, collect, &c);
        size_t k = 0;
        for (int i = 0; i < nsorted && k < 10; i++) {
            if (!starts_with(sorted[i], pre) || (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)) continue;
            if (k >= c.n || strcmp(c.got[k], sorted[i]) != 0) failures++;
            k++;
        }
        if (k != c.n) failures++;
    }
    for (int i = 0; i < NWORDS; i += 13) {
        uint32_t ref = 0;
        for (int j = live_from; j < NWORDS; j++) ref += strcmp(words[i], words[j]) == 0;
        if (trie_count(t, words[i]) != ref) failures++;
    }
    return failures;
}

int main(void)
{
    trie t;
    int failures = 0;
    if (!trie_init(&t)) return 2;
    make_words();
    for (int i = 0; i < NWORDS; i++)
        if (!trie_insert(&t, words[i])) failures++;
    if (trie_insert(&t, "Bad") || trie_insert(&t, "has space")) failures++;

    failures += check_all(&t, 0);

    if (trie_longest_prefix(&t, "antion") < 2) failures++;
    if (trie_longest_prefix(&t, "zzz") != -1) failures++;

    /* remove the first half of the insertions and re-check */
    for (int i = 0; i < NWORDS / 2; i++)
        if (!trie_remove(&t, words[i])) failures++;
    if (trie_remove(&t, "qqq")) failures++;
    failures += check_all(&t, NWORDS / 2);

    size_t nodes = t.count;
    printf("trie: %zu nodes, %d failures\n", nodes, failures);
    free(t.nodes);
    return failures == 0 ? 0 : 1;
}
