/* demo-v1: lexer for a C subset (keywords via bsearch, numeric/char/string literals, longest-match punctuators) */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    TK_IDENT, TK_KEYWORD, TK_INT, TK_FLOAT, TK_CHAR, TK_STRING, TK_PUNCT, TK_PREPROC,
    TK_EOF, TK_ERROR, TK_KIND_COUNT
} tok_kind;

typedef struct {
    tok_kind kind;
    const char *start;
    size_t len;
    int line, col;
    uint64_t int_value;
} token;

typedef struct {
    const char *src;
    size_t pos;
    int line, col;
    bool line_start;
    const char *error;
} lexer;

static const char *const keywords[] = {
    "_Bool", "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
    "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
    "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while",
};

/* longest first so that a linear scan finds the longest match */
static const char *const puncts[] = {
    ">>=", "<<=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##",
    "{", "}", "[", "]", "(", ")", ";", ",", ".", "<", ">", "+", "-", "*", "/", "%", "&",
    "|", "^", "!", "~", "?", ":", "=", "#",
};

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

static int hex_digit(char c)
{
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static char peek(const lexer *lx, size_t ahead) { return lx->src[lx->pos + ahead]; }

static void advance(lexer *lx, size_t n)
{
    while (n-- > 0 && lx->src[lx->pos]) {
        if (lx->src[lx->pos] == '\n') {
            lx->line++;
            lx->col = 1;
            lx->line_start = true;
        } else {
            lx->col++;
        }
        lx->pos++;
    }
}

struct kw_key { const char *text; size_t len; };

static int kw_compare(const void *key, const void *elem)
{
    const struct kw_key *k = key;
    const char *kw = *(const char *const *)elem;
    int c = strncmp(k->text, kw, k->len);
    if (c != 0) return c;
    return kw[k->len] == '\0' ? 0 : -1;
}

bool is_keyword(const char *text, size_t len)
{
    struct kw_key k = {text, len};
    return bsearch(&k, keywords, sizeof keywords / sizeof keywords[0], sizeof keywords[0], kw_compare) != NULL;
}

/* skips whitespace and comments; returns false on an unterminated comment */
static bool skip_trivia(lexer *lx)
{
    for (;;) {
        char c = peek(lx, 0);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            advance(lx, 1);
        } else if (c == '/' && peek(lx, 1) == '/') {
            while (peek(lx, 0) && peek(lx, 0) != '\n') advance(lx, 1);
        } else if (c == '/' && peek(lx, 1) == '*') {
            advance(lx, 2);
            while (!(peek(lx, 0) == '*' && peek(lx, 1) == '/')) {
                if (!peek(lx, 0)) { lx->error = "unterminated comment"; return false; }
                advance(lx, 1);
            }
            advance(lx, 2);
        } else {
            return true;
        }
    }
}

/* consumes one possibly-escaped character inside a char or string literal */
static bool lex_escape(lexer *lx)
{
    if (peek(lx, 0) != '\\') {
        if (peek(lx, 0) == '\n' || !peek(lx, 0)) return false;
        advance(lx, 1);
        return true;
    }
    advance(lx, 1);
    char e = peek(lx, 0);
    switch (e) {
    case 'n': case 't': case 'r': case '0': case '\\': case '\'': case '"': case 'a': case 'b':
    case 'f': case 'v': case '?':
        advance(lx, 1);
        return true;
    case 'x':
        advance(lx, 1);
        if (hex_digit(peek(lx, 0)) < 0) return false;
        while (hex_digit(peek(lx, 0)) >= 0) advance(lx, 1);
        return true;
    default:
        return false;
    }
}

static tok_kind lex_number(lexer *lx, token *t)
{
    size_t start = lx->pos;
    bool is_float = false;
    uint64_t v = 0;
    if (peek(lx, 0) == '0' && (peek(lx, 1) == 'x' || peek(lx, 1) == 'X')) {
        advance(lx, 2);
        if (hex_digit(peek(lx, 0)) < 0) { lx->error = "bad hex literal"; return TK_ERROR; }
        while (hex_digit(peek(lx, 0)) >= 0) {
            v = v * 16 + (uint64_t)hex_digit(peek(lx, 0));
            advance(lx, 1);
        }
    } else {
        while (is_digit(peek(lx, 0))) advance(lx, 1);
        if (peek(lx, 0) == '.') { is_float = true; advance(lx, 1); while (is_digit(peek(lx, 0))) advance(lx, 1); }
        if (peek(lx, 0) == 'e' || peek(lx, 0) == 'E') {
            is_float = true;
            advance(lx, 1);
            if (peek(lx, 0) == '+' || peek(lx, 0) == '-') advance(lx, 1);
            if (!is_digit(peek(lx, 0))) { lx->error = "bad exponent"; return TK_ERROR; }
            while (is_digit(peek(lx, 0))) advance(lx, 1);
        }
        if (!is_float) {
            unsigned radix = lx->src[start] == '0' ? 8 : 10;
            for (size_t i = start; i < lx->pos; i++) {
                unsigned d = (unsigned)(lx->src[i] - '0');
                if (d >= radix) { lx->error = "bad octal digit"; return TK_ERROR; }
                v = v * radix + d;
            }
        }
    }
    if (!is_float)
        while (peek(lx, 0) == 'u' || peek(lx, 0) == 'U' || peek(lx, 0) == 'l' || peek(lx, 0) == 'L') advance(lx, 1);
    if (is_ident_char(peek(lx, 0))) { lx->error = "bad number suffix"; return TK_ERROR; }
    t->int_value = v;
    return is_float ? TK_FLOAT : TK_INT;
}

