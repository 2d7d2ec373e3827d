"""Tools' diagnostics reduced to the one line a user reads: every layer reports failures this way."""

from __future__ import annotations

import re

DETAIL_CHARS = 300
# A compiler's location in front of a diagnostic, `/path/to/file.c:12:5: error: ...`: its file's name stays
SOURCE_LOCATION = re.compile(r"/\S*/([^/\s:]+:\d+(?::\d+)?): (.*)")


def first_error(stderr: str) -> str:
    """The first line of a tool's diagnostics that says "error" (else the first that is not a warning or a
    note, else the first line), without the tool's path that LLVM tools put in front; a source location keeps
    its file's name, line and column."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    others = [line for line in lines if not any(kind in line.lower() for kind in ("warning:", "note:"))]
    chosen = (errors or others or lines or ["no diagnostic"])[0]
    if located := SOURCE_LOCATION.fullmatch(chosen):
        return f"{located.group(1)}: {located.group(2)}"
    head, sep, tail = chosen.partition(": ")
    return tail if sep and head.startswith("/") else chosen


def telling_line(text: str) -> str:
    """The most telling line of a diagnostic: the first error or failed assertion, else the pass LLVM crashed
    in (the last "Running pass" of its stack dump), else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() or "assert" in line.lower()]
    crashed_in = [line.split(".", 1)[-1].strip() for line in lines if "Running pass" in line][-1:]
    return (errors or crashed_in or lines or [""])[0][:DETAIL_CHARS]


def exception_line(exc: BaseException) -> str:
    """An exception as one line: the first line of its message, else its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def warning_line(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """`warnings.formatwarning` for the CLI and the compiler wrapper: a warning is the one line a user reads,
    like an error, not Python's file, line number and source line."""
    return f"stitchopt: warning: {message}\n"
