/* A library file for dataset tests: its code depends on a define from the build. */
int scale(int x) {
#ifdef SCALE_BY_THREE
    return 3 * x;
#else
    return 2 * x;
#endif
}
