"""Split a module into per-function parts and link them back, for tuning functions one by one.

`llvm-extract` promotes whatever a part needs from elsewhere (internal functions and globals) to hidden external
symbols, in the part and in the rest alike, so each part can be optimized alone without losing a symbol
another part calls. `llvm-link` joins the parts; `internalize` then gives internal linkage back to every symbol
the original did not export, so the joined module exports exactly what the original did.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import FRONTEND_TIMEOUT_S
from stitchopt.toolchain.llvm import STDIN_TO_STDOUT, opt_command
from stitchopt.toolchain.process import run_tool

_NAME = r'(?:"(?:[^"\\]|\\.)*"|[-\w$.]+)'
_FUNCTION_RE = re.compile(rf"^define\s+([^@]*)@({_NAME})\s*\(", re.M)
_GLOBAL_RE = re.compile(rf"^@({_NAME})\s*=\s*([^\n]*)", re.M)
_HIDDEN_LINKAGE = {"private", "internal"}
_DECLARATION_LINKAGE = {"external", "extern_weak"}


@dataclass(frozen=True)
class Symbols:
    functions: tuple[str, ...]  # defined functions, in module order
    defined: frozenset[str]  # functions, variables and aliases with a definition
    exported: frozenset[str]  # the defined ones other modules can see (neither internal nor private)
    lines: tuple[int, ...] = ()  # each defined function's length in IR lines, in `functions` order


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def symbols(toolchain: Toolchain, bitcode: bytes, name: str) -> Symbols:
    """What a module defines and exports, read from its text."""
    text = _run(toolchain, ["llvm-dis", "-", "-o", "-"], bitcode, name).decode(errors="replace")
    matches = list(_FUNCTION_RE.finditer(text))
    functions = [(_unquote(m.group(2)), set(m.group(1).split())) for m in matches]
    lines = tuple(_body_lines(text, m.end()) for m in matches)
    defined = {n for n, _ in functions}
    exported = {n for n, words in functions if not words & _HIDDEN_LINKAGE}
    for raw, rest in _GLOBAL_RE.findall(text):
        words = set(rest.split(" ", 3)[:3])
        if words & _DECLARATION_LINKAGE and " alias " not in f" {rest}":
            continue
        defined.add(_unquote(raw))
        if not words & _HIDDEN_LINKAGE:
            exported.add(_unquote(raw))
    return Symbols(tuple(n for n, _ in functions), frozenset(defined), frozenset(exported), lines)


def _body_lines(text: str, start: int) -> int:
    """Lines from a definition's header to its closing brace."""
    end = text.find("\n}", start)
    return text.count("\n", start, end if end >= 0 else len(text))


def extract_function(toolchain: Toolchain, bitcode: bytes, function: str) -> bytes:
    """The module cut down to `function` (its callees and globals become declarations)."""
    return _run(toolchain, ["llvm-extract", f"--func={function}", "-", "-o", "-"], bitcode, function)


def without_functions(toolchain: Toolchain, bitcode: bytes, functions: Iterable[str]) -> bytes:
    """The module with `functions` removed (kept as declarations); symbols they use stay, promoted."""
    flags = [f"--func={f}" for f in functions]
    if not flags:
        return bitcode
    return _run(toolchain, ["llvm-extract", "--delete", *flags, "-", "-o", "-"], bitcode, "rest")


def relink(toolchain: Toolchain, parts: Sequence[bytes], exported: Iterable[str]) -> bytes:
    """Join parts with `llvm-link`, then make internal again everything not in `exported`."""
    with tempfile.TemporaryDirectory(prefix="stitchopt-split-") as scratch:
        paths = []
        for index, part in enumerate(parts):
            path = Path(scratch) / f"part{index}.bc"
            path.write_bytes(part)
            paths.append(str(path))
        linked = _run(toolchain, ["llvm-link", *paths, "-o", "-"], None, "llvm-link")
    keep = ",".join(sorted(exported))
    return _run(
        toolchain,
        opt_command("opt", "internalize", args=[f"-internalize-public-api-list={keep}", *STDIN_TO_STDOUT]),
        linked,
        "internalize",
    )


def _run(toolchain: Toolchain, argv: list[str], stdin: bytes | None, what: str) -> bytes:
    run = run_tool([str(toolchain.tool(argv[0])), *argv[1:]], stdin=stdin, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0 or run.timed_out:
        detail = "timed out" if run.timed_out else first_error(run.stderr_text)
        raise InputError(f"{what}: {argv[0]} failed: {detail}")
    return run.stdout
