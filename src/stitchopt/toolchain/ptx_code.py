"""What a kernel's PTX shows beside ptxas's measures: its instructions, and its loops, where a list changes what
ptxas's measures do not show but time does.

On an H200 (docs/results.md, "A time objective"), most lists that ran slower than clang's -O3 had more loops
than -O3's code (loops -O3 had unrolled fully), more loops tested at the top (two branches an iteration where a
rotated loop has one), or fewer loads and stores in innermost loops (loops unrolled less).
`LoopShape.slower_signs` names these against -O3's shape; `gpu optimize --objective time` keeps no list that
shows one.

The loops are LLVM's own: llc writes its loop analysis into the PTX as comments on each block (`=>This Loop
Header: Depth=1`, `in Loop: Header=BB1_3 Depth=1`, `Parent Loop ...`, `This Inner Loop Header` for a loop with
no loop inside), which places every block in its loop wherever llc laid it out (a latch may sit above its
header). Branches and fall-throughs between blocks give each loop's latches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# A block starts at a label (`$L__BB1_7:`) or, when no branch targets it, at llc's `// %bb.8:` comment.
_BLOCK_RE = re.compile(r"^(?:\$L__(BB\w+):|\s*// %bb\.\d+:)")
_HEADER_RE = re.compile(r"Loop Header: Depth=\d+")
_MEMBER_RE = re.compile(r"in Loop: Header=(BB\w+) Depth=")
_PARENT_RE = re.compile(r"Parent Loop (BB\w+) Depth=(\d+)")
# An instruction: an optional guard predicate (`@%p1`, `@!%p1`), then the opcode.
_INSTRUCTION_RE = re.compile(r"^\s*(@!?%\w+\s+)?([a-z][\w.]*)")
_BRANCH_TARGET_RE = re.compile(r"\$L__(BB\w+)\s*;")
_VECTOR_RE = re.compile(r"\.v(\d+)\.")
_MEMORY_OPCODES = ("ld.", "st.", "atom.", "red.")
_PARAMETER_OPCODES = ("ld.param", "st.param")


@dataclass(frozen=True)
class LoopShape:
    """Counts over a kernel and the functions it reaches."""

    loops: int
    unrotated: int  # loops whose every latch branches back unconditionally: tested at the top
    inner_memory: int  # elements loaded or stored (not parameters) in innermost loops; a .v4 access counts 4

    def slower_signs(self, reference: LoopShape) -> list[str]:
        """Where this shape is worse than `reference` (-O3's) in what went with slower kernels, both numbers."""
        signs = []
        if self.loops > reference.loops:
            signs.append(f"loops {reference.loops} -> {self.loops}")
        if self.unrotated > reference.unrotated:
            signs.append(f"unrotated loops {reference.unrotated} -> {self.unrotated}")
        if self.inner_memory < reference.inner_memory:
            signs.append(f"innermost-loop loads/stores {reference.inner_memory} -> {self.inner_memory}")
        return signs


@dataclass(frozen=True)
class PtxCode:
    """A kernel's PTX with the functions it reaches: instructions (labels, directives and comments aside) and
    loops."""

    instructions: int
    loops: LoopShape


def ptx_code(bodies: Iterable[str]) -> PtxCode:
    """What PTX function bodies as llc writes them (its comments kept) add up to."""
    parsed = [_blocks(body) for body in bodies]
    shapes = [_body_shape(blocks) for blocks in parsed]
    return PtxCode(
        sum(block.instructions for blocks in parsed for block in blocks),
        LoopShape(
            sum(shape.loops for shape in shapes),
            sum(shape.unrotated for shape in shapes),
            sum(shape.inner_memory for shape in shapes),
        ),
    )


@dataclass
class _Block:
    name: str | None  # BBx_y when a label starts it
    comments: list[str] = field(default_factory=list)  # llc's loop comments on its first lines
    targets: list[str] = field(default_factory=list)  # blocks its branches go to
    falls_through: bool = True  # no unconditional branch, ret or exit ends it
    memory: int = 0
    instructions: int = 0


def _body_shape(blocks: list[_Block]) -> LoopShape:
    headers = {b.name: b for b in blocks if b.name and any(_HEADER_RE.search(c) for c in b.comments)}
    parent: dict[str, str] = {}
    for name, header in headers.items():
        parents = [_PARENT_RE.search(c) for c in header.comments]
        found = [(int(m.group(2)), m.group(1)) for m in parents if m]
        if found:
            parent[name] = max(found)[1]
    innermost = {name for name, header in headers.items() if any("Inner Loop Header" in c for c in header.comments)}

    def loop_of(block: _Block) -> str | None:
        if block.name in headers:
            return block.name
        members = [m.group(1) for m in map(_MEMBER_RE.search, block.comments) if m]
        return members[0] if members else None

    def enclosing(loop: str | None) -> set[str]:
        chain = set()
        while loop is not None and loop not in chain:
            chain.add(loop)
            loop = parent.get(loop)
        return chain

    loops = [enclosing(loop_of(block)) for block in blocks]  # the loops each block is in
    successors = _successors(blocks)
    unrotated = 0
    for name in headers:
        latches = [
            targets for within, targets in zip(loops, successors, strict=True) if name in within and name in targets
        ]
        if latches and all(len(set(targets)) == 1 for targets in latches):
            unrotated += 1
    inner_memory = sum(block.memory for block in blocks if loop_of(block) in innermost)
    return LoopShape(len(headers), unrotated, inner_memory)


def _successors(blocks: list[_Block]) -> list[list[str]]:
    """Each block's successors: its branch targets, and the next block where it falls through (`#i` for a block
    with no label, or past the body's end)."""
    found = []
    for index, block in enumerate(blocks):
        following = blocks[index + 1].name if index + 1 < len(blocks) else None
        found.append([*block.targets, *([following or f"#{index + 1}"] if block.falls_through else [])])
    return found


def _blocks(body: str) -> list[_Block]:
    """The body's blocks in order, each with its loop comments, branch targets, fall-through and memory."""
    blocks = [_Block(None)]
    in_header_comments = False
    for line in body.splitlines():
        code, _, comment = line.partition("//")
        start = _BLOCK_RE.match(line)
        if start:
            blocks.append(_Block(start.group(1)))
            rest = line[start.end() :]
            blocks[-1].comments.append(rest.partition("//")[2])
            in_header_comments = True
            continue
        if in_header_comments and not code.strip() and comment:
            blocks[-1].comments.append(comment)  # llc continues a block's loop comment on lines of their own
            continue
        in_header_comments = False
        match = _INSTRUCTION_RE.match(code)
        if not match:
            continue
        guarded, opcode, block = match.group(1) is not None, match.group(2), blocks[-1]
        block.instructions += 1
        if opcode.split(".")[0] == "bra":
            target = _BRANCH_TARGET_RE.search(code)
            if target:
                block.targets.append(target.group(1))
            block.falls_through = guarded
        elif opcode in ("ret", "exit") and not guarded:
            block.falls_through = False
        elif opcode.startswith(_MEMORY_OPCODES) and not opcode.startswith(_PARAMETER_OPCODES):
            vector = _VECTOR_RE.search(opcode)
            block.memory += int(vector.group(1)) if vector else 1
    return blocks
