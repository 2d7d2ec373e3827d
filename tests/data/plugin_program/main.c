#include "program.h"

#include <stdio.h>
#include <string.h>

static const char *const lines[] = {
    "The quick brown fox jumps over the lazy dog",
    "the dog sleeps; the fox runs, and the quick fox wins",
    "A lazy afternoon: brown leaves, quick wind, the end",
};

int main(void) {
  struct table *t = table_new(17);
  char buffer[256];
  char *words[64];
  unsigned long checksum = 0;
  for (size_t i = 0; i < sizeof lines / sizeof *lines; ++i) {
    strcpy(buffer, lines[i]);
    size_t n = split_words(buffer, words, 64);
    for (size_t w = 0; w < n; ++w) {
      table_add(t, words[w], (long)w + 1);
      reverse_in_place(words[w]);
      checksum = checksum * 31 + text_hash(words[w]);
    }
  }
  size_t distinct = table_count(t);
  printf("words %zu the %ld fox %ld cat %ld checksum %lu\n", distinct, table_get(t, "the", 0),
         table_get(t, "fox", 0), table_get(t, "cat", -1), checksum);
  table_free(t);
  return distinct == 17 ? 0 : 1;
}
