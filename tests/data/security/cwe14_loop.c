/* CWE-14: a secret on the stack cleared by a loop before return. -Oz keeps the loop: functions built for size
   are not rotated, so the loop never becomes a memset that dead-store elimination could drop. */
int use_key(const char *key, int n);

int with_key(int n) {
    char key[16];
    for (int i = 0; i < 16; i++)
        key[i] = (char)(n * 7 + i);
    int r = use_key(key, 16);
    for (int i = 0; i < 16; i++)
        key[i] = 0;
    return r;
}
