/* demo-v1: small backtracking regex engine (classes, escapes, anchors, greedy/lazy quantifiers) */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef enum { R_CHAR, R_ANY, R_CLASS, R_BOL, R_EOL } rnode_kind;
typedef enum { Q_ONE, Q_STAR, Q_PLUS, Q_QUEST } quantifier;

typedef struct {
    rnode_kind kind;
    quantifier q;
    bool lazy;
    unsigned char ch;
    uint32_t set[8]; /* 256-bit membership for R_CLASS */
} rnode;

#define MAX_NODES 64

typedef struct {
    rnode nodes[MAX_NODES];
    int n;
} regex;

typedef struct { int start, len; } match_result;

static void set_add(uint32_t *set, unsigned c) { set[c >> 5] |= 1u << (c & 31u); }
static bool set_has(const uint32_t *set, unsigned c) { return (set[c >> 5] >> (c & 31u)) & 1u; }

static void set_add_range(uint32_t *set, unsigned lo, unsigned hi)
{
    for (unsigned c = lo; c <= hi; c++) set_add(set, c);
}

static void set_invert(uint32_t *set)
{
    for (int i = 0; i < 8; i++) set[i] = ~set[i];
}

/* Adds the class for a shorthand escape (d, w, s and negations). Returns false if not a shorthand. */
static bool add_shorthand(uint32_t *set, char e)
{
    uint32_t tmp[8] = {0};
    switch (e) {
    case 'd': case 'D':
        set_add_range(tmp, '0', '9');
        break;
    case 'w': case 'W':
        set_add_range(tmp, '0', '9');
        set_add_range(tmp, 'a', 'z');
        set_add_range(tmp, 'A', 'Z');
        set_add(tmp, '_');
        break;
    case 's': case 'S':
        set_add(tmp, ' '); set_add(tmp, '\t'); set_add(tmp, '\n');
        set_add(tmp, '\r'); set_add(tmp, '\f'); set_add(tmp, '\v');
        break;
    default:
        return false;
    }
    if (e >= 'A' && e <= 'Z') set_invert(tmp);
    for (int i = 0; i < 8; i++) set[i] |= tmp[i];
    return true;
}

static const char *parse_class(const char *p, rnode *nd)
{
    bool negate = false;
    memset(nd->set, 0, sizeof nd->set);
    nd->kind = R_CLASS;
    if (*p == '^') { negate = true; p++; }
    bool first = true;
    while (*p && (*p != ']' || first)) {
        first = false;
        unsigned lo;
        if (*p == '\\') {
            if (!p[1]) return NULL;
            if (add_shorthand(nd->set, p[1])) { p += 2; continue; }
            lo = (unsigned char)p[1];
            p += 2;
        } else {
            lo = (unsigned char)*p++;
        }
        if (*p == '-' && p[1] && p[1] != ']') {
            unsigned hi = (unsigned char)p[1];
            if (hi == '\\') return NULL; /* keep it simple */
            if (hi < lo) return NULL;
            set_add_range(nd->set, lo, hi);
            p += 2;
        } else {
            set_add(nd->set, lo);
        }
    }
    if (*p != ']') return NULL;
    if (negate) set_invert(nd->set);
    return p + 1;
}

bool regex_compile(regex *re, const char *pat)
{
    re->n = 0;
    const char *p = pat;
    while (*p) {
        if (re->n >= MAX_NODES) return false;
        rnode *nd = &re->nodes[re->n];
        memset(nd, 0, sizeof *nd);
        switch (*p) {
        case '^': nd->kind = R_BOL; p++; break;
        case '$': nd->kind = R_EOL; p++; break;
        case '.': nd->kind = R_ANY; p++; break;
        case '[':
            p = parse_class(p + 1, nd);
            if (!p) return false;
            break;
        case '\\':
            if (!p[1]) return false;
            if (add_shorthand(nd->set, p[1])) {
                nd->kind = R_CLASS;
            } else {
                nd->kind = R_CHAR;
                nd->ch = (unsigned char)p[1];
            }
            p += 2;
            break;
        case '*': case '+': case '?': case '(': case ')': case '|': case '{':
            return false; /* dangling quantifier or unsupported construct */
        default:
            nd->kind = R_CHAR;
            nd->ch = (unsigned char)*p++;
            break;
        }
        if (*p == '*' || *p == '+' || *p == '?') {
            if (nd->kind == R_BOL || nd->kind == R_EOL) return false;
            nd->q = *p == '*' ? Q_STAR : *p == '+' ? Q_PLUS : Q_QUEST;
            p++;
            if (*p == '?') { nd->lazy = true; p++; }
            if (*p == '*' || *p == '+' || *p == '?') return false;
        }
        re->n++;
    }
    return true;
}

static bool node_matches(const rnode *nd, unsigned char c)
{
    switch (nd->kind) {
    case R_CHAR: return c == nd->ch;
    case R_ANY: return c != '\n';
    case R_CLASS: return set_has(nd->set, c);
    default: return false;
    }
}

static int match_here(const regex *re, int i, const char *text, int pos)
{
    if (i == re->n) return pos;
    const rnode *nd = &re->nodes[i];
    if (nd->kind == R_BOL) return pos == 0 ? match_here(re, i + 1, text, pos) : -1;
    if (nd->kind == R_EOL) return text[pos] == '\0' ? match_here(re, i + 1, text, pos) : -1;

    int min = (nd->q == Q_ONE || nd->q == Q_PLUS) ? 1 : 0;
    int max = (nd->q == Q_ONE || nd->q == Q_QUEST) ? 1 : INT_MAX;
    int avail = 0;
    while (avail < max && text[pos + avail] && node_matches(nd, (unsigned char)text[pos + avail]))
        avail++;
    if (avail < min) return -1;
    if (nd->lazy) {
        for (int k = min; k <= avail; k++) {
            int r = match_here(re, i + 1, text, pos + k);
            if (r >= 0) return r;
        }
    } else {
        for (int k = avail; k >= min; k--) {
            int r = match_here(re, i + 1, text, pos + k);
            if (r >= 0) return r;
        }
    }
    return -1;
}

