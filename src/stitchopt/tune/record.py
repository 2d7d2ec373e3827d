"""A tuning run as a JSON file: what `tune` found per program, replayable with plain opt and llc, and what
`broadcast` reads and updates."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError

RECORD_VERSION = 1


@dataclass(frozen=True)
class ProgramRecord:
    program: str  # the path or URI the program was given as
    passes: tuple[str, ...] | None  # None: -Oz was best (the -Oz backup)
    pipeline: str
    size_bytes: int | None
    oz_size_bytes: int | None
    evaluations: int
    replay: str
    validated: bool = False  # the list passed full validation (-Oz counts as valid: it is clang's own)
    validation: str = ""
    runtime: float | None = None  # with a perf objective: the program's run cost, in `runtime_unit`
    oz_runtime: float | None = None
    runtime_unit: str = ""
    curve: tuple[tuple[int, float], ...] = ()  # (evaluation, best score so far) wherever the best improved

    @property
    def size_change_vs_oz(self) -> float | None:
        if self.size_bytes is None or not self.oz_size_bytes:
            return None
        return 100.0 * (self.size_bytes - self.oz_size_bytes) / self.oz_size_bytes

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["passes"] = list(self.passes) if self.passes is not None else None
        data["curve"] = [list(point) for point in self.curve]
        data["oz_backup"] = self.passes is None
        data["size_change_vs_oz_percent"] = self.size_change_vs_oz
        return data


@dataclass(frozen=True)
class RunRecord:
    toolchain: str
    objective: str
    strategy: str
    programs: tuple[ProgramRecord, ...]
    catalogue: str = ""  # identity of the pass catalogue searched (records before it: empty)
    # The run that wrote it, as stamped in its trial log (records before it: None); not part of what was found.
    run_id: str | None = field(default=None, compare=False)

    def save(self, path: Path) -> None:
        payload = {
            "record_version": RECORD_VERSION,
            "toolchain": self.toolchain,
            "objective": self.objective,
            "strategy": self.strategy,
            "catalogue": self.catalogue,
            "run_id": self.run_id,
            "programs": [p.to_dict() for p in self.programs],
        }
        path.write_text(json.dumps(payload, indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> RunRecord:
        try:
            payload = json.loads(path.read_text())
            programs = tuple(
                ProgramRecord(
                    program=p["program"],
                    passes=tuple(p["passes"]) if p["passes"] is not None else None,
                    pipeline=p["pipeline"],
                    size_bytes=p["size_bytes"],
                    oz_size_bytes=p["oz_size_bytes"],
                    evaluations=p["evaluations"],
                    replay=p["replay"],
                    validated=p.get("validated", False),
                    validation=p.get("validation", ""),
                    runtime=p.get("runtime"),
                    oz_runtime=p.get("oz_runtime"),
                    runtime_unit=p.get("runtime_unit", ""),
                    curve=tuple((int(e), float(v)) for e, v in p.get("curve", [])),
                )
                for p in payload["programs"]
            )
            return cls(
                payload["toolchain"],
                payload["objective"],
                payload["strategy"],
                programs,
                payload.get("catalogue", ""),
                payload.get("run_id"),
            )
        except FileNotFoundError as exc:
            raise InputError(f"{path}: no such run record (write one with `stitchopt tune ... -o run.json`)") from exc
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{path}: not a stitchopt run record ({exc})") from exc
