"""Opcode and result-type histograms plus a few module-level counts: a wider, flatter view than Autophase.

Features, in this order:
- `op_<opcode>` for each of the 65 LLVM 19 opcodes in `irtext.OPCODES` (every instruction counts once);
- `type_<bin>` for each instruction's result type in `TYPE_BINS`: i1, i8, i16, i32, i64, other integer widths,
  float, double, pointer, vector, aggregate (struct, array, named type), void (store, br, `call void`, ...),
  other (half, x86_fp80, fp128, token, ...);
- module counts: defined and declared functions, global variables (incl. external ones), string constants
  (initializers written `c"..."`), and approximate bytes of initialized `constant` and of initialized mutable
  globals (sum of field sizes, pointers 8 bytes, no padding: a size signal, not a layout).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from stitchopt.features.base import FloatVector
from stitchopt.features.irtext import (
    BINARY_OPS,
    CAST_OPS,
    INSTRUCTION_RE,
    NAME,
    NAMED_TYPE_DEF_RE,
    OPCODE_SET,
    OPCODES,
    aggregate_parts,
    read_type,
)
from stitchopt.features.module import FeatureModule

TYPE_BINS = (
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "int_other",
    "float",
    "double",
    "pointer",
    "vector",
    "aggregate",
    "void",
    "other",
)
MODULE_COUNTS = (
    "defined_functions",
    "declared_functions",
    "global_variables",
    "string_constants",
    "constant_data_bytes",
    "variable_data_bytes",
)
FEATURE_NAMES = (
    *(f"op_{op}" for op in OPCODES),
    *(f"type_{name}" for name in TYPE_BINS),
    *(f"module_{name}" for name in MODULE_COUNTS),
)

_VOID_OPS = frozenset(
    {"ret", "br", "switch", "indirectbr", "resume", "unreachable", "cleanupret", "catchret", "store", "fence"}
)
_OPERAND_TYPED_OPS = frozenset({*BINARY_OPS, "fneg", "freeze", "phi", "landingpad", "insertvalue"})
_AFTER_COMMA_OPS = frozenset({"select", "va_arg", "atomicrmw"})  # result type = type of the second operand
_CALL_OPS = frozenset({"call", "invoke", "callbr"})
_CAST_SET = frozenset(CAST_OPS)
_FLAGS_RE = re.compile(
    r" (?:nuw|nsw|exact|disjoint|inbounds|nusw|nnan|ninf|nsz|arcp|contract|afn|reassoc|fast|atomic|volatile)"
)
_WORD_RE = re.compile(r"[a-z_][\w.]*(?:\([^)]*\))?(?: \d+)?")  # an attribute or calling convention: skip it
_INDICES_RE = re.compile(r"((?:, \d+)+)(?:, !|$)")
_GLOBAL_RE = re.compile(rf"@{NAME} = ((?:[a-z_]+(?:\(\w+\))? )*?)(global|constant) ")
_FLOAT_SIZES = {"half": 2, "bfloat": 2, "float": 4, "double": 8, "x86_fp80": 10, "fp128": 16, "ppc_fp128": 16}
_INT_BINS = {"1": "i1", "8": "i8", "16": "i16", "32": "i32", "64": "i64"}


def _skip_flags(rest: str) -> int:
    """Index of the space before the first word that is not a flag."""
    pos = 0
    while (flag := _FLAGS_RE.match(rest, pos)) is not None:
        pos = flag.end()
    return pos


def _type_at(text: str, pos: int) -> str:
    return text[pos : read_type(text, pos)]


def _call_return_type(rest: str) -> str:
    """Skip fast-math flags, calling convention and return attributes; the first type after them."""
    pos = 1
    while pos < len(rest):
        end = read_type(rest, pos)
        if end > pos:
            return rest[pos:end]
        word = _WORD_RE.match(rest, pos)
        if word is None:
            return ""
        pos = word.end() + 1
    return ""


def _element_type(aggregate: str, indices: list[int], named: dict[str, str]) -> str:
    """The type `extractvalue` reaches from `aggregate` through `indices`."""
    current = aggregate
    for index in indices:
        parts = aggregate_parts(named.get(current, current))
        if parts is None:
            return ""
        kind, _, elements = parts
        current = elements[index] if kind == "struct" and index < len(elements) else elements[0]
    return current


def result_type(op: str, rest: str, named: dict[str, str]) -> str:
    """The type an instruction produces, as written in the IR ("void" for none, "" when it cannot be read)."""
    if op in _VOID_OPS:
        return "void"
    if op == "alloca":
        return "ptr"
    if op in ("icmp", "fcmp"):
        operand = _type_at(rest, rest.find(" ", _skip_flags(rest) + 1) + 1)  # type . predicate
        return operand if operand.startswith("<") else "i1"
    if op in _CAST_SET:
        return _type_at(rest, rest.rfind(" to ") + 4)
    if op in _CALL_OPS:
        return _call_return_type(rest)
    if op in ("cmpxchg", "cleanuppad", "catchpad", "catchswitch"):
        return "{}" if op == "cmpxchg" else "token"  # cmpxchg yields a { value, i1 } pair
    if op in ("insertelement", "shufflevector"):
        return "<>"
    if op in _AFTER_COMMA_OPS:
        return _type_at(rest, rest.find(", ") + 2)
    start = _skip_flags(rest) + 1
    if op == "getelementptr":  # a vector of pointers when any operand is a vector
        return "<ptr>" if ", <" in rest[read_type(rest, start) :] else "ptr"
    if op in _OPERAND_TYPED_OPS or op == "load":
        return _type_at(rest, start)
    if op == "extractelement":
        parts = aggregate_parts(_type_at(rest, start))
        return parts[2][0] if parts else ""
    if op == "extractvalue":
        indices = _INDICES_RE.search(rest)
        if indices is None:
            return ""
        return _element_type(_type_at(rest, start), [int(i) for i in indices.group(1)[2:].split(", ")], named)
    return ""


def type_bin(type_text: str) -> str:
    if type_text[:1] == "i" and type_text[1:].isdigit():
        return _INT_BINS.get(type_text[1:], "int_other")
    if type_text.startswith("ptr"):
        return "pointer"
    if type_text in ("float", "double", "void"):
        return type_text
    if type_text.startswith("<{"):
        return "aggregate"
    if type_text.startswith("<"):
        return "vector"
    if type_text[:1] in ("{", "[", "%"):
        return "aggregate"
    return "other"


def type_size(type_text: str, named: dict[str, str], depth: int = 0) -> int:
    """Approximate bytes of one value of the type: sum of fields, pointers 8, no padding."""
    type_text = named.get(type_text, type_text)
    if depth > 32 or not type_text:
        return 0
    if type_text[:1] == "i" and type_text[1:].isdigit():
        return (int(type_text[1:]) + 7) // 8
    if type_text.startswith("ptr"):
        return 8
    if type_text in _FLOAT_SIZES:
        return _FLOAT_SIZES[type_text]
    parts = aggregate_parts(type_text)
    if parts is None:
        return 0
    kind, count, elements = parts
    if kind == "struct":
        return sum(type_size(element, named, depth + 1) for element in elements)
    return count * type_size(elements[0], named, depth + 1)


def histogram_counts(text: str) -> dict[str, int]:
    """All features of one module's `llvm-dis` text, by name."""
    counts: Counter[str] = Counter()
    named: dict[str, str] = {}
    for line in text.splitlines():
        first = line[:1]
        if first == " ":
            match = INSTRUCTION_RE.match(line)
            if match is not None and match.group(1) in OPCODE_SET:
                op = match.group(1)
                counts["op_" + op] += 1
                counts["type_" + type_bin(result_type(op, line[match.end() :], named))] += 1
        elif first == "@":
            _count_global(line, named, counts)
        elif first == "%" and (definition := NAMED_TYPE_DEF_RE.match(line)) is not None:
            body = line[definition.end() :]
            named[definition.group(1)] = "" if body == "opaque" else body
        elif line.startswith("define "):
            counts["module_defined_functions"] += 1
        elif line.startswith("declare "):
            counts["module_declared_functions"] += 1
    return {name: counts[name] for name in FEATURE_NAMES}


def _count_global(line: str, named: dict[str, str], counts: Counter[str]) -> None:
    match = _GLOBAL_RE.match(line)
    if match is None:  # an alias or ifunc
        return
    counts["module_global_variables"] += 1
    if {"external", "extern_weak"} & set(match.group(1).split()):
        return
    value_type = _type_at(line, match.end())
    if line.startswith('c"', match.end() + len(value_type) + 1):
        counts["module_string_constants"] += 1
    kind = "constant" if match.group(2) == "constant" else "variable"
    counts[f"module_{kind}_data_bytes"] += type_size(value_type, named)


class OpcodeTypeHistogram:
    """How many instructions of each opcode and result type, and how much global data a module has."""

    name = "histogram"
    version = 1

    def feature_names(self) -> tuple[str, ...]:
        return FEATURE_NAMES

    def extract(self, module: FeatureModule) -> FloatVector:
        counts = histogram_counts(module.text)
        return np.array([counts[name] for name in FEATURE_NAMES], dtype=np.float64)
