/* demo-v1: two-pass assembler, disassembler and bytecode stack VM with calls, locals and globals */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    OP_HALT, OP_PUSH, OP_POP, OP_DUP, OP_SWAP, OP_OVER,
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_NEG,
    OP_LT, OP_LE, OP_GT, OP_EQ, OP_NOT,
    OP_JMP, OP_JZ, OP_JNZ, OP_CALL, OP_RET, OP_ENTER,
    OP_LOAD, OP_STORE, OP_GLOADI, OP_GSTOREI, OP_PRINT,
    OP_COUNT
} opcode;

typedef struct {
    const char *name;
    int operands;   /* number of 32-bit operands */
    bool is_branch; /* first operand is a code address */
} op_info;

static const op_info ops[OP_COUNT] = {
    [OP_HALT] = {"halt", 0, false},   [OP_PUSH] = {"push", 1, false},   [OP_POP] = {"pop", 0, false},
    [OP_DUP] = {"dup", 0, false},     [OP_SWAP] = {"swap", 0, false},   [OP_OVER] = {"over", 0, false},
    [OP_ADD] = {"add", 0, false},     [OP_SUB] = {"sub", 0, false},     [OP_MUL] = {"mul", 0, false},
    [OP_DIV] = {"div", 0, false},     [OP_MOD] = {"mod", 0, false},     [OP_NEG] = {"neg", 0, false},
    [OP_LT] = {"lt", 0, false},       [OP_LE] = {"le", 0, false},       [OP_GT] = {"gt", 0, false},
    [OP_EQ] = {"eq", 0, false},       [OP_NOT] = {"not", 0, false},     [OP_JMP] = {"jmp", 1, true},
    [OP_JZ] = {"jz", 1, true},        [OP_JNZ] = {"jnz", 1, true},      [OP_CALL] = {"call", 2, true},
    [OP_RET] = {"ret", 0, false},     [OP_ENTER] = {"enter", 1, false}, [OP_LOAD] = {"load", 1, false},
    [OP_STORE] = {"store", 1, false}, [OP_GLOADI] = {"gloadi", 0, false},
    [OP_GSTOREI] = {"gstorei", 0, false}, [OP_PRINT] = {"print", 0, false},
};

typedef enum {
    VM_OK, VM_STACK_OVERFLOW, VM_STACK_UNDERFLOW, VM_DIV_ZERO, VM_BAD_OPCODE,
    VM_BAD_ADDRESS, VM_OUT_OF_FUEL, VM_CALL_DEPTH, VM_ARITH_OVERFLOW
} vm_status;

#define CODE_MAX 1024
#define STACK_MAX 256
#define FRAMES_MAX 64
#define GLOBALS 1024
#define OUT_MAX 8

typedef struct {
    uint8_t code[CODE_MAX];
    size_t len;
} program;

typedef struct { size_t ret_pc, base; } frame;

typedef struct {
    int64_t stack[STACK_MAX];
    size_t sp;
    frame frames[FRAMES_MAX];
    size_t fp;
    int64_t globals[GLOBALS];
    int64_t out[OUT_MAX];
    size_t nout;
    unsigned long steps;
} vm;

/* ---------------- assembler ---------------- */

typedef struct { char name[16]; int32_t addr; } label;

static void emit_u8(program *p, uint8_t b, bool *ok)
{
    if (p->len >= CODE_MAX) { *ok = false; return; }
    p->code[p->len++] = b;
}

static void emit_i32(program *p, int32_t v, bool *ok)
{
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++) emit_u8(p, (uint8_t)(u >> (8 * i)), ok);
}

static int32_t read_i32(const uint8_t *c)
{
    uint32_t u = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
    return u <= INT32_MAX ? (int32_t)u : -(int32_t)(UINT32_MAX - u) - 1;
}

