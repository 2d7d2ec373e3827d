/* demo-v1: precedence-climbing expression parser with AST, constant folding, RPN printer, checked evaluator */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef enum { N_NUM, N_VAR, N_NEG, N_NOT, N_BIN, N_COND, N_CALL } node_kind;

typedef enum {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_POW,
    OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_AND, OP_OR, OP_NONE
} binop;

typedef enum { E_OK, E_SYNTAX, E_DIVZERO, E_OVERFLOW, E_UNKNOWN, E_DOMAIN } err_code;

typedef struct {
    node_kind kind;
    binop op;
    int64_t value;
    int a, b, c;     /* child node indices */
    char name[8];
} node;

#define MAX_NODES 256

typedef struct {
    const char *s;
    size_t pos;
    node nodes[MAX_NODES];
    int nnodes;
    err_code err;
} parser;

typedef struct { const char *name; int64_t value; } var_binding;

typedef err_code (*builtin_fn)(int64_t a, int64_t b, int64_t *out);

static const struct { const char *text; binop op; int prec; bool right; } op_table[] = {
    {"||", OP_OR, 1, false}, {"&&", OP_AND, 2, false},
    {"==", OP_EQ, 3, false}, {"!=", OP_NE, 3, false},
    {"<=", OP_LE, 4, false}, {">=", OP_GE, 4, false},
    {"<", OP_LT, 4, false},  {">", OP_GT, 4, false},
    {"+", OP_ADD, 5, false}, {"-", OP_SUB, 5, false},
    {"*", OP_MUL, 6, false}, {"/", OP_DIV, 6, false}, {"%", OP_MOD, 6, false},
    {"^", OP_POW, 8, true},
};
#define UNARY_PREC 7

static const char *const op_names[] = {"+", "-", "*", "/", "%", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};

static err_code checked_add(int64_t a, int64_t b, int64_t *out)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return E_OVERFLOW;
    *out = a + b;
    return E_OK;
}

static err_code checked_sub(int64_t a, int64_t b, int64_t *out)
{
    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return E_OVERFLOW;
    *out = a - b;
    return E_OK;
}

static err_code checked_mul(int64_t a, int64_t b, int64_t *out)
{
    if (a == 0 || b == 0) { *out = 0; return E_OK; }
    if ((a == -1 && b == INT64_MIN) || (b == -1 && a == INT64_MIN)) return E_OVERFLOW;
    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
              : (b > 0 ? a < INT64_MIN / b : a < INT64_MAX / b))
        return E_OVERFLOW;
    *out = a * b;
    return E_OK;
}

static err_code checked_pow(int64_t base, int64_t exp, int64_t *out)
{
    if (exp < 0) return E_DOMAIN;
    int64_t r = 1;
    while (exp > 0) {
        if (exp & 1) {
            if (checked_mul(r, base, &r) != E_OK) return E_OVERFLOW;
        }
        exp >>= 1;
        if (exp > 0 && checked_mul(base, base, &base) != E_OK) return E_OVERFLOW;
    }
    *out = r;
    return E_OK;
}

static err_code fn_min(int64_t a, int64_t b, int64_t *out) { *out = a < b ? a : b; return E_OK; }
static err_code fn_max(int64_t a, int64_t b, int64_t *out) { *out = a > b ? a : b; return E_OK; }
static err_code fn_gcd(int64_t a, int64_t b, int64_t *out)
{
    if (a == INT64_MIN || b == INT64_MIN) return E_OVERFLOW;
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b != 0) { int64_t t = a % b; a = b; b = t; }
    *out = a;
    return E_OK;
}

static const struct { const char *name; builtin_fn fn; } builtins[] = {
    {"min", fn_min}, {"max", fn_max}, {"gcd", fn_gcd},
};

static void skip_ws(parser *p) { while (p->s[p->pos] == ' ') p->pos++; }

static int new_node(parser *p, node_kind k)
{
    if (p->nnodes >= MAX_NODES) { p->err = E_SYNTAX; return 0; }
    node *n = &p->nodes[p->nnodes];
    memset(n, 0, sizeof *n);
    n->kind = k;
    n->op = OP_NONE;
    n->a = n->b = n->c = -1;
    return p->nnodes++;
}

