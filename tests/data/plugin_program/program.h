/* A small multi-file program for the clang plugin's tests: a hash table, text utilities, and a driver. */
#ifndef PROGRAM_H
#define PROGRAM_H

#include <stddef.h>

struct table;
struct table *table_new(size_t buckets);
void table_free(struct table *t);
void table_add(struct table *t, const char *key, long value);
long table_get(const struct table *t, const char *key, long missing);
size_t table_count(const struct table *t);

size_t split_words(char *text, char **words, size_t max_words);
unsigned long text_hash(const char *text);
void reverse_in_place(char *text);

#endif
