"""Functions and basic blocks of textual LLVM IR, in layout order: each block's instruction opcodes, successor
labels and direct callees. Enough structure for block features and hot paths without an LLVM binding; the order
is the one `opt -passes='print<block-freq>'` prints, so blocks are matched to frequencies by position."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stitchopt.features.irtext import LABEL_DEF_RE, LABEL_REF_RE, NAME, TERMINATOR_OPS

_DEFINE_RE = re.compile(rf"^define\b[^@]*@({NAME})\(")
_LABEL_RE = re.compile(rf"^{LABEL_DEF_RE.pattern}")
_CALLEE_RE = re.compile(rf"\b(?:call|invoke)\b[^@]*?@({NAME})\(")
_ASSIGN_RE = re.compile(r"^\s*%\S+\s*=\s*")
_PREFIXES = {"tail", "musttail", "notail"}
TERMINATORS = frozenset(TERMINATOR_OPS)


@dataclass(frozen=True)
class Block:
    label: str  # without the %; the entry block's is its implicit number (or name)
    opcodes: tuple[str, ...]
    successors: tuple[str, ...]
    callees: tuple[str, ...]  # direct calls, intrinsics included


@dataclass(frozen=True)
class Function:
    name: str
    blocks: tuple[Block, ...]
    linkage: str = ""  # e.g. internal, linkonce_odr (inline and template code from headers); "" for external

    def index(self) -> dict[str, int]:
        return {block.label: i for i, block in enumerate(self.blocks)}


def _name(text: str) -> str:
    return text[1:-1] if text.startswith('"') else text


def _opcode(line: str) -> str:
    words = _ASSIGN_RE.sub("", line).split()
    while words and words[0] in _PREFIXES:
        words = words[1:]
    return words[0] if words else ""


def _entry_label(define: str) -> str:
    """The entry block's implicit number: one past the unnamed arguments (`%0`, `%1`, ...)."""
    arguments = define[define.index("(") + 1 : define.rindex(")")] if ")" in define else ""
    numbered = [int(n) for n in re.findall(r"%(\d+)\b", arguments)]
    return str(max(numbered) + 1) if numbered else "0"


_LINKAGES = (
    "private",
    "internal",
    "available_externally",
    "linkonce_odr",
    "linkonce",
    "weak_odr",
    "weak",
    "common",
    "appending",
    "extern_weak",
)


def _linkage(define: str) -> str:
    words = define.split("@", 1)[0].split()[1:]
    return next((w for w in words if w in _LINKAGES), "")


def parse_functions(ir_text: str) -> list[Function]:
    """Every defined function (declarations have no blocks), blocks in layout order."""
    functions: list[Function] = []
    lines = ir_text.splitlines()
    i = 0
    while i < len(lines):
        match = _DEFINE_RE.match(lines[i])
        if not match:
            i += 1
            continue
        name, label, define = _name(match.group(1)), _entry_label(lines[i]), lines[i]
        blocks: list[Block] = []
        opcodes: list[str] = []
        successors: list[str] = []
        callees: list[str] = []
        in_cases = False  # inside a switch's `[ ... ]` case lines
        i += 1
        while i < len(lines) and lines[i] != "}":
            line = lines[i].split(";", 1)[0].rstrip()
            label_match = _LABEL_RE.match(line)
            if in_cases:
                successors += [_name(t) for t in LABEL_REF_RE.findall(line)]
                in_cases = not line.strip().endswith("]")
            elif label_match:
                if opcodes:
                    blocks.append(Block(label, tuple(opcodes), tuple(successors), tuple(callees)))
                label, opcodes, successors, callees = _name(label_match.group(1)), [], [], []
            elif line.strip():
                opcode = _opcode(line)
                opcodes.append(opcode)
                callees += [_name(c) for c in _CALLEE_RE.findall(line)]
                if opcode in TERMINATORS:
                    successors += [_name(t) for t in LABEL_REF_RE.findall(line)]
                    in_cases = line.endswith("[")
            i += 1
        if opcodes:
            blocks.append(Block(label, tuple(opcodes), tuple(successors), tuple(callees)))
        functions.append(Function(name, tuple(blocks), _linkage(define)))
        i += 1
    return functions
