/* demo-v1: string utilities: split/join, replace, word reversal, KMP search, edit distance, word counts */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *ptr; size_t len; } str_view;

char *str_trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

/* split on any delimiter character, skipping empty pieces; returns piece count */
size_t str_split(const char *s, const char *delims, str_view *out, size_t max)
{
    size_t n = 0;
    while (*s) {
        s += strspn(s, delims);
        if (!*s) break;
        size_t len = strcspn(s, delims);
        if (n < max) out[n] = (str_view){s, len};
        n++;
        s += len;
    }
    return n;
}

static size_t str_join(const str_view *parts, size_t n, const char *sep, char *out, size_t cap)
{
    size_t used = 0, seplen = strlen(sep);
    for (size_t i = 0; i < n; i++) {
        size_t need = parts[i].len + (i ? seplen : 0);
        if (used + need + 1 > cap) return (size_t)-1;
        if (i) { memcpy(out + used, sep, seplen); used += seplen; }
        memcpy(out + used, parts[i].ptr, parts[i].len);
        used += parts[i].len;
    }
    out[used] = '\0';
    return used;
}

/* returns a newly allocated string with every non-overlapping occurrence replaced */
char *str_replace_all(const char *s, const char *from, const char *to)
{
    size_t flen = strlen(from), tlen = strlen(to), count = 0;
    if (flen == 0) return NULL;
    for (const char *p = strstr(s, from); p; p = strstr(p + flen, from)) count++;
    size_t out_len = strlen(s) + count * tlen - count * flen;
    char *out = malloc(out_len + 1), *w = out;
    if (!out) return NULL;
    for (const char *p = s;;) {
        const char *hit = strstr(p, from);
        if (!hit) { strcpy(w, p); break; }
        memcpy(w, p, (size_t)(hit - p));
        w += hit - p;
        memcpy(w, to, tlen);
        w += tlen;
        p = hit + flen;
    }
    return out;
}

static void reverse_range(char *a, char *b)
{
    while (a < b) { char t = *a; *a++ = *b; *b-- = t; }
}

/* reverse word order in place, collapsing runs of spaces */
static void reverse_words(char *s)
{
    size_t w = 0, n = strlen(s);
    for (size_t r = 0; r < n;) {
        while (r < n && s[r] == ' ') r++;
        if (r == n) break;
        if (w > 0) s[w++] = ' ';
        size_t start = w;
        while (r < n && s[r] != ' ') s[w++] = s[r++];
        reverse_range(s + start, s + w - 1);
    }
    s[w] = '\0';
    if (w > 0) reverse_range(s, s + w - 1);
}

/* Knuth-Morris-Pratt: number of (possibly overlapping) occurrences */
size_t kmp_count(const char *text, const char *pat)
{
    size_t m = strlen(pat), count = 0, k = 0;
    if (m == 0) return 0;
    size_t *fail = malloc(m * sizeof *fail);
    if (!fail) return 0;
    fail[0] = 0;
    for (size_t i = 1; i < m; i++) {
        while (k > 0 && pat[i] != pat[k]) k = fail[k - 1];
        if (pat[i] == pat[k]) k++;
        fail[i] = k;
    }
    k = 0;
    for (const char *t = text; *t; t++) {
        while (k > 0 && *t != pat[k]) k = fail[k - 1];
        if (*t == pat[k]) k++;
        if (k == m) { count++; k = fail[k - 1]; }
    }
    free(fail);
    return count;
}

static size_t naive_count(const char *text, const char *pat)
{
    size_t m = strlen(pat), count = 0;
    for (const char *t = text; *t; t++)
        if (strncmp(t, pat, m) == 0) count++;
    return count;
}

size_t levenshtein(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *prev = malloc((lb + 1) * sizeof *prev), *cur = malloc((lb + 1) * sizeof *cur);
    if (!prev || !cur) { free(prev); free(cur); return (size_t)-1; }
    for (size_t j = 0; j <= lb; j++) prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1, sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t best = del < ins ? del : ins;
            cur[j] = best < sub ? best : sub;
        }
        size_t *t = prev; prev = cur; cur = t;
    }
    size_t d = prev[lb];
    free(prev);
    free(cur);
    return d;
}

static bool is_palindrome(const char *s)
{
    const char *a = s, *b = s + strlen(s);
    while (a < b) {
        if (!isalnum((unsigned char)*a)) { a++; continue; }
        if (!isalnum((unsigned char)b[-1])) { b--; continue; }
        if (tolower((unsigned char)*a) != tolower((unsigned char)b[-1])) return false;
        a++;
        b--;
    }
    return true;
}

static void rot13(char *s)
{
    for (; *s; s++) {
        if (*s >= 'a' && *s <= 'z') *s = (char)('a' + (*s - 'a' + 13) % 26);
        else if (*s >= 'A' && *s <= 'Z') *s = (char)('A' + (*s - 'A' + 13) % 26);
    }
}

