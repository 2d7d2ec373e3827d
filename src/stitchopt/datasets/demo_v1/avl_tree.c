/* demo-v1: AVL tree with subtree sizes (insert, delete, rank/select, range count, iterator) vs array model */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct avl_node {
    struct avl_node *left, *right;
    int key;
    int height;
    int size;
    long value;
} avl_node;

typedef struct {
    avl_node *root;
    unsigned rotations;
} avl_tree;

static int height(const avl_node *n) { return n ? n->height : 0; }
static int size(const avl_node *n) { return n ? n->size : 0; }
static int max_int(int a, int b) { return a > b ? a : b; }

static void update(avl_node *n)
{
    n->height = 1 + max_int(height(n->left), height(n->right));
    n->size = 1 + size(n->left) + size(n->right);
}

static avl_node *rotate_right(avl_tree *t, avl_node *y)
{
    avl_node *x = y->left;
    y->left = x->right;
    x->right = y;
    update(y);
    update(x);
    t->rotations++;
    return x;
}

static avl_node *rotate_left(avl_tree *t, avl_node *x)
{
    avl_node *y = x->right;
    x->right = y->left;
    y->left = x;
    update(x);
    update(y);
    t->rotations++;
    return y;
}

static avl_node *rebalance(avl_tree *t, avl_node *n)
{
    update(n);
    int balance = height(n->left) - height(n->right);
    if (balance > 1) {
        if (height(n->left->left) < height(n->left->right)) n->left = rotate_left(t, n->left);
        return rotate_right(t, n);
    }
    if (balance < -1) {
        if (height(n->right->right) < height(n->right->left)) n->right = rotate_right(t, n->right);
        return rotate_left(t, n);
    }
    return n;
}

static avl_node *insert_rec(avl_tree *t, avl_node *n, int key, long value, bool *inserted)
{
    if (!n) {
        avl_node *fresh = malloc(sizeof *fresh);
        if (!fresh) return NULL;
        fresh->left = fresh->right = NULL;
        fresh->key = key;
        fresh->value = value;
        fresh->height = fresh->size = 1;
        *inserted = true;
        return fresh;
    }
    if (key < n->key) n->left = insert_rec(t, n->left, key, value, inserted);
    else if (key > n->key) n->right = insert_rec(t, n->right, key, value, inserted);
    else {
        n->value = value;
        return n;
    }
    return rebalance(t, n);
}

bool avl_insert(avl_tree *t, int key, long value)
{
    bool inserted = false;
    t->root = insert_rec(t, t->root, key, value, &inserted);
    return inserted;
}

static avl_node *remove_min(avl_tree *t, avl_node *n, avl_node **min_out)
{
    if (!n->left) {
        *min_out = n;
        return n->right;
    }
    n->left = remove_min(t, n->left, min_out);
    return rebalance(t, n);
}

static avl_node *erase_rec(avl_tree *t, avl_node *n, int key, bool *erased)
{
    if (!n) return NULL;
    if (key < n->key) n->left = erase_rec(t, n->left, key, erased);
    else if (key > n->key) n->right = erase_rec(t, n->right, key, erased);
    else {
        avl_node *l = n->left, *r = n->right;
        free(n);
        *erased = true;
        if (!r) return l;
        avl_node *m;
        r = remove_min(t, r, &m);
        m->left = l;
        m->right = r;
        return rebalance(t, m);
    }
    return rebalance(t, n);
}

bool avl_erase(avl_tree *t, int key)
{
    bool erased = false;
    t->root = erase_rec(t, t->root, key, &erased);
    return erased;
}

const avl_node *avl_find(const avl_tree *t, int key)
{
    const avl_node *n = t->root;
    while (n && n->key != key) n = key < n->key ? n->left : n->right;
    return n;
}

/* number of keys strictly less than key */
static int avl_rank(const avl_tree *t, int key)
{
    int r = 0;
    const avl_node *n = t->root;
    while (n) {
        if (key <= n->key) n = n->left;
        else {
            r += size(n->left) + 1;
            n = n->right;
        }
    }
    return r;
}

/* k-th smallest key (0-based); returns NULL if out of range */
static const avl_node *avl_select(const avl_tree *t, int k)
{
    const avl_node *n = t->root;
    while (n) {
        int ls = size(n->left);
        if (k < ls) n = n->left;
        else if (k == ls) return n;
        else {
            k -= ls + 1;
            n = n->right;
        }
    }
    return NULL;
}

static int avl_range_count(const avl_tree *t, int lo, int hi) { return avl_rank(t, hi + 1) - avl_rank(t, lo); }

