"""Compiles a model build must leave exactly as the real compiler made them.

The model's object is rebuilt from unoptimized IR with `opt` and `llc`, which honour only the flags that shape
the IR: instrumentation, LTO bitcode, debug info and section layout would be lost silently, a non-regular `-o`
(`/dev/null` in a build's flag probe) would be replaced by a file, a probe would pay for a model it never uses,
and another compiler's object would be swapped for clang's. Each is passed through, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from stitchopt.toolchain.commands import ParsedCommand, is_probe_source

_INSTRUMENTATION = re.compile(
    r"-fsanitize=|-fprofile-(?:instr-)?(?:generate|arcs)|-fcoverage-mapping|--coverage$|-ftest-coverage$"
    r"|-fxray-instrument|-finstrument-functions|-pg$"
)
_DEBUG_INFO = re.compile(r"-g$|-g[1-3]$|-g(?:gdb|dwarf|line-|column-info|split-dwarf|embed|full|codeview|btf)")
_SECTIONS = ("-ffunction-sections", "-fdata-sections")


def pass_through_reason(
    args: Sequence[str], parsed: ParsedCommand, output: Path, *, real_compiler_is_clang: bool
) -> str | None:
    """Why this compile keeps the real compiler's object (None: the model may rebuild it)."""
    if not real_compiler_is_clang:
        return "the real compiler is not the toolchain's clang"
    if str(output) == "-" or (output.exists() and not output.is_file()):
        return f"the output {output} is not a regular file"
    if any(is_probe_source(str(Path(source.path).absolute())) for source in parsed.sources):
        return "a build-system probe"
    for arg in args:
        if _INSTRUMENTATION.match(arg):
            return f"instrumentation ({arg})"
        if arg.startswith("-flto") and arg != "-fno-lto":
            return f"LTO ({arg}): the output is bitcode"
        if _DEBUG_INFO.match(arg):
            return f"debug info ({arg})"
        if arg in _SECTIONS:
            return f"section layout ({arg})"
    return None
