/* A self-testing program: exit status 0 when the checks hold. */
#include <stdlib.h>

static int sum_below(int n) {
    int total = 0;
    for (int i = 0; i < n; i++)
        total += i;
    return total;
}

int main(void) {
    if (sum_below(10) != 45) abort();
    if (sum_below(0) != 0) abort();
    return 0;
}
