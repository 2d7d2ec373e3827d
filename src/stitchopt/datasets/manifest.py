"""A built dataset on disk: its manifest (what was built from what, with checksums) beside its IR files.

The manifest is rewritten after every build unit (a package, a seed), so an interrupted build resumes with
the units it has not finished, and a file whose checksum no longer matches is rebuilt with its unit. Every
change is made under a lock on what is saved at that moment (`locked_manifest`), so processes that build into
one dataset at once (`datasets build` and a run building a missing unit on demand) lose none of each other's.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stitchopt.datasets.uri import BenchmarkUri
from stitchopt.errors import DatasetError

MANIFEST_NAME = "manifest.json"
LOCK_NAME = ".manifest.lock"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Entry:
    """One benchmark: an unoptimized IR file and where it came from."""

    name: str  # unique in the dataset, the URI's last part (e.g. `lz4/lz4/lib/lz4.c`)
    unit: str  # the build unit that produced it (package, seed)
    package: str  # what splits group by: a program never straddles train and test
    file: str  # relative to the dataset directory
    sha256: str  # of the file's bytes
    normalized_sha256: str  # of the normalized IR: equal for IR that differs only in names or debug info
    split: str
    command: str = ""  # how it was compiled
    language: str = "c"


@dataclass
class Manifest:
    dataset: str
    version: int
    source: str  # what it is built from (registry, versions)
    licence: str
    build_command: str
    entries: list[Entry] = field(default_factory=list)
    units_done: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)  # unit -> why it was skipped
    statistics: dict[str, dict[str, float]] = field(default_factory=dict)  # feature -> mean/std

    def uri(self, entry: Entry) -> BenchmarkUri:
        return BenchmarkUri(self.dataset, self.version, entry.name)

    def entry(self, name: str) -> Entry | None:
        return next((e for e in self.entries if e.name == name), None)

    def to_json(self) -> str:
        payload: dict[str, Any] = {"manifest_version": MANIFEST_VERSION, **asdict(self)}
        return json.dumps(payload, indent=1, sort_keys=True) + "\n"

    def save(self, directory: Path) -> None:
        """Atomically: a build killed while saving leaves the previous manifest intact."""
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / (MANIFEST_NAME + ".tmp")
        temporary.write_text(self.to_json())
        os.replace(temporary, directory / MANIFEST_NAME)

    @classmethod
    def load(cls, directory: Path) -> Manifest | None:
        path = directory / MANIFEST_NAME
        if not path.is_file():
            return None
        try:
            raw = json.loads(path.read_text())
            raw.pop("manifest_version", None)
            raw["entries"] = [Entry(**e) for e in raw["entries"]]
            return cls(**raw)
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DatasetError(f"{path}: corrupt manifest ({exc}); delete {directory} to rebuild it") from exc

    def corrupt_units(self, directory: Path) -> set[str]:
        """Units with a missing file or one whose bytes no longer match the recorded sha256."""
        return {e.unit for e in self.entries if file_sha256(directory / e.file) != e.sha256}

    def forget(self, units: set[str]) -> None:
        """Drop what these units built, so the next build redoes them."""
        self.entries = [e for e in self.entries if e.unit not in units]
        self.units_done = [u for u in self.units_done if u not in units]


@contextmanager
def locked_manifest(directory: Path, new: Callable[[], Manifest]) -> Iterator[Manifest]:
    """The manifest as saved now (else `new()`) for the block to change, saved when it ends without error. No
    other process changes it meanwhile: one that loaded it earlier and saved its whole copy afterwards would
    drop what this block added."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / LOCK_NAME).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        manifest = Manifest.load(directory) or new()
        yield manifest
        manifest.save(directory)


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
