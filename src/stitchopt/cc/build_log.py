"""The build log (`STITCHOPT_BUILD_LOG`): one JSON line per translation unit a model build saw, so that a whole
build can be summed up afterwards (`stitchopt report build LOG`): what was replaced, kept at -Oz, passed
through and why, or failed and why, with sizes and seconds."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError
from stitchopt.jsonlines import append_json_line

OUTCOMES = ("optimized", "oz", "passed_through", "failed")


@dataclass(frozen=True)
class BuildEntry:
    """`outcome`: optimized (a list beat -Oz), oz (-Oz was smallest), passed_through (the compiler's own object,
    for `reason`), failed (the compiler's own object after an error, `reason` its first line); an optimized or
    oz unit with a `reason` is one whose search failed (built with the model's choice or -Oz).
    `plain_seconds`: the part a plain -Oz compile also pays (front end and the -Oz object), None on a cache hit.
    `language`: the source language the model read the unit as (c, c++): from the wrapper, the language it is
    compiled as (`-x c++`, a C++ driver, else the suffix); from the plugin, what the unit's IR shows, else what
    its name says (None for neither, or with a model whose chooser does not answer per language)."""

    unit: str | None
    outcome: str
    mode: str | None = None
    output: str | None = None
    pipeline: str | None = None
    oz_bytes: int | None = None
    bytes: int | None = None
    candidates: int = 0
    cache: str | None = None  # hit | miss
    reason: str | None = None
    seconds: float = 0.0
    plain_seconds: float | None = None
    language: str | None = None
    cwd: str = ""
    time: float = 0.0

    def saved_bytes(self) -> int:
        if self.oz_bytes is None or self.bytes is None:
            return 0
        return self.oz_bytes - self.bytes


def append_entry(path: Path, entry: BuildEntry) -> None:
    record = asdict(entry)
    record["cwd"] = record["cwd"] or os.getcwd()
    record["time"] = record["time"] or time.time()
    append_json_line(path, record)


def read_log(path: Path) -> list[BuildEntry]:
    """Every entry of a build log; a line cut short by a killed build is skipped, anything else is an error."""
    names = {field.name for field in fields(BuildEntry)}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(
            f"{path}: cannot read the build log ({exc.strerror}); set STITCHOPT_BUILD_LOG for a build"
        ) from exc
    entries = []
    for number, line in enumerate(lines, 1):
        try:
            data: dict[str, Any] = json.loads(line)
        except ValueError:
            if number == len(lines):
                continue  # the last line of a killed build
            raise InputError(f"{path}:{number}: not a build log line (not JSON)") from None
        if not isinstance(data, dict) or data.get("outcome") not in OUTCOMES:
            raise InputError(f"{path}:{number}: not a build log line (no known outcome)")
        entries.append(BuildEntry(**{key: value for key, value in data.items() if key in names}))
    return entries
