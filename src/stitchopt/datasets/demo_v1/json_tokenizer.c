/* demo-v1: JSON tokenizer (number state machine, escapes, UTF-16 surrogates) and validating parser */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef enum {
    T_LBRACE, T_RBRACE, T_LBRACKET, T_RBRACKET, T_COLON, T_COMMA,
    T_STRING, T_NUMBER, T_TRUE, T_FALSE, T_NULL, T_END, T_ERROR
} tok_kind;

typedef struct {
    tok_kind kind;
    size_t offset;
    size_t str_len;     /* decoded UTF-8 length for strings */
    bool is_int;        /* number without fraction/exponent that fits */
    long long ival;
} token;

#define STRBUF_MAX 256

typedef struct {
    const char *src;
    size_t pos;
    const char *error;
    char strbuf[STRBUF_MAX];
} lexer;

typedef struct {
    unsigned objects, arrays, keys, strings, numbers, bools, nulls, tokens;
    unsigned max_depth, id_keys;
    long long int_sum;
    size_t string_bytes;
} json_stats;

typedef struct {
    lexer lx;
    token cur;
    json_stats st;
} parser;

enum num_state { NS_START, NS_MINUS, NS_ZERO, NS_INT, NS_DOT, NS_FRAC, NS_E, NS_ESIGN, NS_EXP };

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool read_hex4(lexer *lx, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hex_value(lx->src[lx->pos]);
        if (h < 0)
            return false;
        v = (v << 4) | (uint32_t)h;
        lx->pos++;
    }
    *out = v;
    return true;
}

