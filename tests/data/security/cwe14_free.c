/* CWE-14: a secret on the heap cleared with memset before free. -Oz itself removes the memset (the memory is
   dead once freed): the guard's counts report it as removed by -Oz. */
#include <stdlib.h>
#include <string.h>

int use_key(const char *key, int n);

int with_key(int n) {
    char *key = malloc(32);
    if (!key)
        return -1;
    for (int i = 0; i < 32; i++)
        key[i] = (char)(n + i);
    int r = use_key(key, 32);
    memset(key, 0, 32);
    free(key);
    return r;
}