static int find_opcode(const char *name)
{
    for (int i = 0; i < OP_COUNT; i++)
        if (strcmp(ops[i].name, name) == 0) return i;
    return -1;
}

static bool parse_operand(const char *tok, const label *labels, int nlabels, int32_t *out)
{
    char *end;
    long v = strtol(tok, &end, 10);
    if (end != tok && *end == '\0') {
        *out = (int32_t)v;
        return true;
    }
    for (int i = 0; i < nlabels; i++)
        if (strcmp(labels[i].name, tok) == 0) { *out = labels[i].addr; return true; }
    return false;
}

/* Returns true on success; on failure *err_line holds the 1-based source line. */
bool assemble(const char *src, program *p, int *err_line)
{
    label labels[64];
    int nlabels = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *s = src;
        int line_no = 0;
        bool ok = true;
        p->len = 0;
        while (*s) {
            char line[80], tok[3][16];
            size_t n = strcspn(s, "\n");
            line_no++;
            if (n >= sizeof line) { *err_line = line_no; return false; }
            memcpy(line, s, n);
            line[n] = '\0';
            s += n + (s[n] == '\n');
            char *semi = strchr(line, ';');
            if (semi) *semi = '\0';
            int ntok = sscanf(line, "%15s %15s %15s", tok[0], tok[1], tok[2]);
            if (ntok <= 0) continue;
            size_t tl = strlen(tok[0]);
            if (tok[0][tl - 1] == ':') {
                if (pass == 0) {
                    if (nlabels == 64 || ntok != 1) { *err_line = line_no; return false; }
                    tok[0][tl - 1] = '\0';
                    strcpy(labels[nlabels].name, tok[0]);
                    labels[nlabels++].addr = (int32_t)p->len;
                }
                continue;
            }
            int op = find_opcode(tok[0]);
            if (op < 0 || ntok - 1 != ops[op].operands) { *err_line = line_no; return false; }
            emit_u8(p, (uint8_t)op, &ok);
            for (int k = 0; k < ops[op].operands; k++) {
                int32_t v = 0;
                if (!parse_operand(tok[k + 1], labels, nlabels, &v) && pass == 1) {
                    *err_line = line_no;
                    return false;
                }
                emit_i32(p, v, &ok);
            }
            if (!ok) { *err_line = line_no; return false; }
        }
    }
    return true;
}

/* Writes one instruction per line with numeric operands. */
size_t disassemble(const program *p, char *out, size_t cap)
{
    size_t pc = 0, used = 0;
    out[0] = '\0';
    while (pc < p->len && used < cap) {
        uint8_t op = p->code[pc++];
        if (op >= OP_COUNT) break;
        int w = snprintf(out + used, cap - used, "%s", ops[op].name);
        if (w < 0) break;
        used += (size_t)w;
        for (int k = 0; k < ops[op].operands && pc + 4 <= p->len; k++, pc += 4) {
            w = snprintf(out + used, cap - used, " %ld", (long)read_i32(p->code + pc));
            if (w < 0 || used + (size_t)w >= cap) return cap;
            used += (size_t)w;
        }
        if (used + 1 < cap) {
            out[used++] = '\n';
            out[used] = '\0';
        }
    }
    return used;
}

/* ---------------- interpreter ---------------- */

static int64_t wrap64(uint64_t u) { return u <= INT64_MAX ? (int64_t)u : -(int64_t)(UINT64_MAX - u) - 1; }

#define NEED(k) do { if (m->sp < (k)) return VM_STACK_UNDERFLOW; } while (0)
#define PUSHV(v) do { if (m->sp >= STACK_MAX) return VM_STACK_OVERFLOW; m->stack[m->sp++] = (v); } while (0)

