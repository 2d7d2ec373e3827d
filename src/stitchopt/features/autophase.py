"""The 56 Autophase features (Haj-Ali et al., 2020), counted from `llvm-dis` text in one pass over its lines.

Names and order are those of CompilerGym's `Autophase` observation. Where a description is ambiguous the
original pass (CompilerGym's `InstCount.cpp`) decides, checked against a C++ re-implementation on LLVM 19 over
the demo and PyPI corpora:

- Only defined functions are visited. `TotalFuncs` counts them (declarations are not counted).
- Block counts use the terminator's successors and the predecessor edges *with multiplicity*: a `switch`
  with two cases to the same block gives it two predecessors. `NumEdges` counts every successor slot (switch
  cases, invoke normal/unwind, indirectbr and callbr destinations). An edge is critical when its source has
  more than one successor and its destination more than one predecessor.
- `BeginPhi` counts blocks whose *first* instruction is a phi (at most one per block), not phis.
  `BlockLow` is < 15 instructions, `BlockMid` is [15, 500] (the original also counts > 500, not exported).
- `const32Bit`, `const64Bit`, `numConstZeroes`, `numConstOnes` count operands that are `ConstantInt`s, per
  occurrence: call arguments, GEP indices, switch case values, phi incoming values, `i1 true/false` (as one and
  zero), and the implicit `i32 1` array size of every `alloca`. Integers inside constant expressions,
  aggregate/vector literals, metadata and attributes are not operands and are not counted.
- `binaryConstArg`: binary operators (add ... xor, incl. the floating-point ones) with at least one operand that
  is any `Constant` (an integer, float, undef/poison, null, global or constant expression), not only integers.
- `returnInt`: `call` (not invoke) instructions whose callee is a named function (intrinsics included, indirect
  calls and inline asm excluded) returning an integer type.
- `testUnary` counts `UnaryInstruction`s as the original does: fneg, but also alloca, load, va_arg,
  extractvalue and all casts (not freeze: `UnaryInstruction::classof` leaves it out). It is *not* just `fneg`.
- `TotalMemInst` is getelementptr + load + store + call + invoke + alloca. `BranchCount` equals `NumBrInst`.
- Debug records (`#dbg_value`) are not instructions (LLVM 19 no longer represents them as calls).
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
    LABEL_DEF_RE,
    LABEL_REF_RE,
    OPCODE_SET,
    OPCODES,
    TERMINATOR_OPS,
)
from stitchopt.features.module import FeatureModule

FEATURE_NAMES = (
    "BBNumArgsHi",
    "BBNumArgsLo",
    "onePred",
    "onePredOneSuc",
    "onePredTwoSuc",
    "oneSuccessor",
    "twoPred",
    "twoPredOneSuc",
    "twoEach",
    "twoSuccessor",
    "morePreds",
    "BB03Phi",
    "BBHiPhi",
    "BBNoPhi",
    "BeginPhi",
    "BranchCount",
    "returnInt",
    "CriticalCount",
    "NumEdges",
    "const32Bit",
    "const64Bit",
    "numConstZeroes",
    "numConstOnes",
    "UncondBranches",
    "binaryConstArg",
    "NumAShrInst",
    "NumAddInst",
    "NumAllocaInst",
    "NumAndInst",
    "BlockMid",
    "BlockLow",
    "NumBitCastInst",
    "NumBrInst",
    "NumCallInst",
    "NumGetElementPtrInst",
    "NumICmpInst",
    "NumLShrInst",
    "NumLoadInst",
    "NumMulInst",
    "NumOrInst",
    "NumPHIInst",
    "NumRetInst",
    "NumSExtInst",
    "NumSelectInst",
    "NumShlInst",
    "NumStoreInst",
    "NumSubInst",
    "NumTruncInst",
    "NumXorInst",
    "NumZExtInst",
    "TotalBlocks",
    "TotalInsts",
    "TotalMemInst",
    "TotalFuncs",
    "ArgsPhi",
    "testUnary",
)
_OPCODE_FEATURES = {
    "NumAShrInst": "ashr",
    "NumAddInst": "add",
    "NumAllocaInst": "alloca",
    "NumAndInst": "and",
    "NumBitCastInst": "bitcast",
    "NumBrInst": "br",
    "NumCallInst": "call",
    "NumGetElementPtrInst": "getelementptr",
    "NumICmpInst": "icmp",
    "NumLShrInst": "lshr",
    "NumLoadInst": "load",
    "NumMulInst": "mul",
    "NumOrInst": "or",
    "NumPHIInst": "phi",
    "NumRetInst": "ret",
    "NumSExtInst": "sext",
    "NumSelectInst": "select",
    "NumShlInst": "shl",
    "NumStoreInst": "store",
    "NumSubInst": "sub",
    "NumTruncInst": "trunc",
    "NumXorInst": "xor",
    "NumZExtInst": "zext",
}
_UNARY_INSTRUCTIONS = ("fneg", "alloca", "load", "va_arg", "extractvalue", *CAST_OPS)  # not freeze: see above
_MEMORY_INSTRUCTIONS = ("getelementptr", "load", "store", "call", "invoke", "alloca")
_TERMINATORS = frozenset(TERMINATOR_OPS)
_BINARY = frozenset(BINARY_OPS)

_INT_LITERAL = r"(-?\d+|true|false)"
_NOT_IN_NAME = r"(?<![\w%@.$\"-])"
# `i32 5`, `i32 noundef 5`, `i1 zeroext true`: a typed integer literal, the operand spelling outside binops/phi.
_TYPED_INT_RE = re.compile(
    rf"{_NOT_IN_NAME}i(\d+) (?:(?:noundef|signext|zeroext|inreg|returned|immarg|allocalign) )*{_INT_LITERAL}\b"
)
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
# A return-range attribute or a debug value: integers there are not operands.
_NON_OPERAND_RE = re.compile(rf"{_NOT_IN_NAME}(?:range\([^)]*\)|metadata i\d+ \S+)")
_CONSTEXPR_START_RE = re.compile(
    rf"{_NOT_IN_NAME}(?:getelementptr|bitcast|ptrtoint|inttoptr|addrspacecast|trunc|zext|sext|fptrunc|fpext"
    r"|fptoui|fptosi|uitofp|sitofp|add|sub|mul|shl|lshr|ashr|and|or|xor|udiv|sdiv|urem|srem|fneg|icmp|fcmp"
    r"|select|extractelement|insertelement|shufflevector)(?: [a-z]+| inrange\([^)]*\))* \("
)
_AGGREGATE_RE = re.compile(r"<[^<>\[\]{}]*>|\{[^{}<>\[\]]*\}|\[[^\[\]{}<>]*\]")
_BINOP_RE = re.compile(
    r" (?:(?:nuw|nsw|exact|disjoint|nnan|ninf|nsz|arcp|contract|afn|reassoc|fast) )*(<[^>]*>|\S+) ([^,]+), ([^,]+)"
)
_ICMP_RE = re.compile(r" [a-z]+ (<[^>]*>|\S+) ([^,]+), ([^,]+)")
_INT_TYPE_RE = re.compile(r"i(\d+)\Z")
_INT_LITERAL_RE = re.compile(rf"{_INT_LITERAL}\Z")
_PHI_INT_TYPE_RE = re.compile(r" i(\d+) \[")
_PHI_INT_VALUE_RE = re.compile(rf"\[ {_INT_LITERAL}, ")
_ALLOCA_SIZE_RE = re.compile(r", i\d+ (?:%|-?\d)")
_CALL_RETURNS_INT_RE = re.compile(r" (?:[\w.]+(?:\([^)]*\))? )*?i\d+ (?:\([^)]*\) )?@")


def _strip_constexprs(text: str) -> str:
    """Replace every constant expression `kw (...)` by the placeholder constant `@c`."""
    while (match := _CONSTEXPR_START_RE.search(text)) is not None:
        depth, end = 0, len(text)
        for index in range(match.end() - 1, len(text)):
            if text[index] == "(":
                depth += 1
            elif text[index] == ")":
                depth -= 1
                if depth == 0:
                    end = index + 1
                    break
        text = text[: match.start()] + "@c" + text[end:]
    return text


def typed_int_operands(text: str) -> list[tuple[str, str]]:
    """(bit width, literal) of each typed integer operand in an instruction's text."""
    found: list[tuple[str, str]] = _TYPED_INT_RE.findall(text)
    if not found:
        return found
    original = text
    if '"' in text:
        text = _STRING_RE.sub('""', text)
    if "range(" in text or "metadata " in text:
        text = _NON_OPERAND_RE.sub("", text)
    if "(" in text:
        text = _strip_constexprs(text)
    if "<" in text or "[" in text or "{" in text:
        previous = ""
        while previous != text:
            previous, text = text, _AGGREGATE_RE.sub("", text)
    if text != original:
        found = _TYPED_INT_RE.findall(text)
    return found


