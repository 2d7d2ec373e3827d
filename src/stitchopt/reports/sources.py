"""What a report was made from, stated as identities a reader can check: input files by content hash, program
sets by a hash of their names and the datasets they come from."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path

_DATASET_DIR = re.compile(r"^[a-z0-9][a-z0-9_.-]*-v\d+$")


def file_identity(path: Path) -> str:
    """The file name and the first 16 hex digits of its content's SHA-256."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return f"{path.name} sha256:{digest}"


def directory_identity(path: Path) -> str:
    """A directory by the hashes of its files (names and contents, in sorted order)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return f"{path.name}/ sha256:{digest.hexdigest()[:16]}"


def program_set_identity(programs: Iterable[str]) -> str:
    """How many programs, from which built datasets (a `<name>-v<N>` directory or a bench:// URI in their path),
    and a hash of the sorted names: two reports on the same programs show the same line."""
    names = sorted(set(programs))
    datasets = sorted({_dataset(name) for name in names} - {""})
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    where = f" from {', '.join(datasets)}" if datasets else ""
    return f"{len(names)} programs{where}, names sha256:{digest}"


def _dataset(program: str) -> str:
    if program.startswith("bench://"):
        return program[len("bench://") :].split("/", 1)[0]
    return next((part for part in Path(program).parts if _DATASET_DIR.match(part)), "")
