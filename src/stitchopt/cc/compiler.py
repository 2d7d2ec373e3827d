"""Running the real compiler exactly as asked: our stdio, its exit status (a signal death as the shell's
128+N), and a one-line message when it cannot be started."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

CANNOT_RUN = 127
REAL_CC_ENV = "STITCHOPT_REAL_CC"
REAL_CXX_ENV = "STITCHOPT_REAL_CXX"


def run_compiler(argv: Sequence[str]) -> int:
    try:
        returncode = subprocess.run(list(argv)).returncode
    except OSError as error:
        hint = f"install it, or name the real compiler in {REAL_CC_ENV} / {REAL_CXX_ENV}"
        print(f"stitchopt: cannot run {argv[0]}: {error.strerror or error}; {hint}", file=sys.stderr)
        return CANNOT_RUN
    return 128 - returncode if returncode < 0 else returncode
