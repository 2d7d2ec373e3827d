"""Append-only JSON-lines logs written by many processes at once (a `make -j` build runs a wrapper per
compile): each line is written whole under an exclusive lock, so lines never interleave."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any


def append_json_line(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
