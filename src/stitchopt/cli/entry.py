"""The `stitchopt` command's entry point. Loading the CLI takes a second or more (typer, numpy, rich): a Ctrl-C or
SIGTERM meanwhile ends it with one line and status 130, as it does once a command runs (`cli.main`)."""

from __future__ import annotations

import signal
import sys
from typing import NoReturn

from stitchopt.cli.interrupts import INTERRUPTED, raise_interrupt


def main() -> NoReturn:
    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        from stitchopt.cli.main import main as run_command  # (loaded here, where an interrupt is one line)
    except KeyboardInterrupt:
        print("stitchopt: interrupted", file=sys.stderr)
        sys.exit(INTERRUPTED)
    signal.signal(signal.SIGTERM, previous)
    run_command()
