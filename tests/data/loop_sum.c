/* Fixture: a loop, a switch and a call, so most passes have something to do. */
#include <string.h>

static int table[64];

static int classify(int x) {
    switch (x & 7) {
    case 0: return 3;
    case 1: return x * 2;
    case 2: return x - 1;
    case 5: return x ^ 0x55;
    default: return x;
    }
}

int checksum(const char *text, int rounds) {
    int sum = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < strlen(text); i++) {
            sum += classify(text[i] + r) * (int)(i + 1);
            table[(sum >> 3) & 63] += sum;
        }
    }
    return sum;
}

int main(void) {
    for (int i = 0; i < 64; i++) table[i] = i;
    return checksum("stitchopt fixture", 3) == 0;
}