vm_status vm_run(vm *m, const program *p, unsigned long fuel)
{
    size_t pc = 0;
    m->sp = m->fp = m->nout = 0;
    m->steps = 0;
    memset(m->globals, 0, sizeof m->globals);
    m->frames[m->fp++] = (frame){p->len, 0};
    for (;;) {
        if (m->steps++ >= fuel) return VM_OUT_OF_FUEL;
        if (pc >= p->len) return VM_BAD_ADDRESS;
        uint8_t op = p->code[pc++];
        if (op >= OP_COUNT) return VM_BAD_OPCODE;
        int32_t a1 = 0, a2 = 0;
        if (ops[op].operands >= 1) {
            if (pc + 4 * (size_t)ops[op].operands > p->len) return VM_BAD_ADDRESS;
            a1 = read_i32(p->code + pc);
            if (ops[op].operands == 2) a2 = read_i32(p->code + pc + 4);
            pc += 4 * (size_t)ops[op].operands;
        }
        int64_t x, y;
        frame *f = &m->frames[m->fp - 1];
        switch ((opcode)op) {
        case OP_HALT: return VM_OK;
        case OP_PUSH: PUSHV(a1); break;
        case OP_POP: NEED(1); m->sp--; break;
        case OP_DUP: NEED(1); x = m->stack[m->sp - 1]; PUSHV(x); break;
        case OP_OVER: NEED(2); x = m->stack[m->sp - 2]; PUSHV(x); break;
        case OP_SWAP:
            NEED(2);
            x = m->stack[m->sp - 1];
            m->stack[m->sp - 1] = m->stack[m->sp - 2];
            m->stack[m->sp - 2] = x;
            break;
        case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD:
        case OP_LT: case OP_LE: case OP_GT: case OP_EQ:
            NEED(2);
            y = m->stack[--m->sp];
            x = m->stack[m->sp - 1];
            switch ((opcode)op) {
            case OP_ADD: x = wrap64((uint64_t)x + (uint64_t)y); break;
            case OP_SUB: x = wrap64((uint64_t)x - (uint64_t)y); break;
            case OP_MUL: x = wrap64((uint64_t)x * (uint64_t)y); break;
            case OP_DIV:
            case OP_MOD:
                if (y == 0) return VM_DIV_ZERO;
                if (x == INT64_MIN && y == -1) return VM_ARITH_OVERFLOW;
                x = op == OP_DIV ? x / y : x % y;
                break;
            case OP_LT: x = x < y; break;
            case OP_LE: x = x <= y; break;
            case OP_GT: x = x > y; break;
            default: x = x == y; break;
            }
            m->stack[m->sp - 1] = x;
            break;
        case OP_NEG: NEED(1); m->stack[m->sp - 1] = wrap64(0u - (uint64_t)m->stack[m->sp - 1]); break;
        case OP_NOT: NEED(1); m->stack[m->sp - 1] = !m->stack[m->sp - 1]; break;
        case OP_JMP: pc = (size_t)(uint32_t)a1; break;
        case OP_JZ: case OP_JNZ:
            NEED(1);
            x = m->stack[--m->sp];
            if ((x == 0) == (op == OP_JZ)) pc = (size_t)(uint32_t)a1;
            break;
        case OP_CALL:
            if (a2 < 0 || m->sp < (size_t)a2) return VM_STACK_UNDERFLOW;
            if (m->fp >= FRAMES_MAX) return VM_CALL_DEPTH;
            m->frames[m->fp++] = (frame){pc, m->sp - (size_t)a2};
            pc = (size_t)(uint32_t)a1;
            break;
        case OP_RET:
            NEED(f->base + 1);
            x = m->stack[m->sp - 1];
            m->sp = f->base;
            pc = f->ret_pc;
            m->fp--;
            if (m->fp == 0) return VM_BAD_ADDRESS; /* returned from top level */
            PUSHV(x);
            break;
        case OP_ENTER:
            for (int32_t i = 0; i < a1; i++) PUSHV(0);
            break;
        case OP_LOAD:
        case OP_STORE: {
            if (a1 < 0 || f->base + (size_t)a1 >= m->sp) return VM_BAD_ADDRESS;
            int64_t *slot = &m->stack[f->base + (size_t)a1];
            if (op == OP_LOAD) {
                x = *slot;
                PUSHV(x);
            } else {
                if (f->base + (size_t)a1 + 1 >= m->sp) return VM_STACK_UNDERFLOW;
                *slot = m->stack[--m->sp];
            }
            break;
        }
        case OP_GLOADI:
            NEED(1);
            x = m->stack[m->sp - 1];
            if (x < 0 || x >= GLOBALS) return VM_BAD_ADDRESS;
            m->stack[m->sp - 1] = m->globals[x];
            break;
        case OP_GSTOREI:
            NEED(2);
            y = m->stack[--m->sp];
            x = m->stack[--m->sp];
            if (x < 0 || x >= GLOBALS) return VM_BAD_ADDRESS;
            m->globals[x] = y;
            break;
        case OP_PRINT:
            NEED(1);
            x = m->stack[--m->sp];
            if (m->nout < OUT_MAX) m->out[m->nout++] = x;
            break;
        default:
            return VM_BAD_OPCODE;
        }
    }
}

