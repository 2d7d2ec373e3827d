/* Fixture for hot-path tests: `mix` runs 20,000 times inside `work`'s loop; `report` and the error branch
   run once or never. Takes an optional repeat count as its first argument. */
#include <stdio.h>
#include <stdlib.h>

static unsigned mix(unsigned x) {
    x ^= x >> 7;
    return x * 2654435761u;
}

static unsigned work(int n) {
    unsigned acc = 1;
    for (int i = 0; i < n; i++) {
        acc = mix(acc + (unsigned)i);
        if (acc == 0)
            acc = 1; /* almost never */
    }
    return acc;
}

static void report(unsigned value) {
    if (value == 42)
        puts("unlikely");
    printf("%u\n", value);
}

int main(int argc, char **argv) {
    int repeat = argc > 1 ? atoi(argv[1]) : 1;
    if (repeat < 0) {
        fputs("negative repeat\n", stderr);
        return 2;
    }
    unsigned total = 0;
    for (int r = 0; r < repeat; r++)
        total += work(20000);
    report(total);
    return 0;
}
