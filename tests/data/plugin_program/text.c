#include "program.h"

#include <ctype.h>
#include <string.h>

size_t split_words(char *text, char **words, size_t max_words) {
  size_t n = 0;
  char *p = text;
  while (*p && n < max_words) {
    while (*p && !isalnum((unsigned char)*p))
      *p++ = '\0';
    if (!*p)
      break;
    words[n++] = p;
    while (*p && isalnum((unsigned char)*p)) {
      *p = (char)tolower((unsigned char)*p);
      ++p;
    }
  }
  return n;
}

unsigned long text_hash(const char *text) {
  unsigned long h = 5381;
  for (const unsigned char *p = (const unsigned char *)text; *p; ++p)
    h = h * 33 + *p;
  return h;
}

void reverse_in_place(char *text) {
  size_t n = strlen(text);
  for (size_t i = 0; i < n / 2; ++i) {
    char c = text[i];
    text[i] = text[n - 1 - i];
    text[n - 1 - i] = c;
  }
}
