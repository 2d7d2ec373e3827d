"""The loops of a kernel's PTX: what a list changes in them that ptxas's measures do not show but time does.

On an H200 (docs/results.md, "A time objective"), the lists that ran slower than clang's -O3 had brought back
loops -O3 unrolled fully, closed loops with an unconditional branch back (the loop test at the top: two branches
an iteration where a rotated loop has one), or put fewer loads and stores in innermost loops (unrolled less).
`LoopShape.slower_signs` names these against -O3's shape; `gpu optimize --objective time` keeps no list that
shows one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_LABEL_RE = re.compile(r"^\s*(\$?[A-Za-z_][\w$]*):", re.MULTILINE)
# An instruction: an optional guard predicate (`@%p1`, `@!%p1`), then the opcode.
_INSTRUCTION_RE = re.compile(r"^\s*(@!?%\w+\s+)?([a-z][\w.]*)")
_BRANCH_TARGET_RE = re.compile(r"\s(\$?[A-Za-z_][\w$]*)\s*;")


@dataclass(frozen=True)
class LoopShape:
    """Counts over a kernel and the functions it reaches."""

    loops: int  # loop headers: labels some later branch jumps back to
    unrotated: int  # loops tested at the top: closed by an unconditional branch back that no exit test precedes
    inner_memory: int  # loads and stores (not of parameters) in innermost loop bodies

    def slower_signs(self, reference: LoopShape) -> list[str]:
        """What in this shape, against `reference` (-O3's), went with slower kernels: each with both numbers."""
        signs = []
        if self.loops > reference.loops:
            signs.append(f"loops {reference.loops} -> {self.loops}")
        if self.unrotated > reference.unrotated:
            signs.append(f"unrotated loops {reference.unrotated} -> {self.unrotated}")
        if self.inner_memory < reference.inner_memory:
            signs.append(f"innermost-loop loads/stores {reference.inner_memory} -> {self.inner_memory}")
        return signs


def loop_shape(bodies: Iterable[str]) -> LoopShape:
    """The shape of PTX function bodies (comments removed), summed."""
    loops = unrotated = inner_memory = 0
    for body in bodies:
        shape = _body_shape(body)
        loops, unrotated, inner_memory = (
            loops + shape.loops,
            unrotated + shape.unrotated,
            inner_memory + shape.inner_memory,
        )
    return LoopShape(loops, unrotated, inner_memory)


def _body_shape(body: str) -> LoopShape:
    labels: dict[str, int] = {}
    instructions: list[tuple[str, bool, str]] = []  # opcode, guarded, the line
    for line in body.splitlines():
        label = _LABEL_RE.match(line)
        if label:
            labels[label.group(1)] = len(instructions)
            continue
        match = _INSTRUCTION_RE.match(line)
        if match:
            instructions.append((match.group(2), match.group(1) is not None, line))
    # Each loop: its header's index, the last branch back to it, and whether an unconditional branch closes it.
    spans: dict[int, list[int]] = {}
    closed_unconditionally: set[int] = set()
    for index, (opcode, guarded, line) in enumerate(instructions):
        if opcode.split(".")[0] != "bra":
            continue
        target = _BRANCH_TARGET_RE.search(line)
        header = labels.get(target.group(1)) if target else None
        if header is None or header > index:
            continue
        spans.setdefault(header, []).append(index)
        if not guarded and not _exit_test(instructions[index - 1] if index else None):
            closed_unconditionally.add(header)
    intervals = [(header, max(ends)) for header, ends in spans.items()]
    innermost = [
        (start, end)
        for start, end in intervals
        if not any(start <= other_start and other_end <= end and (other_start, other_end) != (start, end)
                   for other_start, other_end in intervals)
    ]  # fmt: skip
    memory = sum(
        1
        for start, end in innermost
        for opcode, _, _ in instructions[start : end + 1]
        if opcode.startswith(("ld.", "st.")) and not opcode.startswith(("ld.param", "st.param"))
    )
    return LoopShape(len(intervals), len(closed_unconditionally), memory)


def _exit_test(instruction: tuple[str, bool, str] | None) -> bool:
    """A guarded branch: right before an unconditional branch back, the loop's test at its bottom (llc lays out
    some rotated loops as `@%p bra EXIT; bra.uni HEADER`)."""
    return instruction is not None and instruction[1] and instruction[0].split(".")[0] == "bra"