static bool accept(parser *p, char c)
{
    skip_ws(p);
    if (p->s[p->pos] == c) { p->pos++; return true; }
    return false;
}

static int parse_expr(parser *p, int min_prec);

static int parse_primary(parser *p)
{
    skip_ws(p);
    char c = p->s[p->pos];
    if (c >= '0' && c <= '9') {
        int id = new_node(p, N_NUM);
        int64_t v = 0;
        while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
            int d = p->s[p->pos++] - '0';
            if (v > (INT64_MAX - d) / 10) { p->err = E_OVERFLOW; return id; }
            v = v * 10 + d;
        }
        p->nodes[id].value = v;
        return id;
    }
    if ((c >= 'a' && c <= 'z') || c == '_') {
        char name[8];
        size_t n = 0;
        while ((p->s[p->pos] >= 'a' && p->s[p->pos] <= 'z') || p->s[p->pos] == '_') {
            if (n + 1 >= sizeof name) { p->err = E_SYNTAX; return 0; }
            name[n++] = p->s[p->pos++];
        }
        name[n] = '\0';
        if (accept(p, '(')) {
            int id = new_node(p, N_CALL);
            int a = parse_expr(p, 1);
            if (!accept(p, ',')) p->err = E_SYNTAX;
            int b = parse_expr(p, 1);
            if (!accept(p, ')')) p->err = E_SYNTAX;
            p->nodes[id].a = a;
            p->nodes[id].b = b;
            memcpy(p->nodes[id].name, name, n + 1);
            return id;
        }
        int id = new_node(p, N_VAR);
        memcpy(p->nodes[id].name, name, n + 1);
        return id;
    }
    if (accept(p, '(')) {
        int id = parse_expr(p, 0);
        if (!accept(p, ')')) p->err = E_SYNTAX;
        return id;
    }
    if (accept(p, '-') || (c == '!' && accept(p, '!'))) {
        int id = new_node(p, c == '!' ? N_NOT : N_NEG);
        int a = parse_expr(p, UNARY_PREC);
        p->nodes[id].a = a;
        return id;
    }
    p->err = E_SYNTAX;
    return 0;
}

static int match_binop(parser *p, int *prec, bool *right)
{
    skip_ws(p);
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++) {
        size_t len = strlen(op_table[i].text);
        if (strncmp(p->s + p->pos, op_table[i].text, len) == 0) {
            *prec = op_table[i].prec;
            *right = op_table[i].right;
            return (int)i;
        }
    }
    return -1;
}

static int parse_expr(parser *p, int min_prec)
{
    int lhs = parse_primary(p);
    for (;;) {
        if (p->err != E_OK) return lhs;
        int prec;
        bool right;
        int idx = match_binop(p, &prec, &right);
        if (idx < 0 || prec < min_prec) break;
        p->pos += strlen(op_table[idx].text);
        int rhs = parse_expr(p, right ? prec : prec + 1);
        int id = new_node(p, N_BIN);
        p->nodes[id].op = op_table[idx].op;
        p->nodes[id].a = lhs;
        p->nodes[id].b = rhs;
        lhs = id;
    }
    if (min_prec == 0 && accept(p, '?')) {
        int id = new_node(p, N_COND);
        int t = parse_expr(p, 0);
        if (!accept(p, ':')) p->err = E_SYNTAX;
        int f = parse_expr(p, 0);
        p->nodes[id].a = lhs;
        p->nodes[id].b = t;
        p->nodes[id].c = f;
        return id;
    }
    return lhs;
}

