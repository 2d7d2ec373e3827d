#include "program.h"

#include <stdlib.h>
#include <string.h>

struct entry {
  char *key;
  long value;
  struct entry *next;
};

struct table {
  size_t buckets;
  size_t count;
  struct entry **slots;
};

struct table *table_new(size_t buckets) {
  struct table *t = malloc(sizeof *t);
  if (!t)
    return NULL;
  t->buckets = buckets ? buckets : 1;
  t->count = 0;
  t->slots = calloc(t->buckets, sizeof *t->slots);
  return t;
}

void table_free(struct table *t) {
  for (size_t i = 0; i < t->buckets; ++i) {
    struct entry *e = t->slots[i];
    while (e) {
      struct entry *next = e->next;
      free(e->key);
      free(e);
      e = next;
    }
  }
  free(t->slots);
  free(t);
}

void table_add(struct table *t, const char *key, long value) {
  size_t slot = text_hash(key) % t->buckets;
  for (struct entry *e = t->slots[slot]; e; e = e->next)
    if (strcmp(e->key, key) == 0) {
      e->value += value;
      return;
    }
  struct entry *e = malloc(sizeof *e);
  e->key = malloc(strlen(key) + 1);
  strcpy(e->key, key);
  e->value = value;
  e->next = t->slots[slot];
  t->slots[slot] = e;
  t->count++;
}

long table_get(const struct table *t, const char *key, long missing) {
  for (const struct entry *e = t->slots[text_hash(key) % t->buckets]; e; e = e->next)
    if (strcmp(e->key, key) == 0)
      return e->value;
  return missing;
}

size_t table_count(const struct table *t) { return t->count; }