class _Block:
    __slots__ = ("name", "size", "phis", "phi_args", "begins_with_phi", "successors")

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.size = 0
        self.phis = 0
        self.phi_args = 0
        self.begins_with_phi = False
        self.successors: list[str] = []


def _block_rows(blocks: list[_Block]) -> list[tuple[int, int, int, int, int, int, int]]:
    """One function's blocks as (successors, predecessors, critical out-edges, phis, phi args, size, begins with
    phi); the per-block features are counted over these rows for the whole module at once."""
    preds = Counter(successor for block in blocks for successor in block.successors)
    return [
        (
            len(block.successors),
            preds[block.name] if block.name is not None else 0,
            sum(1 for successor in block.successors if preds[successor] > 1) if len(block.successors) > 1 else 0,
            block.phis,
            block.phi_args,
            block.size,
            block.begins_with_phi,
        )
        for block in blocks
    ]


def _block_counts(rows: list[tuple[int, int, int, int, int, int, int]]) -> dict[str, int]:
    table = np.array(rows, dtype=np.int64).reshape(-1, 7)
    succ, pred, critical, phis, args, size, begins = table.T
    return {
        name: int(value)
        for name, value in {
            "TotalBlocks": len(table),
            "NumEdges": succ.sum(),
            "CriticalCount": critical.sum(),
            "oneSuccessor": (succ == 1).sum(),
            "twoSuccessor": (succ == 2).sum(),
            "onePred": (pred == 1).sum(),
            "twoPred": (pred == 2).sum(),
            "morePreds": (pred > 2).sum(),
            "onePredOneSuc": ((pred == 1) & (succ == 1)).sum(),
            "twoPredOneSuc": ((pred == 2) & (succ == 1)).sum(),
            "onePredTwoSuc": ((pred == 1) & (succ == 2)).sum(),
            "twoEach": ((pred == 2) & (succ == 2)).sum(),
            "BBNoPhi": (phis == 0).sum(),
            "BB03Phi": ((phis > 0) & (phis <= 3)).sum(),
            "BBHiPhi": (phis > 3).sum(),
            "BBNumArgsHi": (args > 5).sum(),
            "BBNumArgsLo": ((args >= 1) & (args <= 5)).sum(),
            "BlockLow": (size < 15).sum(),
            "BlockMid": ((size >= 15) & (size <= 500)).sum(),
            "BeginPhi": begins.sum(),
            "ArgsPhi": args.sum(),
        }.items()
    }