/* in-order iterator with an explicit stack */
typedef struct {
    const avl_node *stack[64];
    int top;
} avl_iter;

static void iter_push_left(avl_iter *it, const avl_node *n)
{
    while (n) {
        it->stack[it->top++] = n;
        n = n->left;
    }
}

static void iter_init(avl_iter *it, const avl_tree *t)
{
    it->top = 0;
    iter_push_left(it, t->root);
}

static const avl_node *iter_next(avl_iter *it)
{
    if (it->top == 0) return NULL;
    const avl_node *n = it->stack[--it->top];
    iter_push_left(it, n->right);
    return n;
}

/* returns height, or -1 if any invariant is broken */
static int validate(const avl_node *n, long lo, long hi)
{
    if (!n) return 0;
    if (n->key <= lo || n->key >= hi) return -1;
    int hl = validate(n->left, lo, n->key);
    int hr = validate(n->right, n->key, hi);
    if (hl < 0 || hr < 0) return -1;
    if (hl - hr > 1 || hr - hl > 1) return -1;
    if (n->height != 1 + max_int(hl, hr)) return -1;
    if (n->size != 1 + size(n->left) + size(n->right)) return -1;
    return n->height;
}

static void destroy(avl_node *n)
{
    if (!n) return;
    destroy(n->left);
    destroy(n->right);
    free(n);
}

#define UNIVERSE 4096
#define OPS 20000

static uint32_t state = 2463534242u;
static uint32_t xorshift(void)
{
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

static int count_present(const bool *present, int lo, int hi)
{
    int c = 0;
    for (int k = lo; k <= hi; k++) c += present[k];
    return c;
}

int main(void)
{
    static bool present[UNIVERSE];
    static long values[UNIVERSE];
    avl_tree t = {NULL, 0};
    int failures = 0, live = 0;

    for (int op = 0; op < OPS; op++) {
        uint32_t r = xorshift();
        int key = (int)(r % UNIVERSE);
        switch ((r >> 12) % 4) {
        case 0:
        case 1: {
            long v = (long)(r >> 8);
            bool ins = avl_insert(&t, key, v);
            if (ins == present[key]) failures++;
            if (!present[key]) live++;
            present[key] = true;
            values[key] = v;
            break;
        }
        case 2: {
            bool er = avl_erase(&t, key);
            if (er != present[key]) failures++;
            if (present[key]) live--;
            present[key] = false;
            break;
        }
        default: {
            const avl_node *n = avl_find(&t, key);
            if ((n != NULL) != present[key] || (n && n->value != values[key])) failures++;
            break;
        }
        }
        if (op % 2500 == 0 || op == OPS - 1) {
            int h = validate(t.root, -1, UNIVERSE);
            if (h < 0 || size(t.root) != live) failures++;
            /* AVL height bound: h < 1.4405 * log2(n + 2) */
            int bound = 0;
            for (int n = live + 2; n > 1; n >>= 1) bound++;
            if (h * 10000 > 14405 * (bound + 1)) failures++;
        }
    }

    /* ordered traversal matches the model */
    avl_iter it;
    iter_init(&it, &t);
    int expect = 0, visited = 0;
    for (const avl_node *n = iter_next(&it); n; n = iter_next(&it)) {
        while (expect < UNIVERSE && !present[expect]) expect++;
        if (n->key != expect || n->value != values[expect]) failures++;
        expect++;
        visited++;
    }
    if (visited != live) failures++;

    /* rank / select / range queries */
    for (int k = 0; k < live; k += 37) {
        const avl_node *n = avl_select(&t, k);
        if (!n || avl_rank(&t, n->key) != k) failures++;
    }
    if (avl_select(&t, live) != NULL) failures++;
    for (int lo = 0; lo < UNIVERSE; lo += 301) {
        int hi = lo + 450;
        if (hi >= UNIVERSE) hi = UNIVERSE - 1;
        if (avl_range_count(&t, lo, hi) != count_present(present, lo, hi)) failures++;
    }

    /* drain in a scrambled order */
    for (int i = 0; i < UNIVERSE; i++) {
        int k = (i * 2719) % UNIVERSE;
        if (avl_erase(&t, k) != present[k]) failures++;
        present[k] = false;
    }
    if (t.root != NULL) failures++;

    printf("avl_tree: %d live keys at end of ops, %u rotations, %d failures\n", live, t.rotations, failures);
    destroy(t.root);
    return failures == 0 ? 0 : 1;
}