size_t utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static bool lex_string(lexer *lx, token *t)
{
    size_t n = 0;
    lx->pos++; /* opening quote */
    for (;;) {
        unsigned char c = (unsigned char)lx->src[lx->pos];
        if (c == '\0') { lx->error = "unterminated string"; return false; }
        if (c < 0x20) { lx->error = "control character in string"; return false; }
        if (n + 4 >= STRBUF_MAX) { lx->error = "string too long"; return false; }
        lx->pos++;
        if (c == '"')
            break;
        if (c != '\\') {
            lx->strbuf[n++] = (char)c;
            continue;
        }
        char esc = lx->src[lx->pos++];
        switch (esc) {
        case '"': lx->strbuf[n++] = '"'; break;
        case '\\': lx->strbuf[n++] = '\\'; break;
        case '/': lx->strbuf[n++] = '/'; break;
        case 'b': lx->strbuf[n++] = '\b'; break;
        case 'f': lx->strbuf[n++] = '\f'; break;
        case 'n': lx->strbuf[n++] = '\n'; break;
        case 'r': lx->strbuf[n++] = '\r'; break;
        case 't': lx->strbuf[n++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (!read_hex4(lx, &cp)) { lx->error = "bad \\u escape"; return false; }
            if (cp >= 0xDC00 && cp <= 0xDFFF) { lx->error = "lone low surrogate"; return false; }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (lx->src[lx->pos] != '\\' || lx->src[lx->pos + 1] != 'u') {
                    lx->error = "missing low surrogate";
                    return false;
                }
                lx->pos += 2;
                if (!read_hex4(lx, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    lx->error = "bad low surrogate";
                    return false;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += utf8_encode(cp, lx->strbuf + n);
            break;
        }
        default:
            lx->error = "unknown escape";
            return false;
        }
    }
    lx->strbuf[n] = '\0';
    t->kind = T_STRING;
    t->str_len = n;
    return true;
}

static bool lex_number(lexer *lx, token *t)
{
    enum num_state s = NS_START;
    long long v = 0;
    int ndigits = 0;
    bool neg = false, integral = true;
    for (;;) {
        char c = lx->src[lx->pos];
        enum num_state next;
        switch (s) {
        case NS_START:
            next = c == '-' ? NS_MINUS : c == '0' ? NS_ZERO : is_digit(c) ? NS_INT : NS_START;
            break;
        case NS_MINUS:
            next = c == '0' ? NS_ZERO : is_digit(c) ? NS_INT : NS_START;
            break;
        case NS_ZERO:
        case NS_INT:
            if (is_digit(c) && s == NS_INT) next = NS_INT;
            else if (c == '.') next = NS_DOT;
            else if (c == 'e' || c == 'E') next = NS_E;
            else goto done;
            break;
        case NS_DOT:
        case NS_FRAC:
            if (is_digit(c)) next = NS_FRAC;
            else if (s == NS_FRAC && (c == 'e' || c == 'E')) next = NS_E;
            else if (s == NS_FRAC) goto done;
            else next = NS_START;
            break;
        case NS_E:
            next = (c == '+' || c == '-') ? NS_ESIGN : is_digit(c) ? NS_EXP : NS_START;
            break;
        case NS_ESIGN:
        case NS_EXP:
            if (is_digit(c)) next = NS_EXP;
            else if (s == NS_EXP) goto done;
            else next = NS_START;
            break;
        default:
            next = NS_START;
            break;
        }
        if (next == NS_START) {
            lx->error = "malformed number";
            return false;
        }
        if (next == NS_MINUS) neg = true;
        if (next == NS_DOT || next == NS_E) integral = false;
        if ((next == NS_INT || next == NS_ZERO) && integral) {
            if (++ndigits <= 18)
                v = v * 10 + (c - '0');
        }
        s = next;
        lx->pos++;
    }
done:
    t->kind = T_NUMBER;
    t->is_int = integral && ndigits <= 18;
    t->ival = neg ? -v : v;
    return true;
}

static bool match_word(lexer *lx, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(lx->src + lx->pos, w, n) != 0)
        return false;
    char after = lx->src[lx->pos + n];
    if ((after >= 'a' && after <= 'z') || is_digit(after))
        return false;
    lx->pos += n;
    return true;
}

token next_token(lexer *lx)
{
    token t = {T_ERROR, 0, 0, false, 0};
    while (lx->src[lx->pos] == ' ' || lx->src[lx->pos] == '\t' ||
           lx->src[lx->pos] == '\n' || lx->src[lx->pos] == '\r')
        lx->pos++;
    t.offset = lx->pos;
    char c = lx->src[lx->pos];
    switch (c) {
    case '\0': t.kind = T_END; return t;
    case '{': t.kind = T_LBRACE; lx->pos++; return t;
    case '}': t.kind = T_RBRACE; lx->pos++; return t;
    case '[': t.kind = T_LBRACKET; lx->pos++; return t;
    case ']': t.kind = T_RBRACKET; lx->pos++; return t;
    case ':': t.kind = T_COLON; lx->pos++; return t;
    case ',': t.kind = T_COMMA; lx->pos++; return t;
    case '"':
        if (!lex_string(lx, &t)) t.kind = T_ERROR;
        return t;
    case 't':
        t.kind = match_word(lx, "true") ? T_TRUE : T_ERROR;
        return t;
    case 'f':
        t.kind = match_word(lx, "false") ? T_FALSE : T_ERROR;
        return t;
    case 'n':
        t.kind = match_word(lx, "null") ? T_NULL : T_ERROR;
        return t;
    default:
        if (c == '-' || is_digit(c)) {
            if (!lex_number(lx, &t)) t.kind = T_ERROR;
            return t;
        }
        lx->error = "unexpected character";
        return t;
    }
}

static void advance(parser *p)
{
    p->cur = next_token(&p->lx);
    if (p->cur.kind != T_END && p->cur.kind != T_ERROR)
        p->st.tokens++;
}

static bool expect(parser *p, tok_kind k)
{
    if (p->cur.kind != k)
        return false;
    advance(p);
    return true;
}

static bool parse_value(parser *p, unsigned depth);

static bool parse_object(parser *p, unsigned depth)
{
    p->st.objects++;
    advance(p); /* '{' */
    if (p->cur.kind == T_RBRACE) {
        advance(p);
        return true;
    }
    for (;;) {
        if (p->cur.kind != T_STRING)
            return false;
        p->st.keys++;
        if (strcmp(p->lx.strbuf, "id") == 0)
            p->st.id_keys++;
        advance(p);
        if (!expect(p, T_COLON) || !parse_value(p, depth))
            return false;
        if (p->cur.kind == T_COMMA) {
            advance(p);
            continue;
        }
        return expect(p, T_RBRACE);
    }
}

static bool parse_array(parser *p, unsigned depth)
{
    p->st.arrays++;
    advance(p); /* '[' */
    if (p->cur.kind == T_RBRACKET) {
        advance(p);
        return true;
    }
    for (;;) {
        if (!parse_value(p, depth))
            return false;
        if (p->cur.kind == T_COMMA) {
            advance(p);
            continue;
        }
        return expect(p, T_RBRACKET);
    }
}

static bool parse_value(parser *p, unsigned depth)
{
    if (depth >= 64)
        return false;
    switch (p->cur.kind) {
    case T_LBRACE:
    case T_LBRACKET:
        if (depth + 1 > p->st.max_depth)
            p->st.max_depth = depth + 1;
        return p->cur.kind == T_LBRACE ? parse_object(p, depth + 1) : parse_array(p, depth + 1);
    case T_STRING:
        p->st.strings++;
        p->st.string_bytes += p->cur.str_len;
        break;
    case T_NUMBER:
        p->st.numbers++;
        if (p->cur.is_int)
            p->st.int_sum += p->cur.ival;
        break;
    case T_TRUE:
    case T_FALSE:
        p->st.bools++;
        break;
    case T_NULL:
        p->st.nulls++;
        break;
    default:
        return false;
    }
    advance(p);
    return true;
}

bool json_validate(const char *text, json_stats *out)
{
    parser p;
    memset(&p, 0, sizeof p);
    p.lx.src = text;
    advance(&p);
    bool ok = parse_value(&p, 0) && p.cur.kind == T_END;
    *out = p.st;
    return ok;
}

struct valid_case {
    const char *text;
    json_stats expect;
};

static const struct valid_case valid_cases[] = {
    {"42", {0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 42, 0}},
    {"[]", {0, 1, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0}},
    {"{\"id\": 7, \"name\": \"widget\", \"tags\": [\"a\", \"b\\n\"], \"price\": 12.5e1, \"ok\": true}",
     {1, 1, 5, 3, 2, 1, 0, 25, 2, 1, 7, 9}},
    {"[{\"id\":1,\"v\":-3},{\"id\":2,\"v\":null},{\"id\":3,\"v\":[0,-0.5,1e-3,900]}]",
     {3, 2, 6, 0, 8, 0, 1, 39, 3, 3, 903, 0}},
    {"{\"s\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\/\", \"deep\": [[[[{\"x\": false}]]]]}",
     {2, 4, 3, 1, 0, 1, 0, 21, 6, 0, 0, 16}},
    {"  [1, 2, 3, 12345678901234, -9, 0, 1.0, true, false, null, \"\"]\n",
     {0, 1, 0, 1, 7, 2, 1, 23, 1, 0, 12345678901231, 0}},
};

static const char *const invalid_cases[] = {
    "", "{", "[1,2,]", "{\"a\":}", "{\"a\" 1}", "01", "1.", "-", "1e", "1e+",
    "tru", "nulls", "\"unterminated", "\"bad \\x escape\"", "\"\\ud800\"",
    "\"\\udc00\"", "[1 2]", "{1: 2}", "[\"tab\there\"]", "{} {}", "[-]", ".5",
};

static bool stats_equal(const json_stats *a, const json_stats *b)
{
    return a->objects == b->objects && a->arrays == b->arrays && a->keys == b->keys &&
           a->strings == b->strings && a->numbers == b->numbers && a->bools == b->bools &&
           a->nulls == b->nulls && a->tokens == b->tokens && a->max_depth == b->max_depth &&
           a->id_keys == b->id_keys && a->int_sum == b->int_sum &&
           a->string_bytes == b->string_bytes;
}

int main(void)
{
    int failures = 0;
    size_t nvalid = sizeof valid_cases / sizeof valid_cases[0];
    size_t ninvalid = sizeof invalid_cases / sizeof invalid_cases[0];
    json_stats st;

    for (size_t i = 0; i < nvalid; i++) {
        if (!json_validate(valid_cases[i].text, &st) || !stats_equal(&st, &valid_cases[i].expect)) {
            failures++;
        }
    }
    for (size_t i = 0; i < ninvalid; i++)
        if (json_validate(invalid_cases[i], &st))
            failures++;

    /* nesting limit: 63 levels accepted, 65 rejected */
    char deep[200];
    for (int levels = 63; levels <= 65; levels += 2) {
        size_t n = 0;
        for (int i = 0; i < levels; i++) deep[n++] = '[';
        for (int i = 0; i < levels; i++) deep[n++] = ']';
        deep[n] = '\0';
        bool ok = json_validate(deep, &st);
        if (ok != (levels == 63) || (ok && st.max_depth != 63))
            failures++;
    }

    /* UTF-8 encoder spot checks */
    char buf[4];
    if (utf8_encode(0x20AC, buf) != 3 || (unsigned char)buf[0] != 0xE2 ||
        (unsigned char)buf[1] != 0x82 || (unsigned char)buf[2] != 0xAC)
        failures++;

    printf("json_tokenizer: %zu valid, %zu invalid cases, %d failures\n", nvalid, ninvalid, failures);
    return failures == 0 ? 0 : 1;
}
