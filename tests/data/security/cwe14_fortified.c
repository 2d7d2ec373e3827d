/* CWE-14: a secret on the stack cleared through a helper before return, the clear written as glibc's
   _FORTIFY_SOURCE headers expand memset. -Oz inlines the helper, learns the buffer's size and keeps the checked
   clear (`__memset_chk(key, 0, len, 32)`). Lowering the object size before inlining
   (`lower-constant-intrinsics,instcombine,inline,dse`) makes it a plain memset, which dead-store elimination
   then removes: the secret stays on the stack and the bounds check is gone. */
int use_key(char *key, int n);

static void wipe(char *p, unsigned long n) {
    __builtin___memset_chk(p, 0, n, __builtin_object_size(p, 0));
}

int session(int n) {
    char key[32];
    int len = use_key(key, n) & 31;
    wipe(key, len);
    return len;
}