match_result regex_search_from(const regex *re, const char *text, int from)
{
    match_result m = {-1, 0};
    int len = (int)strlen(text);
    for (int start = from; start <= len; start++) {
        int end = match_here(re, 0, text, start);
        if (end >= 0) {
            m.start = start;
            m.len = end - start;
            return m;
        }
        if (re->n > 0 && re->nodes[0].kind == R_BOL) break;
    }
    return m;
}

/* number of non-empty, non-overlapping matches */
static int regex_count_all(const regex *re, const char *text)
{
    int count = 0, pos = 0, len = (int)strlen(text);
    while (pos <= len) {
        match_result m = regex_search_from(re, text, pos);
        if (m.start < 0) break;
        if (m.len > 0) {
            count++;
            pos = m.start + m.len;
        } else {
            pos = m.start + 1;
        }
    }
    return count;
}

typedef bool (*line_pred)(const regex *re, const char *line);

static bool line_matches(const regex *re, const char *line) { return regex_search_from(re, line, 0).start >= 0; }

static int grep_count(const char *pattern, const char *text, line_pred pred)
{
    regex re;
    char line[128];
    int hits = 0;
    if (!regex_compile(&re, pattern)) return -1;
    while (*text) {
        size_t n = strcspn(text, "\n");
        if (n >= sizeof line) return -1;
        memcpy(line, text, n);
        line[n] = '\0';
        if (pred(&re, line)) hits++;
        text += n;
        if (*text == '\n') text++;
    }
    return hits;
}

struct regex_case { const char *pattern, *text; int start, len, count; };

/* expected values cross-checked against a full regex engine; start -2 means "does not compile" */
static const struct regex_case cases[] = {
    {"abc", "xxabcxx", 2, 3, 1},
    {"a.c", "abxaxc", 3, 3, 1},
    {"^abc", "abcabc", 0, 3, 1},
    {"^abc", "xabc", -1, 0, 0},
    {"abc$", "abcabc", 3, 3, 1},
    {"a*b", "caaab", 1, 4, 1},
    {"a+b", "cbaab", 2, 3, 1},
    {"colou?r", "my color", 3, 5, 1},
    {"colou?r", "the colour", 4, 6, 1},
    {"[0-9]+", "abc 12345 def", 4, 5, 1},
    {"\\d+\\.\\d*", "pi=3.14159!", 3, 7, 1},
    {"[^aeiou ]+", "aei bcdfg", 4, 5, 1},
    {"\\w+@\\w+\\.com", "mail bob@example.com now", 5, 15, 1},
    {"\\s+", "nospace", -1, 0, 0},
    {"x*", "aaa", 0, 0, 0},
    {"a.*c", "abcabcab", 0, 6, 1},
    {"a.*?c", "abcabcab", 0, 3, 2},
    {"a+?", "aaaa", 0, 1, 4},
    {"[A-Fa-f0-9]+$", "hash: 9fA0c3", 6, 6, 1},
    {"^$", "", 0, 0, 0},
    {"^\\s*$", "   \t", 0, 4, 1},
    {"[-+]?\\d+", "value: -42;", 7, 3, 1},
    {"\\D+", "123abc456", 3, 3, 1},
    {"[\\]x]+", "aa]x]b", 2, 3, 1},
    {"b[aeiou]*t", "boot bat bt", 0, 4, 3},
    {"(", "", -2, 0, 0},
    {"[abc", "", -2, 0, 0},
    {"a**", "", -2, 0, 0},
    {"ab?c?d", "xabdx", 1, 3, 1},
    {"\\W", "abc_def!", 7, 1, 1},
    {"[.]+", "a...b", 1, 3, 1},
    {"z+", "aaaa", -1, 0, 0},
};

static const char log_text[] =
    "INFO 12 started\nERROR 404 not found\nWARN disk 91%\nERROR  500 crash\n"
    "error 1 lower\nINFO 13 done\nERROR x\n";

int main(void)
{
    int failures = 0;
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        regex re;
        const struct regex_case *c = &cases[i];
        bool ok = regex_compile(&re, c->pattern);
        if (!ok) {
            if (c->start != -2) failures++;
            continue;
        }
        if (c->start == -2) { failures++; continue; }
        match_result m = regex_search_from(&re, c->text, 0);
        if (m.start != c->start || (m.start >= 0 && m.len != c->len)) failures++;
        if (regex_count_all(&re, c->text) != c->count) failures++;
    }

    static const struct { const char *pattern; int hits; } greps[] = {
        {"^ERROR\\s+\\d+", 2}, {"\\d+%$", 1}, {"^[A-Z]+ \\d+ [a-z]+$", 2}, {"o.*o", 2}, {"^[^ ]+$", 0},
    };
    for (size_t i = 0; i < sizeof greps / sizeof greps[0]; i++)
        if (grep_count(greps[i].pattern, log_text, line_matches) != greps[i].hits) failures++;

    printf("regex_lite: %zu cases, %d failures\n", n, failures);
    return failures == 0 ? 0 : 1;
}
