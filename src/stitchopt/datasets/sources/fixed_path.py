"""Builds at one fixed path. Compilers write the source's path into the IR (`source_filename`, `__FILE__` in
assertion messages), so a unit built under a random scratch directory has another IR hash on every build and
every machine, and labels keyed by that hash can never be matched again; under one fixed path it is the same."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from stitchopt.errors import DatasetError


def private_root(root: Path) -> Path:
    """`root`, private (0700) to this user; one that is a symlink or another user's is refused, since builds
    there may run as root and the trees in it are deleted before each build."""
    with suppress(FileExistsError):  # a file or a dangling symlink: refused below
        root.mkdir(mode=0o700, exist_ok=True)
    found = root.lstat()
    if stat.S_ISLNK(found.st_mode) or not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
        raise DatasetError(f"{root} is a symlink or not this user's: remove it, then build again")
    if found.st_mode & 0o077:
        root.chmod(0o700)
    return root


@contextmanager
def fixed_tree(root: Path, unit: str) -> Iterator[Path]:
    """`root/unit`, absent (the caller creates it), this build's alone while the context lasts (two builds of one
    unit would share the path: the second waits), and removed after."""
    base = private_root(root)
    with (base / f"{unit}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tree = base / unit
        shutil.rmtree(tree, ignore_errors=True)
        if tree.exists():
            raise DatasetError(f"{tree}: cannot remove the previous build; remove it by hand")
        try:
            yield tree
        finally:
            shutil.rmtree(tree, ignore_errors=True)
