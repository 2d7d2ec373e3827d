/* CWE-733: checks guarding out-of-bounds and overflow paths. The bound check in `lookup` can be proven dead
   (the index is masked), so every optimizer may drop it; the overflow check in `checked_add` must stay. */
#include <stdlib.h>

static int table[16];

int lookup(unsigned i) {
    i &= 15;
    if (i >= 16)
        abort();
    return table[i];
}

int checked_add(int a, int b) {
    int r;
    if (__builtin_add_overflow(a, b, &r))
        abort();
    return r;
}

void store_secret(volatile char *out, char value) {
    *out = value;
}
