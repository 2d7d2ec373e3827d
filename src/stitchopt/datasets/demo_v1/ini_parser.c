/* demo-v1: INI configuration parser with sections, quoting, continuations and typed lookups */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*ini_handler)(void *user, const char *section, const char *key, const char *value);

#define LINE_MAX_LEN 256
#define NAME_MAX_LEN 32
#define MAX_ENTRIES 64

typedef struct {
    char section[NAME_MAX_LEN];
    char key[NAME_MAX_LEN];
    char value[LINE_MAX_LEN];
} ini_entry;

typedef struct {
    ini_entry entries[MAX_ENTRIES];
    int count;
    int overrides;
} ini_store;

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) end--;
    *end = '\0';
    return s;
}

static int ci_compare(const char *a, const char *b)
{
    for (;; a++, b++) {
        int ca = tolower((unsigned char)*a), cb = tolower((unsigned char)*b);
        if (ca != cb || ca == '\0') return ca - cb;
    }
}

/* Unquote in place; strips inline comments from unquoted values. Returns false on bad quoting. */
static bool clean_value(char *v)
{
    if (*v == '"') {
        char *src = v + 1, *dst = v;
        while (*src && *src != '"') {
            if (*src == '\\' && src[1]) {
                src++;
                switch (*src) {
                case 'n': *dst++ = '\n'; break;
                case 't': *dst++ = '\t'; break;
                default: *dst++ = *src; break;
                }
                src++;
            } else {
                *dst++ = *src++;
            }
        }
        if (*src != '"') return false;
        *dst = '\0';
        src = trim(src + 1);
        return *src == '\0' || *src == ';' || *src == '#';
    }
    for (char *p = v; *p; p++) {
        if ((*p == ';' || *p == '#') && (p == v || isspace((unsigned char)p[-1]))) {
            *p = '\0';
            break;
        }
    }
    char *t = trim(v);
    memmove(v, t, strlen(t) + 1);
    return true;
}

/* Returns 0 on success or the 1-based line number of the first error. */
int ini_parse_string(const char *text, ini_handler handler, void *user)
{
    char section[NAME_MAX_LEN] = "";
    char line[LINE_MAX_LEN];
    int lineno = 0;
    const char *p = text;

    while (*p) {
        size_t n = 0;
        int first_line = ++lineno;
        /* gather one logical line, joining backslash continuations */
        for (;;) {
            while (*p && *p != '\n') {
                if (n + 1 >= sizeof line) return first_line;
                line[n++] = *p++;
            }
            if (*p == '\n') p++;
            if (n > 0 && line[n - 1] == '\r') n--;
            if (n > 0 && line[n - 1] == '\\' && *p) {
                n--;
                lineno++;
                while (*p == ' ' || *p == '\t') p++;
                continue;
            }
            break;
        }
        line[n] = '\0';
        char *s = trim(line);
        switch (*s) {
        case '\0':
        case ';':
        case '#':
            continue;
        case '[': {
            char *close = strchr(s, ']');
            if (!close) return first_line;
            *close = '\0';
            char *name = trim(s + 1);
            if (*name == '\0' || strlen(name) >= sizeof section) return first_line;
            strcpy(section, name);
            if (*trim(close + 1) != '\0') return first_line;
            continue;
        }
        default: {
            char *sep = strpbrk(s, "=:");
            if (!sep) return first_line;
            *sep = '\0';
            char *key = trim(s);
            char *value = trim(sep + 1);
            if (*key == '\0' || strlen(key) >= NAME_MAX_LEN) return first_line;
            if (!clean_value(value)) return first_line;
            if (!handler(user, section, key, value)) return first_line;
        }
        }
    }
    return 0;
}

static int store_handler(void *user, const char *section, const char *key, const char *value)
{
    ini_store *st = user;
    for (int i = 0; i < st->count; i++) {
        ini_entry *e = &st->entries[i];
        if (ci_compare(e->section, section) == 0 && ci_compare(e->key, key) == 0) {
            snprintf(e->value, sizeof e->value, "%s", value);
            st->overrides++;
            return 1;
        }
    }
    if (st->count >= MAX_ENTRIES) return 0;
    ini_entry *e = &st->entries[st->count++];
    snprintf(e->section, sizeof e->section, "%s", section);
    snprintf(e->key, sizeof e->key, "%s", key);
    snprintf(e->value, sizeof e->value, "%s", value);
    return 1;
}