/* ---------------- programs ---------------- */

static const char prog_fact[] =
    "  push 12\n  call fact 1\n  print\n  halt\n"
    "fact:           ; n is local 0\n"
    "  load 0\n  push 2\n  lt\n  jz recurse\n  push 1\n  ret\n"
    "recurse:\n  load 0\n  load 0\n  push 1\n  sub\n  call fact 1\n  mul\n  ret\n";

static const char prog_fib[] =
    "  push 40\n  call fib 1\n  print\n  halt\n"
    "fib:\n  enter 3        ; 1:a 2:b 3:i\n  push 1\n  store 2\n"
    "loop:\n  load 3\n  load 0\n  lt\n  jz done\n"
    "  load 1\n  load 2\n  add\n  load 2\n  store 1\n  store 2\n"
    "  load 3\n  push 1\n  add\n  store 3\n  jmp loop\n"
    "done:\n  load 1\n  ret\n";

static const char prog_sieve[] =
    "  enter 4        ; 0:i 1:j 2:count 3:sum\n  push 2\n  store 0\n"
    "outer:\n  load 0\n  push 1000\n  lt\n  jz finish\n"
    "  load 0\n  gloadi\n  jnz next\n"
    "  load 2\n  push 1\n  add\n  store 2\n  load 3\n  load 0\n  add\n  store 3\n"
    "  load 0\n  load 0\n  mul\n  store 1\n"
    "inner:\n  load 1\n  push 1000\n  lt\n  jz next\n"
    "  load 1\n  push 1\n  gstorei\n  load 1\n  load 0\n  add\n  store 1\n  jmp inner\n"
    "next:\n  load 0\n  push 1\n  add\n  store 0\n  jmp outer\n"
    "finish:\n  load 2\n  print\n  load 3\n  print\n  halt\n";

static const char prog_collatz[] =
    "  enter 3        ; 0:n 1:best_n 2:best_steps\n  push 1\n  store 0\n"
    "loop:\n  load 0\n  push 300\n  le\n  jz end\n"
    "  load 0\n  call collatz 1\n  dup\n  load 2\n  gt\n  jz skip\n"
    "  store 2\n  load 0\n  store 1\n  jmp cont\n"
    "skip:\n  pop\n"
    "cont:\n  load 0\n  push 1\n  add\n  store 0\n  jmp loop\n"
    "end:\n  load 1\n  print\n  load 2\n  print\n  halt\n"
    "collatz:\n  enter 1\n"
    "cl:\n  load 0\n  push 1\n  eq\n  jnz cdone\n"
    "  load 0\n  push 2\n  mod\n  jz even\n"
    "  load 0\n  push 3\n  mul\n  push 1\n  add\n  store 0\n  jmp cstep\n"
    "even:\n  load 0\n  push 2\n  div\n  store 0\n"
    "cstep:\n  load 1\n  push 1\n  add\n  store 1\n  jmp cl\n"
    "cdone:\n  load 1\n  ret\n";

