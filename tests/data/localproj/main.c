/* A tiny program for dataset tests. */
#include <stdio.h>

int scale(int x);

int main(void) {
    printf("%d\n", scale(21));
    return 0;
}
