"""The `stitchopt` executable's entry point: loading the command line takes a moment (typer, then the command's
modules), and a Ctrl-C in that moment ends the run as a Ctrl-C during a command does, with one line."""

from __future__ import annotations

import sys
from typing import NoReturn

from stitchopt.cli.exit_codes import INTERRUPTED, INTERRUPTED_LINE


def main() -> NoReturn:
    try:
        from stitchopt.cli.main import main as run_command  # typer: loaded here, where Ctrl-C is caught
    except KeyboardInterrupt:
        print(INTERRUPTED_LINE, file=sys.stderr)
        sys.exit(INTERRUPTED)
    run_command()
