"""JSON-lines logs: appended by many processes at once (a `make -j` build runs a wrapper per compile), each line
written whole under an exclusive lock so that lines never interleave; read back with the number of a bad line."""

from __future__ import annotations

import fcntl
import gzip
import json
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError


def append_json_line(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_json_lines(path: Path, what: str, written_by: str) -> list[dict[str, Any]]:
    """Every object of a JSON-lines file; a missing, binary or malformed file is an InputError that names the
    line (`what` the file is, `written_by` the command that writes one)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such {what} (write one with `{written_by}`)") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a {what} (binary, not JSON lines from `{written_by}`)") from exc
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{path}: line {number} is not JSON ({exc.msg}): not a {what}, or a truncated one"
            ) from exc
        if not isinstance(record, dict):
            raise InputError(f"{path}: line {number} is not a JSON object: not a {what}")
        records.append(record)
    return records


def json_records(path: Path, what: str) -> list[tuple[str, Any]]:
    """Each non-blank line of a data file of JSON lines (gzipped when it ends in .gz), parsed, with `path:line`
    for the caller's messages; an unreadable or malformed file is one InputError naming `what` it should be."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            return [(f"{path}:{number}", json.loads(line)) for number, line in enumerate(handle, 1) if line.strip()]
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a readable {what}: {exc}") from exc
