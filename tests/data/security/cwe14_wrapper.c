/* CWE-14 behind a wrapper: `finish` clears a secret on its stack (glibc's _FORTIFY_SOURCE form of memset) and
   calls `scrub`, a shared helper (its address is in `hooks`) with a checked clear of its own. -Oz keeps both
   checked clears. Lowering the object size before inlining (`lower-constant-intrinsics,instcombine,inline,dse`,
   then `instcombine`) turns the wrapper's into a plain memset that dead-store elimination removes, and what is
   left of `finish` is a bare call of `scrub`: the shape of a thunk that `mergefunc` leaves, which must not be
   credited with `scrub`'s clear, since `finish` called `scrub` under -Oz too. */
void scrub(char *ctx, unsigned long n) __attribute__((noinline));

void scrub(char *ctx, unsigned long n) {
    __builtin___memset_chk(ctx, 0, n, 64);
}

void (*const hooks[])(char *, unsigned long) = {scrub};

static void wipe(char *p, unsigned long n) {
    __builtin___memset_chk(p, 0, n, __builtin_object_size(p, 0));
}

void finish(char *ctx, unsigned long n) {
    char key[32];
    wipe(key, n & 31);
    scrub(ctx, n);
}