const char *ini_get(const ini_store *st, const char *section, const char *key, const char *def)
{
    for (int i = 0; i < st->count; i++)
        if (ci_compare(st->entries[i].section, section) == 0 && ci_compare(st->entries[i].key, key) == 0)
            return st->entries[i].value;
    return def;
}

long ini_get_int(const ini_store *st, const char *section, const char *key, long def)
{
    const char *v = ini_get(st, section, key, NULL);
    if (!v) return def;
    char *end;
    long r = strtol(v, &end, 0);
    return (end == v || *end != '\0') ? def : r;
}

bool ini_get_bool(const ini_store *st, const char *section, const char *key, bool def)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    const char *v = ini_get(st, section, key, NULL);
    if (!v) return def;
    for (size_t i = 0; i < 4; i++) {
        if (ci_compare(v, yes[i]) == 0) return true;
        if (ci_compare(v, no[i]) == 0) return false;
    }
    return def;
}

static int count_handler(void *user, const char *section, const char *key, const char *value)
{
    (void)section;
    (void)key;
    (void)value;
    ++*(int *)user;
    return 1;
}

static const char config_text[] =
    "; global settings\n"
    "name = demo service\n"
    "version: 3\n"
    "\n"
    "[server]\n"
    "  host = 127.0.0.1   ; loopback only\n"
    "port=0x1F90\n"
    "Debug = Yes\n"
    "banner = \"Welcome; \\\"friend\\\"\\n\"  # trailing comment\n"
    "path = /srv/www#anchor\n"
    "\n"
    "[ database ]\r\n"
    "url = postgres://db:5432/app\r\n"
    "pool_size = -12\r\n"
    "tables = users, orders, \\\n"
    "         invoices\n"
    "enabled = off\n"
    "# override in a later section block\n"
    "[SERVER]\n"
    "port = 9000\n"
    "empty =\n";

struct bad_case { const char *text; int error_line; };

static const struct bad_case bad_cases[] = {
    {"[open\nkey=1\n", 1},
    {"a=1\nnovalue\n", 2},
    {"a=1\n\n= 3\n", 3},
    {"[s] junk\n", 1},
    {"x = \"unterminated\n", 1},
    {"x = \"ok\" extra\n", 1},
    {"a=1\nb=2\\\ncontinued\n[]\n", 4},
};

int main(void)
{
    static ini_store st;
    int failures = 0;

    int err = ini_parse_string(config_text, store_handler, &st);
    if (err != 0) failures++;
    if (st.count != 12 || st.overrides != 1) failures++;

    if (strcmp(ini_get(&st, "", "name", ""), "demo service") != 0) failures++;
    if (ini_get_int(&st, "", "version", 0) != 3) failures++;
    if (strcmp(ini_get(&st, "server", "host", ""), "127.0.0.1") != 0) failures++;
    if (ini_get_int(&st, "Server", "PORT", 0) != 9000) failures++;
    if (!ini_get_bool(&st, "server", "debug", false)) failures++;
    if (strcmp(ini_get(&st, "server", "banner", ""), "Welcome; \"friend\"\n") != 0) failures++;
    if (strcmp(ini_get(&st, "server", "path", ""), "/srv/www#anchor") != 0) failures++;
    if (strcmp(ini_get(&st, "database", "url", ""), "postgres://db:5432/app") != 0) failures++;
    if (ini_get_int(&st, "database", "pool_size", 0) != -12) failures++;
    if (strcmp(ini_get(&st, "database", "tables", ""), "users, orders, invoices") != 0) failures++;
    if (ini_get_bool(&st, "database", "enabled", true)) failures++;
    if (strcmp(ini_get(&st, "server", "empty", "x"), "") != 0) failures++;
    if (ini_get(&st, "database", "port", NULL) != NULL) failures++;
    if (ini_get_int(&st, "server", "host", -1) != -1) failures++;
    if (ini_get_bool(&st, "", "name", true) != true) failures++;

    int n = 0;
    if (ini_parse_string("a=1\nb=2\n[x]\nc=3\n", count_handler, &n) != 0 || n != 3) failures++;

    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        int cnt = 0;
        if (ini_parse_string(bad_cases[i].text, count_handler, &cnt) != bad_cases[i].error_line)
            failures++;
    }

    printf("ini_parser: %d entries, %d failures\n", st.count, failures);
    return failures == 0 ? 0 : 1;
}
