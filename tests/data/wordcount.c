/* Reads stdin and prints counts: a user program for differential testing. */
#include <stdio.h>

int main(int argc, char **argv) {
    int chars = 0, lines = 0, c;
    while ((c = getchar()) != EOF) {
        chars++;
        if (c == '\n') lines++;
    }
    printf("%d %d %s\n", lines, chars, argc > 1 ? argv[1] : "-");
    return lines > 2;
}
