"""Flags that make a model build leave the command to the real compiler, untouched.

A model build changes only the LLVM pass pipeline: the front end and code generation are the user's clang with
the user's flags. What that cannot honour is passed through, with the reason: instrumentation and profile use
(the pipeline would not insert or read them as the compiler does), LTO (the output is bitcode for the linker's
optimizer), outputs that are not an object (`-S`, `-E`, `-emit-llvm`, `-M`), and options that write side files
named after the output (`-save-temps`, `-gsplit-dwarf`, `-MJ`, optimization records, time traces).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

_INSTRUMENTATION = re.compile(
    r"-f(?:experimental-)?sanitize|-fprofile-(?:instr-)?(?:generate|arcs)|-fcs-profile-generate|-fcoverage-mapping"
    r"|--coverage$|-ftest-coverage$|-fxray-instrument|-finstrument-functions|-pg$|-fpatchable-function-entry"
    r"|-fmemory-profile|-fpseudo-probe-for-profiling|-fdebug-info-for-profiling"
)
_PROFILE_USE = re.compile(r"-fprofile-(?:instr-|sample-)?use|-fauto-profile")
# clang runs passes `opt` would not: plugins (`-fpass-plugin=`, `-Xclang -load`) and frontend plugins.
_PLUGINS = re.compile(r"-fpass-plugin=|-fplugin|-load$")
_NOT_AN_OBJECT = frozenset({"-S", "-E", "-emit-llvm", "-fsyntax-only", "-###", "-M", "-MM"})
_SIDE_FILES = re.compile(
    r"-save-temps|-gsplit-dwarf|-MJ|-ftime-trace|-fsave-optimization-record|-foptimization-record-file"
    r"|-fdump-|-fembed-bitcode|--serialize-diagnostics|-fstack-usage|-save-stats"
)
# The command line stored in the object would name the wrapper's scratch files.
_RECORDS_COMMAND = frozenset({"-frecord-command-line", "-grecord-command-line", "-frecord-gcc-switches"})
# Backend warnings need the source locations that code generation from bitcode no longer has.
_BACKEND_WARNINGS = re.compile(r"-Wframe-larger-than|-Wstack-usage")


def flag_reason(args: Sequence[str]) -> str | None:
    """Why a flag of this command keeps the real compiler's output (None: the model may build it)."""
    for index, arg in enumerate(args):
        if _INSTRUMENTATION.match(arg):
            return f"instrumentation ({arg})"
        if _PROFILE_USE.match(arg):
            return f"profile-guided optimization ({arg})"
        if _PLUGINS.match(arg):
            return f"compiler plugins ({arg})"
        if arg.startswith("-flto") and arg != "-fno-lto":
            return f"LTO ({arg}): the output is bitcode"
        if arg in _NOT_AN_OBJECT:
            return f"the output is not an object ({arg})"
        if _SIDE_FILES.match(arg) or (arg.startswith("-Wp,") and ",-M" in arg):
            return f"side files named after the output ({arg})"
        if arg in _RECORDS_COMMAND:
            return f"the object records the command line ({arg})"
        if _BACKEND_WARNINGS.match(arg):
            return f"backend warnings with source locations ({arg})"
        if arg == "-include-pch" or (arg == "-include" and _has_precompiled(args, index + 1)):
            return "a precompiled header (built at the command's own -O)"
    return None


def _has_precompiled(args: Sequence[str], index: int) -> bool:
    """clang uses `F.pch` or `F.gch` for `-include F` when one exists."""
    return index < len(args) and any(os.path.exists(args[index] + suffix) for suffix in (".pch", ".gch"))