token next_token(lexer *lx)
{
    token t = {TK_ERROR, NULL, 0, 0, 0, 0};
    if (!skip_trivia(lx)) {
        t.line = lx->line;
        return t;
    }
    t.start = lx->src + lx->pos;
    t.line = lx->line;
    t.col = lx->col;
    char c = peek(lx, 0);
    bool at_line_start = lx->line_start;
    lx->line_start = false;

    if (c == '\0') {
        t.kind = TK_EOF;
    } else if (c == '#' && at_line_start) {
        /* directive runs to end of line, honouring backslash continuations */
        while (peek(lx, 0) && !(peek(lx, 0) == '\n' && lx->src[lx->pos - 1] != '\\')) advance(lx, 1);
        t.kind = TK_PREPROC;
    } else if (is_ident_start(c)) {
        while (is_ident_char(peek(lx, 0))) advance(lx, 1);
        size_t len = (size_t)(lx->src + lx->pos - t.start);
        t.kind = is_keyword(t.start, len) ? TK_KEYWORD : TK_IDENT;
    } else if (is_digit(c) || (c == '.' && is_digit(peek(lx, 1)))) {
        t.kind = lex_number(lx, &t);
    } else if (c == '\'') {
        advance(lx, 1);
        if (peek(lx, 0) == '\'' || !lex_escape(lx) || peek(lx, 0) != '\'') {
            lx->error = "bad character literal";
            t.kind = TK_ERROR;
        } else {
            advance(lx, 1);
            t.kind = TK_CHAR;
        }
    } else if (c == '"') {
        advance(lx, 1);
        t.kind = TK_STRING;
        while (peek(lx, 0) != '"') {
            if (!lex_escape(lx)) {
                lx->error = "unterminated string";
                t.kind = TK_ERROR;
                break;
            }
        }
        if (t.kind == TK_STRING) advance(lx, 1);
    } else {
        t.kind = TK_ERROR;
        lx->error = "unexpected character";
        for (size_t i = 0; i < sizeof puncts / sizeof puncts[0]; i++) {
            size_t n = strlen(puncts[i]);
            if (strncmp(t.start, puncts[i], n) == 0) {
                advance(lx, n);
                t.kind = TK_PUNCT;
                lx->error = NULL;
                break;
            }
        }
    }
    t.len = (size_t)(lx->src + lx->pos - t.start);
    return t;
}

static void lexer_init(lexer *lx, const char *src)
{
    lx->src = src;
    lx->pos = 0;
    lx->line = lx->col = 1;
    lx->line_start = true;
    lx->error = NULL;
}

typedef struct {
    unsigned counts[TK_KIND_COUNT];
    uint64_t int_sum;
    unsigned distinct_idents, max_depth, total;
    int depth;
    bool balanced;
    int error_line;
} lex_summary;

#define ID_SLOTS 128

static void summarize(const char *src, lex_summary *s)
{
    const char *ids[ID_SLOTS];
    size_t id_len[ID_SLOTS];
    lexer lx;
    memset(s, 0, sizeof *s);
    s->balanced = true;
    lexer_init(&lx, src);
    for (;;) {
        token t = next_token(&lx);
        if (t.kind == TK_EOF) break;
        s->counts[t.kind]++;
        if (t.kind == TK_ERROR) { s->error_line = t.line; break; }
        s->total++;
        switch (t.kind) {
        case TK_INT:
            s->int_sum += t.int_value;
            break;
        case TK_IDENT: {
            unsigned i;
            for (i = 0; i < s->distinct_idents; i++)
                if (id_len[i] == t.len && memcmp(ids[i], t.start, t.len) == 0) break;
            if (i == s->distinct_idents && i < ID_SLOTS) {
                ids[i] = t.start;
                id_len[i] = t.len;
                s->distinct_idents++;
            }
            break;
        }
        case TK_PUNCT:
            if (t.len == 1 && *t.start == '{' && ++s->depth > (int)s->max_depth) s->max_depth = (unsigned)s->depth;
            if (t.len == 1 && *t.start == '}' && --s->depth < 0) s->balanced = false;
            break;
        default:
            break;
        }
    }
    if (s->depth != 0) s->balanced = false;
}

