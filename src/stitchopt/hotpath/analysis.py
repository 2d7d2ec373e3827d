"""What LLVM itself says about a module's blocks: block frequencies (`print<block-freq>`: static estimates,
or profile counts when the IR carries `!prof` weights and entry counts) and loop nesting (`print<loops>`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.process import run_tool

ANALYSIS_TIMEOUT_S = 300.0
_BFI_HEAD_RE = re.compile(r"^Printing analysis results of BFI for function '(.*)':$")
_LOOP_HEAD_RE = re.compile(r"^Loop info for function '(.*)':$")
_FREQ_RE = re.compile(r"^ - .*: float = ([0-9.e+-]+|inf), int = \d+(?:, count = (\d+))?")
_LOOP_RE = re.compile(r"^(\s*)Loop at depth (\d+) containing: (.*)$")
_PROF_RE = re.compile(r"(?:, )?!prof ![0-9]+")


@dataclass(frozen=True)
class FunctionAnalysis:
    frequencies: tuple[float, ...]  # per block, relative to the entry (1.0)
    counts: tuple[int, ...] | None  # per block, from a profile: None without one
    loop_depth: dict[str, int]  # block label -> deepest loop containing it (absent: 0)
    loop_headers: frozenset[str]


def without_profile(ir_text: str) -> str:
    """The same IR with branch weights and entry counts removed: what static estimates are made from."""
    return _PROF_RE.sub("", ir_text)


def analyse(toolchain: Toolchain, ir_text: str) -> dict[str, FunctionAnalysis]:
    """Frequencies and loops of every defined function (one `opt` run)."""
    done = run_tool(
        opt_command(toolchain.tool("opt"), "function(print<block-freq>,print<loops>)", args=["-disable-output", "-"]),
        stdin=ir_text.encode(),
        timeout=ANALYSIS_TIMEOUT_S,
    )
    if done.returncode != 0 or done.timed_out:
        raise InputError(f"opt could not analyse the module: {first_error(done.stderr_text) or 'timed out'}")
    frequencies: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    depths: dict[str, dict[str, int]] = {}
    headers: dict[str, set[str]] = {}
    current, section = "", ""
    for line in done.stderr_text.splitlines():
        if head := _BFI_HEAD_RE.match(line):
            current, section = head.group(1), "bfi"
            frequencies[current], counts[current] = [], []
        elif head := _LOOP_HEAD_RE.match(line):
            current, section = head.group(1), "loops"
            depths.setdefault(current, {})
            headers.setdefault(current, set())
        elif section == "bfi" and (freq := _FREQ_RE.match(line)):
            frequencies[current].append(float(freq.group(1)))
            if freq.group(2) is not None:
                counts[current].append(int(freq.group(2)))
        elif section == "loops" and (loop := _LOOP_RE.match(line)):
            depth = int(loop.group(2))
            for member in loop.group(3).split(","):
                label = member.split("<", 1)[0].strip().removeprefix("%").strip('"')
                depths[current][label] = max(depths[current].get(label, 0), depth)
                if "<header>" in member:
                    headers[current].add(label)
    return {
        name: FunctionAnalysis(
            tuple(freqs),
            tuple(counts[name]) if len(counts[name]) == len(freqs) and freqs else None,
            depths.get(name, {}),
            frozenset(headers.get(name, set())),
        )
        for name, freqs in frequencies.items()
    }