def autophase_counts(text: str) -> dict[str, int]:
    """The 56 features of one module's `llvm-dis` text, by name."""
    counts: Counter[str] = Counter()
    ops: Counter[str] = Counter()
    constants: list[tuple[str, str]] = []
    blocks: list[_Block] = []
    block_rows: list[tuple[int, int, int, int, int, int, int]] = []
    in_function = False
    current = ""  # opcode of the instruction whose continuation lines may follow
    for line in text.splitlines():
        if not in_function:
            if line.startswith("define "):
                in_function, blocks, current = True, [_Block(None)], ""
                counts["TotalFuncs"] += 1
            continue
        match = INSTRUCTION_RE.match(line)
        if match is None:
            if line.startswith("  "):  # a continuation line or a debug record
                if current in _TERMINATORS:
                    blocks[-1].successors += LABEL_REF_RE.findall(line)
                    if current == "switch":
                        constants += _TYPED_INT_RE.findall(line)
            elif line.startswith("}"):
                block_rows += _block_rows(blocks)
                in_function = False
            elif (label := LABEL_DEF_RE.match(line)) is not None:
                if len(blocks) == 1 and blocks[0].size == 0:
                    blocks[0].name = label.group(1)
                else:
                    blocks.append(_Block(label.group(1)))
            continue
        op = current = match.group(1)
        if op not in OPCODE_SET:
            current = ""
            continue
        block = blocks[-1]
        block.size += 1
        ops[op] += 1
        rest = line[match.end() :]
        if op == "phi":
            block.begins_with_phi |= block.size == 1
            block.phis += 1
            incoming = rest.count("[ ")
            block.phi_args += incoming
            int_type = _PHI_INT_TYPE_RE.match(rest)
            if int_type is not None:
                width = int_type.group(1)
                constants += [(width, value) for value in _PHI_INT_VALUE_RE.findall(rest)]
        elif op in _BINARY or op == "icmp":
            if "(" in rest:
                rest = _strip_constexprs(rest)
            parsed = (_BINOP_RE if op != "icmp" else _ICMP_RE).match(rest)
            if parsed is not None:
                type_text, first, second = parsed.group(1), parsed.group(2).strip(), parsed.group(3).strip()
                if op != "icmp" and (first[:1] != "%" or second[:1] != "%"):
                    counts["binaryConstArg"] += 1
                int_type = _INT_TYPE_RE.match(type_text)
                if int_type is not None:
                    width = int_type.group(1)
                    constants += [(width, value) for value in (first, second) if _INT_LITERAL_RE.match(value)]
        else:
            constants += typed_int_operands(rest)
            if op in _TERMINATORS:
                block.successors += LABEL_REF_RE.findall(rest)
                counts["UncondBranches"] += op == "br" and rest.startswith(" label ")
            elif op == "alloca" and _ALLOCA_SIZE_RE.search(rest) is None:
                constants.append(("32", "1"))  # the implicit array size operand
            elif op == "call" and _CALL_RETURNS_INT_RE.match(rest) is not None:
                counts["returnInt"] += 1
    for (width, value), times in Counter(constants).items():
        counts["const32Bit"] += times * (width == "32")
        counts["const64Bit"] += times * (width == "64")
        counts["numConstOnes"] += times * (value in ("1", "true"))
        counts["numConstZeroes"] += times * (value in ("0", "false"))
    counts.update(_block_counts(block_rows))
    for feature, opcode in _OPCODE_FEATURES.items():
        counts[feature] = ops[opcode]
    counts["BranchCount"] = ops["br"]
    counts["TotalInsts"] = sum(ops[op] for op in OPCODES)
    counts["TotalMemInst"] = sum(ops[op] for op in _MEMORY_INSTRUCTIONS)
    counts["testUnary"] = sum(ops[op] for op in _UNARY_INSTRUCTIONS)
    return {name: counts[name] for name in FEATURE_NAMES}


class Autophase:
    """The classic 56 integer program features, for comparison with published results and as a cheap expert."""

    name = "autophase"
    version = 1

    def feature_names(self) -> tuple[str, ...]:
        return FEATURE_NAMES

    def extract(self, module: FeatureModule) -> FloatVector:
        counts = autophase_counts(module.text)
        return np.array([counts[name] for name in FEATURE_NAMES], dtype=np.float64)
