"""How a command ends when it is interrupted: Ctrl-C, or SIGTERM (a kill, the end of a session), taken the same
way, so that what a command finished is kept and its temporary files are cleaned up."""

from __future__ import annotations

from types import FrameType

INTERRUPTED = 130  # the exit status of an interrupted command


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """A signal handler that raises what Ctrl-C raises."""
    raise KeyboardInterrupt
