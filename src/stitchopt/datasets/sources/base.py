"""The interface every dataset source implements, and the front-end compile they share."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from stitchopt.diagnostics import telling_line
from stitchopt.errors import DatasetError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import FRONTEND_TIMEOUT_S
from stitchopt.toolchain.llvm import FRONTEND_LEVEL, frontend_command
from stitchopt.toolchain.process import run_tool


@dataclass(frozen=True)
class BuiltIR:
    """One unoptimized module a unit produced."""

    name: str
    package: str
    bitcode: bytes
    command: str = ""
    language: str = "c"
    split: str | None = None  # None: by a hash of the package name (datasets/splits.py)


class Source(Protocol):
    name: str
    version: int
    licence: str
    description: str

    def units(self) -> list[str]:
        """Build units (packages, seeds, files) in a fixed order; `--limit N` builds the first N."""
        ...

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        """The IR of one unit; DatasetError when the unit cannot be built (logged, the build goes on)."""
        ...

    def unit_of(self, name: str) -> str:
        """The unit that builds the benchmark `name` (to build one URI lazily)."""
        ...


def frontend_ir(
    toolchain: Toolchain, source: str | Path, language: str, flags: Sequence[str] = (), cwd: Path | None = None
) -> tuple[bytes, str]:
    """Unoptimized IR from the autotuner's front end (text, or a file), and the command that made it."""
    from_stdin = isinstance(source, str)
    argv = frontend_command(
        [toolchain.tool("clang"), "-x", language, "-w", *flags],
        FRONTEND_LEVEL,
        args=["-" if from_stdin else str(source), "-o", "-"],
    )
    run = run_tool(
        argv,
        stdin=source.encode() if isinstance(source, str) else None,
        timeout=FRONTEND_TIMEOUT_S,
        cwd=str(cwd) if cwd is not None else None,
    )
    if run.returncode != 0:
        raise DatasetError(f"front end failed: {telling_line(run.stderr_text)}")
    return run.stdout, shlex.join(argv)
