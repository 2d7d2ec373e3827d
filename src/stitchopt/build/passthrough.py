"""Flags that make a model build leave the command to the real compiler, untouched.

A model build changes only the LLVM pass pipeline: the front end and code generation are the user's clang with
the user's flags. What that cannot honour is passed through, with the reason: instrumentation and profile use
(the pipeline would not insert or read them as the compiler does), LTO (the output is bitcode for the linker's
optimizer), outputs that are not an object (`-S`, `-E`, `-emit-llvm`, `-M`), and options that write side files
named after the output (`-save-temps`, `-gsplit-dwarf`, `-MJ`, optimization records, time traces).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_INSTRUMENTATION = re.compile(
    r"-fsanitize=|-fprofile-(?:instr-)?(?:generate|arcs)|-fcs-profile-generate|-fcoverage-mapping|--coverage$"
    r"|-ftest-coverage$|-fxray-instrument|-finstrument-functions|-pg$|-fpatchable-function-entry"
)
_PROFILE_USE = re.compile(r"-fprofile-(?:instr-|sample-)?use|-fauto-profile")
_NOT_AN_OBJECT = frozenset({"-S", "-E", "-emit-llvm", "-fsyntax-only", "-###", "-M", "-MM"})
_SIDE_FILES = re.compile(
    r"-save-temps|-gsplit-dwarf|-MJ|-ftime-trace|-fsave-optimization-record|-foptimization-record-file"
    r"|-fdump-|-fembed-bitcode|--serialize-diagnostics"
)


def flag_reason(args: Sequence[str]) -> str | None:
    """Why a flag of this command keeps the real compiler's output (None: the model may build it)."""
    for arg in args:
        if _INSTRUMENTATION.match(arg):
            return f"instrumentation ({arg})"
        if _PROFILE_USE.match(arg):
            return f"profile-guided optimization ({arg})"
        if arg.startswith("-flto") and arg != "-fno-lto":
            return f"LTO ({arg}): the output is bitcode"
        if arg in _NOT_AN_OBJECT:
            return f"the output is not an object ({arg})"
        if _SIDE_FILES.match(arg) or (arg.startswith("-Wp,") and ",-M" in arg):
            return f"side files named after the output ({arg})"
    return None
