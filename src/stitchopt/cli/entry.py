"""The `stitchopt` executable's entry point: loading the commands takes a moment (typer, numpy, every command's
module), and a Ctrl-C in that moment ends the run as a Ctrl-C during a command does, with one line."""

from __future__ import annotations

import sys
from typing import NoReturn

INTERRUPTED = 130  # the exit status of a Ctrl-C, here so that it is known before the commands are loaded


def main() -> NoReturn:
    try:
        from stitchopt.cli.main import main as run_command  # the commands: loaded here, where Ctrl-C is caught
    except KeyboardInterrupt:
        print("stitchopt: interrupted", file=sys.stderr)
        sys.exit(INTERRUPTED)
    run_command()
