/* The same code as main.c with other local names and comments: normalization makes it a duplicate. */
#include <stdio.h>

int scale(int value);

int main(void) {
    /* print the answer */
    printf("%d\n", scale(21));
    return 0;
}