typedef struct { char word[16]; int count; } word_count;

static int cmp_wc(const void *x, const void *y)
{
    const word_count *a = x, *b = y;
    if (a->count != b->count) return b->count - a->count;
    return strcmp(a->word, b->word);
}

/* lower-cased alphabetic words; returns number of distinct words */
static size_t count_words(const char *text, word_count *table, size_t cap, size_t *total)
{
    size_t distinct = 0;
    *total = 0;
    while (*text) {
        while (*text && !isalpha((unsigned char)*text)) text++;
        char w[16];
        size_t n = 0;
        while (isalpha((unsigned char)*text)) {
            if (n + 1 < sizeof w) w[n++] = (char)tolower((unsigned char)*text);
            text++;
        }
        if (n == 0) break;
        w[n] = '\0';
        (*total)++;
        size_t i;
        for (i = 0; i < distinct; i++)
            if (strcmp(table[i].word, w) == 0) break;
        if (i == distinct) {
            if (distinct == cap) continue;
            strcpy(table[distinct].word, w);
            table[distinct++].count = 0;
        }
        table[i].count++;
    }
    qsort(table, distinct, sizeof *table, cmp_wc);
    return distinct;
}

static const char paragraph[] =
    "The river ran past the mill, and the mill turned; the miller counted sacks while the river ran on. "
    "A sack for the baker, a sack for the brewer, and the last sack for the miller himself.";

int main(void)
{
    int failures = 0;
    char buf[256];
    str_view parts[16];

    strcpy(buf, "  \t padded text \n ");
    if (strcmp(str_trim(buf), "padded text") != 0) failures++;

    const char *csv = ",alpha,,beta;gamma ,;delta";
    size_t n = str_split(csv, ",;", parts, 16);
    if (n != 4 || parts[2].len != 6 || strncmp(parts[3].ptr, "delta", 5) != 0) failures++;
    if (str_join(parts, n, " | ", buf, sizeof buf) != 29 || strcmp(buf, "alpha | beta | gamma  | delta") != 0)
        failures++;
    if (str_join(parts, n, "--", buf, 10) != (size_t)-1) failures++;

    char *r = str_replace_all("the cat sat on the mat", "at", "og");
    if (!r || strcmp(r, "the cog sog on the mog") != 0) failures++;
    free(r);
    r = str_replace_all("aaaa", "aa", "b");
    if (!r || strcmp(r, "bb") != 0) failures++;
    free(r);
    r = str_replace_all("x", "x", "");
    if (!r || strcmp(r, "") != 0) failures++;
    free(r);

    strcpy(buf, "  hello   world  foo ");
    reverse_words(buf);
    if (strcmp(buf, "foo world hello") != 0) failures++;
    strcpy(buf, "   ");
    reverse_words(buf);
    if (buf[0] != '\0') failures++;

    static const struct { const char *text, *pat; size_t count; } searches[] = {
        {"aaaaa", "aa", 4}, {"abababab", "abab", 3}, {"mississippi", "issi", 2},
        {"mississippi", "ss", 2}, {"abc", "abcd", 0}, {"abcabdabcabcabd", "abcabd", 2},
    };
    for (size_t i = 0; i < sizeof searches / sizeof searches[0]; i++) {
        size_t k = kmp_count(searches[i].text, searches[i].pat);
        if (k != searches[i].count || k != naive_count(searches[i].text, searches[i].pat)) failures++;
    }
    if (kmp_count(paragraph, "the") != naive_count(paragraph, "the")) failures++;

    static const struct { const char *a, *b; size_t d; } edits[] = {
        {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"", "abc", 3},
        {"intention", "execution", 5}, {"same", "same", 0}, {"abc", "", 3},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        if (levenshtein(edits[i].a, edits[i].b) != edits[i].d) failures++;
        if (levenshtein(edits[i].b, edits[i].a) != edits[i].d) failures++;
    }

    if (!is_palindrome("A man, a plan, a canal: Panama") || is_palindrome("not a palindrome") ||
        !is_palindrome("") || !is_palindrome("No 'x' in Nixon"))
        failures++;

    strcpy(buf, "Hello, World!");
    rot13(buf);
    if (strcmp(buf, "Uryyb, Jbeyq!") != 0) failures++;
    rot13(buf);
    if (strcmp(buf, "Hello, World!") != 0) failures++;

    word_count table[64];
    size_t total;
    size_t distinct = count_words(paragraph, table, 64, &total);
    if (total != 37 || distinct != 19) failures++;
    static const char *const top[] = {"the", "for", "sack", "a"};
    static const int top_counts[] = {9, 3, 3, 2};
    for (size_t i = 0; i < 4; i++)
        if (strcmp(table[i].word, top[i]) != 0 || table[i].count != top_counts[i]) failures++;

    printf("string_utils: %zu words, %zu distinct, %d failures\n", total, distinct, failures);
    return failures == 0 ? 0 : 1;
}