/* native reference implementations */
static int64_t ref_fact(int64_t n) { return n < 2 ? 1 : n * ref_fact(n - 1); }
static int64_t ref_fib(int n)
{
    int64_t a = 0, b = 1;
    while (n-- > 0) { int64_t t = a + b; a = b; b = t; }
    return a;
}
static int ref_collatz(int64_t n)
{
    int s = 0;
    for (; n != 1; s++) n = n % 2 ? 3 * n + 1 : n / 2;
    return s;
}

struct vm_case {
    const char *name, *src;
    vm_status status;
    size_t nout;
    int64_t out[2];
};

int main(void)
{
    static vm m;
    static program p, p2;
    static char text[8192];
    int failures = 0, err_line = 0;

    /* native references for the expected outputs */
    int64_t primes = 0, psum = 0;
    for (int i = 2; i < 1000; i++) {
        bool prime = true;
        for (int d = 2; d * d <= i; d++) if (i % d == 0) { prime = false; break; }
        if (prime) { primes++; psum += i; }
    }
    int best_n = 0, best_steps = -1;
    for (int n = 1; n <= 300; n++) {
        int s = ref_collatz(n);
        if (s > best_steps) { best_steps = s; best_n = n; }
    }
    if (primes != 168 || psum != 76127 || best_n != 231 || best_steps != 127) failures++;

    const struct vm_case cases[] = {
        {"fact", prog_fact, VM_OK, 1, {ref_fact(12), 0}},
        {"fib", prog_fib, VM_OK, 1, {ref_fib(40), 0}},
        {"sieve", prog_sieve, VM_OK, 2, {primes, psum}},
        {"collatz", prog_collatz, VM_OK, 2, {best_n, best_steps}},
        {"divzero", "push 1\npush 0\ndiv\nhalt\n", VM_DIV_ZERO, 0, {0, 0}},
        {"underflow", "push 1\nadd\nhalt\n", VM_STACK_UNDERFLOW, 0, {0, 0}},
        {"spin", "top:\njmp top\n", VM_OUT_OF_FUEL, 0, {0, 0}},
        {"deep", "f:\ncall f 0\n", VM_CALL_DEPTH, 0, {0, 0}},
        {"fall_off", "push 1\nprint\n", VM_BAD_ADDRESS, 1, {1, 0}},
        {"minmod", "push -7\npush 2\nmod\nprint\npush -7\nneg\nprint\nhalt\n", VM_OK, 2, {-1, 7}},
    };

    unsigned long total_steps = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct vm_case *c = &cases[i];
        if (!assemble(c->src, &p, &err_line)) { failures++; continue; }
        vm_status st = vm_run(&m, &p, 2000000);
        total_steps += m.steps;
        if (st != c->status || m.nout != c->nout) { failures++; continue; }
        for (size_t k = 0; k < c->nout; k++)
            if (m.out[k] != c->out[k]) failures++;

        /* disassemble + reassemble must reproduce the bytecode exactly */
        disassemble(&p, text, sizeof text);
        if (!assemble(text, &p2, &err_line) || p2.len != p.len || memcmp(p.code, p2.code, p.len) != 0)
            failures++;
    }

    /* assembler diagnostics */
    if (assemble("push 1\nfrob\n", &p, &err_line) || err_line != 2) failures++;
    if (assemble("push 1\njmp nowhere\nhalt\n", &p, &err_line) || err_line != 2) failures++;
    if (assemble("\n\npush\n", &p, &err_line) || err_line != 3) failures++;

    printf("stack_vm: %lu instructions executed, %d failures\n", total_steps, failures);
    return failures == 0 ? 0 : 1;
}
