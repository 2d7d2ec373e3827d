"""IR normalization for dedup keys, and splitting large modules into per-function modules.

Two translation units that differ only in local value names, debug info, file names or module metadata
compile to the same code; their normalized text is equal, so the dataset keeps one.
"""

from __future__ import annotations

import hashlib
import re

from stitchopt.errors import DatasetError
from stitchopt.toolchain.device import without_file_ids
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

TOOL_TIMEOUT_S = 120.0
_VOLATILE_LINE_RE = re.compile(r"^(; ModuleID = .*|source_filename = .*)$", re.MULTILINE)
_DEFINE_RE = re.compile(r'^define [^@]*@("[^"]+"|[-a-zA-Z$._0-9]+)\(', re.MULTILINE)


def normalized_text(toolchain: Toolchain, bitcode: bytes) -> str:
    """The module without debug info, module-level named metadata, local value names and file names (nor
    OpenMP regions' file IDs)."""
    run = run_tool(
        [
            toolchain.tool("opt"),
            "--strip-debug",
            "--strip-named-metadata",
            "--discard-value-names",
            "-S",
            "-",
            "-o",
            "-",
        ],
        stdin=bitcode,
        timeout=TOOL_TIMEOUT_S,
    )
    if run.returncode != 0:
        raise DatasetError(f"cannot normalize IR: {run.stderr_tail(200).strip()}")
    return without_file_ids(_VOLATILE_LINE_RE.sub("", run.stdout.decode(errors="replace")))


def normalized_sha256(toolchain: Toolchain, bitcode: bytes) -> str:
    return hashlib.sha256(normalized_text(toolchain, bitcode).encode()).hexdigest()


def defined_functions(toolchain: Toolchain, bitcode: bytes) -> list[str]:
    """Names of the functions the module defines, in order."""
    run = run_tool([toolchain.tool("llvm-dis"), "-", "-o", "-"], stdin=bitcode, timeout=TOOL_TIMEOUT_S)
    if run.returncode != 0:
        raise DatasetError(f"cannot read IR: {run.stderr_tail(200).strip()}")
    return [name.strip('"') for name in _DEFINE_RE.findall(run.stdout.decode(errors="replace"))]


def split_functions(toolchain: Toolchain, bitcode: bytes) -> dict[str, bytes]:
    """One module per defined function (with the declarations it needs), by `llvm-extract --func`."""
    parts = {}
    for name in defined_functions(toolchain, bitcode):
        run = run_tool(
            [toolchain.tool("llvm-extract"), f"--func={name}", "-", "-o", "-"], stdin=bitcode, timeout=TOOL_TIMEOUT_S
        )
        if run.returncode == 0:
            parts[name] = run.stdout
    return parts
