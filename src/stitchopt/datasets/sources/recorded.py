"""What a real build recorded through the wrapper (`stitchopt-cc` with STITCHOPT_RECORD_DIR), as modules: the
environment that makes a build record, and its records read back, each file named and assigned to a package by
the source (a vendored library can be dropped, or filed under the library's own name)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from stitchopt.datasets.recording import RECORD_CLANG_ENV, RECORD_DIR_ENV
from stitchopt.datasets.sources.base import BuiltIR
from stitchopt.errors import DatasetError
from stitchopt.toolchain.discovery import Toolchain

Placement = Callable[[str], "tuple[str, str] | None"]  # path in the tree -> (module name, package), or None: drop


# Configure checks (autoconf's conftest, CMake's and meson's probe directories) are never recorded
# (`is_probe_source`): their compiles go straight to clang, without the wrapper's start (about 0.25 s each,
# hundreds per configure).
PROBES = ("*conftest*", "*/CMakeFiles/CMakeScratch/*", "*/CMakeFiles/CMakeTmp/*", "*/meson-private/*")


def recording_env(toolchain: Toolchain, records: Path, launchers: Path) -> dict[str, str]:
    """The process environment of a build whose every C/C++ compile is recorded into `records`."""
    clang = toolchain.tool("clang")
    return {
        **os.environ,
        "CC": _launcher("stitchopt-cc", clang, launchers),
        "CXX": _launcher("stitchopt-c++", str(Path(clang).with_name("clang++")), launchers),
        RECORD_DIR_ENV: str(records),
        "STITCHOPT_LLVM": str(Path(toolchain.tool("clang")).parent),
        RECORD_CLANG_ENV: toolchain.tool("clang"),
    }


def _launcher(name: str, compiler: str, directory: Path) -> str:
    """A launcher for the wrapper that survives build isolation (pip's PYTHONPATH hides stitchopt) and sends
    configure checks straight to `compiler`."""
    target = shutil.which(name) or str(Path(sys.executable).with_name(name))
    directory.mkdir(parents=True, exist_ok=True)
    launcher = directory / name
    probes = "|".join(PROBES)
    launcher.write_text(
        f"#!/bin/sh\nunset PYTHONPATH PYTHONNOUSERSITE\n"
        f'case "$*" in {probes}) exec {shlex.quote(compiler)} "$@" ;; esac\n'
        f'exec {shlex.quote(target)} "$@"\n'
    )
    launcher.chmod(0o755)
    return str(launcher)


def placement(unit: str, dropped: tuple[str, ...] = (), filed: tuple[tuple[str, str], ...] = ()) -> Placement:
    """Where a file of `unit`'s tree goes: `<unit>/<path>` under `unit`, or under the package `filed` gives
    its path's prefix; nowhere when its path starts with one of `dropped`."""

    def place(relative: str) -> tuple[str, str] | None:
        if relative.startswith(dropped):
            return None
        owner = next((package for prefix, package in filed if relative.startswith(prefix)), unit)
        return f"{unit}/{relative}", owner

    return place


def recorded_modules(records: Path, tree: Path, place: Placement, what: str) -> list[BuiltIR]:
    """The modules the build of `tree` recorded (`what` names it in errors). A build that failed late still
    yields the translation units it compiled; files outside the tree are placed by their file name."""
    log = records / "records.jsonl"
    if not log.is_file():
        raise DatasetError(f"{what}: the build compiled no C/C++ translation unit")
    modules = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        source = Path(record["source"])
        try:
            relative = source.resolve().relative_to(tree.resolve())
        except ValueError:
            relative = Path(source.name)
        placed = place(relative.as_posix())
        if placed is None:
            continue
        name, package = placed
        bitcode = (records / "ir" / f"{record['sha256']}.bc").read_bytes()
        modules.append(BuiltIR(name, package, bitcode, shlex.join(record["argv"]), record["language"]))
    return modules
