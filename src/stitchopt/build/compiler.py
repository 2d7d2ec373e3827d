"""Running the real compiler exactly as asked: our stdio, its exit status (a signal death as the shell's
128+N), and a one-line message when it cannot be started."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

CANNOT_RUN = 127


def run_compiler(argv: Sequence[str]) -> int:
    try:
        returncode = subprocess.run(list(argv)).returncode
    except OSError as error:
        print(f"stitchopt: cannot run {argv[0]}: {error}", file=sys.stderr)
        return CANNOT_RUN
    return 128 - returncode if returncode < 0 else returncode