static err_code apply_binop(binop op, int64_t x, int64_t y, int64_t *out)
{
    switch (op) {
    case OP_ADD: return checked_add(x, y, out);
    case OP_SUB: return checked_sub(x, y, out);
    case OP_MUL: return checked_mul(x, y, out);
    case OP_DIV:
    case OP_MOD:
        if (y == 0) return E_DIVZERO;
        if (x == INT64_MIN && y == -1) return E_OVERFLOW;
        *out = op == OP_DIV ? x / y : x % y;
        return E_OK;
    case OP_POW: return checked_pow(x, y, out);
    case OP_LT: *out = x < y; return E_OK;
    case OP_LE: *out = x <= y; return E_OK;
    case OP_GT: *out = x > y; return E_OK;
    case OP_GE: *out = x >= y; return E_OK;
    case OP_EQ: *out = x == y; return E_OK;
    case OP_NE: *out = x != y; return E_OK;
    case OP_AND: *out = x && y; return E_OK;
    case OP_OR: *out = x || y; return E_OK;
    default: return E_SYNTAX;
    }
}

err_code eval_node(const parser *p, int id, const var_binding *vars, size_t nvars, int64_t *out)
{
    const node *n = &p->nodes[id];
    int64_t x, y;
    err_code e;
    switch (n->kind) {
    case N_NUM:
        *out = n->value;
        return E_OK;
    case N_VAR:
        for (size_t i = 0; i < nvars; i++)
            if (strcmp(vars[i].name, n->name) == 0) { *out = vars[i].value; return E_OK; }
        return E_UNKNOWN;
    case N_NEG:
        if ((e = eval_node(p, n->a, vars, nvars, &x)) != E_OK) return e;
        return checked_sub(0, x, out);
    case N_NOT:
        if ((e = eval_node(p, n->a, vars, nvars, &x)) != E_OK) return e;
        *out = !x;
        return E_OK;
    case N_COND:
        if ((e = eval_node(p, n->a, vars, nvars, &x)) != E_OK) return e;
        return eval_node(p, x ? n->b : n->c, vars, nvars, out);
    case N_CALL:
        for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
            if (strcmp(builtins[i].name, n->name) != 0) continue;
            if ((e = eval_node(p, n->a, vars, nvars, &x)) != E_OK) return e;
            if ((e = eval_node(p, n->b, vars, nvars, &y)) != E_OK) return e;
            return builtins[i].fn(x, y, out);
        }
        return E_UNKNOWN;
    case N_BIN:
        if ((e = eval_node(p, n->a, vars, nvars, &x)) != E_OK) return e;
        if (n->op == OP_AND && !x) { *out = 0; return E_OK; }
        if (n->op == OP_OR && x) { *out = 1; return E_OK; }
        if ((e = eval_node(p, n->b, vars, nvars, &y)) != E_OK) return e;
        return apply_binop(n->op, x, y, out);
    }
    return E_SYNTAX;
}

/* Replace constant subtrees with N_NUM nodes; returns number of folds. */
static int fold_constants(parser *p, int id)
{
    node *n = &p->nodes[id];
    int folds = 0;
    if (n->a >= 0) folds += fold_constants(p, n->a);
    if (n->b >= 0) folds += fold_constants(p, n->b);
    if (n->c >= 0) folds += fold_constants(p, n->c);
    if (n->kind == N_NUM || n->kind == N_VAR)
        return folds;
    bool all_const = p->nodes[n->a].kind == N_NUM &&
                     (n->b < 0 || p->nodes[n->b].kind == N_NUM) &&
                     (n->c < 0 || p->nodes[n->c].kind == N_NUM);
    int64_t v;
    if (all_const && eval_node(p, id, NULL, 0, &v) == E_OK) {
        n->kind = N_NUM;
        n->value = v;
        n->a = n->b = n->c = -1;
        folds++;
    }
    return folds;
}

static void to_rpn(const parser *p, int id, char *buf, size_t cap)
{
    const node *n = &p->nodes[id];
    char tmp[32];
    if (n->a >= 0) to_rpn(p, n->a, buf, cap);
    if (n->b >= 0) to_rpn(p, n->b, buf, cap);
    if (n->c >= 0) to_rpn(p, n->c, buf, cap);
    switch (n->kind) {
    case N_NUM: snprintf(tmp, sizeof tmp, "%lld", (long long)n->value); break;
    case N_VAR: snprintf(tmp, sizeof tmp, "%s", n->name); break;
    case N_NEG: snprintf(tmp, sizeof tmp, "neg"); break;
    case N_NOT: snprintf(tmp, sizeof tmp, "not"); break;
    case N_COND: snprintf(tmp, sizeof tmp, "?:"); break;
    case N_CALL: snprintf(tmp, sizeof tmp, "%s()", n->name); break;
    case N_BIN: snprintf(tmp, sizeof tmp, "%s", op_names[n->op]); break;
    }
    size_t len = strlen(buf);
    if (len > 0 && len + 1 < cap) buf[len++] = ' ';
    snprintf(buf + len, cap - len, "%s", tmp);
}

