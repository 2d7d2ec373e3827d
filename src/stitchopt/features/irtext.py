"""Reading `llvm-dis` text line by line: the instruction opcodes, where instructions and blocks start, and types.

Shared by the text-based representations so that they agree on what an instruction is. The layout relied on is
the printer's: `define ... {` and `}` at column 0, block labels at column 0, each instruction starting on a
line indented by exactly two spaces, continuation lines (switch cases, `to label` of invoke, landingpad clauses)
and debug records (`#dbg_value`) indented further, a switch table closed by `  ]`.
"""

from __future__ import annotations

import re

# Every LLVM 19 instruction opcode as the IR printer spells it, in `llvm/IR/Instruction.def` order
# (terminators, unary, binary, memory, casts, funclet pads, other).
TERMINATOR_OPS = (
    "ret",
    "br",
    "switch",
    "indirectbr",
    "invoke",
    "resume",
    "unreachable",
    "cleanupret",
    "catchret",
    "catchswitch",
    "callbr",
)
BINARY_OPS = (
    "add",
    "fadd",
    "sub",
    "fsub",
    "mul",
    "fmul",
    "udiv",
    "sdiv",
    "fdiv",
    "urem",
    "srem",
    "frem",
    "shl",
    "lshr",
    "ashr",
    "and",
    "or",
    "xor",
)
MEMORY_OPS = ("alloca", "load", "store", "getelementptr", "fence", "cmpxchg", "atomicrmw")
CAST_OPS = (
    "trunc",
    "zext",
    "sext",
    "fptoui",
    "fptosi",
    "uitofp",
    "sitofp",
    "fptrunc",
    "fpext",
    "ptrtoint",
    "inttoptr",
    "bitcast",
    "addrspacecast",
)
OTHER_OPS = (
    "icmp",
    "fcmp",
    "phi",
    "call",
    "select",
    "va_arg",
    "extractelement",
    "insertelement",
    "shufflevector",
    "extractvalue",
    "insertvalue",
    "landingpad",
    "freeze",
)
OPCODES = (*TERMINATOR_OPS, "fneg", *BINARY_OPS, *MEMORY_OPS, *CAST_OPS, "cleanuppad", "catchpad", *OTHER_OPS)
OPCODE_SET = frozenset(OPCODES)

# A value, block or type name after its sigil (`%`, `@`) or before a label colon: plain or quoted.
NAME = r'(?:"(?:[^"\\]|\\.)*"|[-\w$.]+)'
# `  %x = tail call ...` -> "call"; group 1 is the opcode word (check it against OPCODE_SET: `uselistorder`
# directives share the indentation).
INSTRUCTION_RE = re.compile(rf"  (?:%{NAME} = )?(?:(?:tail|musttail|notail) )?([a-z_]+)")
LABEL_DEF_RE = re.compile(rf"({NAME}):")
LABEL_REF_RE = re.compile(rf"label %({NAME})")
NAMED_TYPE_DEF_RE = re.compile(rf"(%{NAME}) = type ")

_SCALAR_TYPE_RE = re.compile(
    rf"(?:i\d+|ptr(?: addrspace\(\d+\))?|void|half|bfloat|float|double|x86_fp80|fp128|ppc_fp128|x86_amx|label"
    rf'|token|metadata|%{NAME}|target\("[^"]*"[^)]*\))(?![-\w$.])'
)
_OPEN, _CLOSE = "<[{", ">]}"


def read_type(text: str, pos: int) -> int:
    """End of the type that starts at `text[pos]`, or `pos` when no type starts there."""
    if pos < len(text) and text[pos] in _OPEN:
        depth = 0
        for index in range(pos, len(text)):
            char = text[index]
            if char in _OPEN:
                depth += 1
            elif char in _CLOSE:
                depth -= 1
                if depth == 0:
                    return index + 1
        return pos
    match = _SCALAR_TYPE_RE.match(text, pos)
    return pos if match is None else match.end()


def split_fields(body: str) -> list[str]:
    """Split `a, {b, c}, d` at its top-level commas (struct fields, aggregate elements)."""
    fields, depth, start = [], 0, 0
    for index, char in enumerate(body):
        if char in _OPEN or char == "(":
            depth += 1
        elif char in _CLOSE or char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            fields.append(body[start:index].strip())
            start = index + 1
    tail = body[start:].strip()
    return [*fields, tail] if tail else fields


def aggregate_parts(type_text: str) -> tuple[str, int, list[str]] | None:
    """`[4 x i32]` -> ("array", 4, ["i32"]); `<2 x i64>` -> ("vector", ...); `{ a, b }`/`<{ a, b }>` -> ("struct",
    2, [a, b]); None for anything else."""
    if type_text.startswith("<{") or type_text.startswith("{"):
        inner = type_text.strip("<>")[1:-1]
        fields = split_fields(inner)
        return ("struct", len(fields), fields)
    if type_text[:1] in "[<":
        count, _, element = type_text[1:-1].partition(" x ")
        if count.strip().isdigit():
            kind = "array" if type_text[0] == "[" else "vector"
            return (kind, int(count), [element.strip()])
    return None