static const char sample[] =
    "#include <stdio.h>\n"
    "#define SQUARE(x) ((x) * (x)) \\\n"
    "    /* continued */\n"
    "/* block comment with \"quotes\" and 'chars' */\n"
    "static const unsigned long masks[] = {0xFFu, 0777, 42UL, 0};\n"
    "typedef struct node { int value; struct node *next; } node;\n"
    "\n"
    "// line comment: int ignored = 1;\n"
    "int sum_list(const node *head)\n"
    "{\n"
    "    int total = 0;\n"
    "    for (const node *p = head; p != NULL; p = p->next) {\n"
    "        total += p->value;\n"
    "        if (total >= 1000 && p->value % 2 == 0) total -= 1000;\n"
    "    }\n"
    "    return total;\n"
    "}\n"
    "\n"
    "double scale(double x) { return x * 2.5e-3 + .5 + 1.; }\n"
    "\n"
    "int main(void)\n"
    "{\n"
    "    char c = '\\n', q = '\\'', h = '\\x41';\n"
    "    const char *msg = \"tab\\there \\\"quoted\\\" \\\\ done\";\n"
    "    unsigned flags = 0;\n"
    "    flags |= 1u << 3;\n"
    "    flags >>= 1;\n"
    "    flags <<= 2;\n"
    "    int arr[4] = {1, 2, 3, 4};\n"
    "    int i = 0;\n"
    "    while (i < 4 && arr[i]-- > 0) ++i;\n"
    "    printf(\"%s %c%c%c %d\\n\", msg, c, q, h, i ? arr[0] : -1);\n"
    "    return sizeof(node) > 8 ? 0 : 1;\n"
    "}\n";

struct error_case { const char *src; int line; };

static const struct error_case error_cases[] = {
    {"int x = 1;\n/* never closed", 2},
    {"x = \"abc\n\";", 1},
    {"int a = 09;", 1},
    {"a\n\nb @ c", 3},
    {"char c = '';", 1},
    {"double d = 1.5e+;", 1},
    {"int y = 12abc;", 1},
};

int main(void)
{
    int failures = 0;
    lex_summary s;

    for (size_t i = 1; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strcmp(keywords[i - 1], keywords[i]) >= 0) failures++;
    if (!is_keyword("int", 3) || is_keyword("integer", 7) || !is_keyword("_Bool", 5) || is_keyword("in", 2))
        failures++;

    /* counts cross-checked with an independent regex-based tokenizer */
    summarize(sample, &s);
    unsigned sample_tokens = s.total;
    static const unsigned want[TK_KIND_COUNT] = {52, 29, 27, 3, 3, 2, 116, 2, 0, 0};
    for (int k = 0; k < TK_KIND_COUNT; k++)
        if (s.counts[k] != want[k]) failures++;
    if (s.int_sum != 2845 || s.distinct_idents != 20 || s.max_depth != 2 || s.total != 234 || !s.balanced)
        failures++;

    /* exact token stream for a short line */
    static const struct { tok_kind kind; const char *text; } expect[] = {
        {TK_IDENT, "a"}, {TK_PUNCT, "->"}, {TK_IDENT, "b"}, {TK_PUNCT, ">>="}, {TK_INT, "0x1Fu"},
        {TK_PUNCT, ";"}, {TK_PUNCT, "..."}, {TK_FLOAT, ".25"}, {TK_CHAR, "'\\x7f'"}, {TK_EOF, ""},
    };
    lexer lx;
    lexer_init(&lx, "a->b >>= 0x1Fu;\n  ... .25 '\\x7f'");
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        token t = next_token(&lx);
        if (t.kind != expect[i].kind || t.len != strlen(expect[i].text) ||
            strncmp(t.start, expect[i].text, t.len) != 0)
            failures++;
        if (i == 4 && t.int_value != 31) failures++;
        if (i == 6 && (t.line != 2 || t.col != 3)) failures++;
    }

    /* a '#' that does not start a line is punctuation */
    summarize("  # directive\nx # y\n", &s);
    if (s.counts[TK_PREPROC] != 1 || s.counts[TK_PUNCT] != 1 || s.counts[TK_IDENT] != 2) failures++;

    for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
        summarize(error_cases[i].src, &s);
        if (s.counts[TK_ERROR] != 1 || s.error_line != error_cases[i].line) failures++;
    }

    printf("c_lexer: %u tokens in sample, %d failures\n", sample_tokens, failures);
    return failures == 0 ? 0 : 1;
}