static err_code parse(parser *p, const char *text, int *root)
{
    memset(p, 0, sizeof *p);
    p->s = text;
    *root = parse_expr(p, 0);
    skip_ws(p);
    if (p->err == E_OK && p->s[p->pos] != '\0') p->err = E_SYNTAX;
    return p->err;
}

struct expr_case {
    const char *text;
    err_code err;
    int64_t value;
    const char *rpn; /* after constant folding, NULL = don't check */
};

static const struct expr_case cases[] = {
    {"1 + 2 * 3", E_OK, 7, "7"},
    {"(1 + 2) * 3", E_OK, 9, "9"},
    {"2 ^ 3 ^ 2", E_OK, 512, "512"},
    {"-2 ^ 2", E_OK, -4, "-4"},
    {"x * (y + 4) - z / 7", E_OK, -7, "x y 4 + * z 7 / -"},
    {"-7 / 2 + -7 % 2 * 10", E_OK, -13, "-13"},
    {"x > 5 && y < 0 ? 100 : 200", E_OK, 100, "x 5 > y 0 < && 100 200 ?:"},
    {"!(x == 7) || z >= 100", E_OK, 1, NULL},
    {"max(x, z) - min(y, 2 * 3) + gcd(84, 36)", E_OK, 115, "x z max() y 6 min() - 12 +"},
    {"2 ^ 62 + (2 ^ 62 - 1)", E_OK, INT64_MAX, "9223372036854775807"},
    {"x - y - z", E_OK, -90, "x y - z -"},
    {"1 <= 2 == 1 != 0", E_OK, 1, "1"},
    {"y ^ 3 * (z % 13)", E_OK, -243, "y 3 ^ z 13 % *"},
    {"0 && 1 / 0", E_OK, 0, "0 1 0 / &&"},
    {"1 || unknown", E_OK, 1, NULL},
    {"x / (y + 3)", E_DIVZERO, 0, NULL},
    {"2 ^ 63", E_OVERFLOW, 0, NULL},
    {"3 ^ -1", E_DOMAIN, 0, NULL},
    {"w + 1", E_UNKNOWN, 0, NULL},
    {"foo(1, 2)", E_UNKNOWN, 0, NULL},
    {"(1 + 2", E_SYNTAX, 0, NULL},
    {"1 + * 2", E_SYNTAX, 0, NULL},
    {"4 5", E_SYNTAX, 0, NULL},
    {"99999999999999999999", E_OVERFLOW, 0, NULL},
};

int main(void)
{
    static const var_binding vars[] = {{"x", 7}, {"y", -3}, {"z", 100}};
    static parser p;
    int failures = 0, total_folds = 0;
    size_t n = sizeof cases / sizeof cases[0];

    for (size_t i = 0; i < n; i++) {
        const struct expr_case *c = &cases[i];
        int root;
        int64_t v = 0, v2 = 0;
        err_code e = parse(&p, c->text, &root);
        if (e == E_OK)
            e = eval_node(&p, root, vars, 3, &v);
        if (e != c->err || (e == E_OK && v != c->value)) {
            failures++;
            continue;
        }
        if (e != E_OK)
            continue;
        total_folds += fold_constants(&p, root);
        if (eval_node(&p, root, vars, 3, &v2) != E_OK || v2 != v)
            failures++;
        if (c->rpn) {
            char buf[128] = "";
            to_rpn(&p, root, buf, sizeof buf);
            if (strcmp(buf, c->rpn) != 0)
                failures++;
        }
    }
    if (total_folds < 10)
        failures++;
    printf("expr_parser: %zu cases, %d folds, %d failures\n", n, total_folds, failures);
    return failures == 0 ? 0 : 1;
}
