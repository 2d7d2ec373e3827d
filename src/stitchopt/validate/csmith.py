"""Csmith differential testing: random C programs that print a checksum of their global state.

A pass list passes a program when the checksum (and exit status) equal those of the program built at -O0.
Programs are generated from consecutive seeds and cached; about one in ten never finishes, so seeds are drawn
until the suite has the requested number of programs that finish at -O0 within the time limit.
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from stitchopt.errors import ToolchainError
from stitchopt.toolchain.process import ToolRun, run_tool
from stitchopt.validate.builder import ProgramBuilder
from stitchopt.validate.suites import Check, Suite, SuiteProgram

GENERATION_TIMEOUT_S = 60.0
MAX_DRAWS_PER_PROGRAM = 4


def find_csmith() -> tuple[Path, Path]:
    """The `csmith` binary and the directory holding `csmith.h`."""
    binary = shutil.which("csmith")
    if binary is None:
        raise ToolchainError("csmith not found on PATH: install Debian's csmith and libcsmith-dev (make setup)")
    prefix = Path(binary).resolve().parent.parent
    include = prefix / "include" / "csmith"
    if not (include / "csmith.h").is_file():
        raise ToolchainError(f"csmith.h not found in {include}: install Debian's libcsmith-dev (make setup)")
    return Path(binary), include


def _run_csmith(binary: Path, *args: str) -> ToolRun:
    """Csmith writes `platform.info` into its working directory: give it a scratch one."""
    with tempfile.TemporaryDirectory(prefix="stitchopt-csmith-") as scratch:
        return run_tool([str(binary), *args], timeout=GENERATION_TIMEOUT_S, cwd=scratch)


def csmith_version(binary: Path) -> str:
    return _run_csmith(binary, "--version").stdout.decode(errors="replace").strip()


def generate(builder: ProgramBuilder, binary: Path, version: str, seed: int) -> str:
    """Csmith's program for `seed` (cached: the same csmith version always writes the same program)."""
    store = builder.store
    if store is not None:
        cached = store.get_artifact("csmith-source", version, str(seed))
        if cached is not None:
            return cached.decode()
    run = _run_csmith(binary, "--seed", str(seed))
    if run.returncode != 0:
        raise ToolchainError(f"csmith --seed {seed} failed: {run.stderr_tail(200).strip()}")
    if store is not None:
        store.put_artifact("csmith-source", run.stdout, version, str(seed))
    return run.stdout.decode()


def csmith_suite(builder: ProgramBuilder, count: int, first_seed: int = 1, jobs: int = 1) -> Suite:
    """`count` Csmith programs that finish at -O0, from seeds `first_seed`, `first_seed + 1`, ..."""
    binary, include = find_csmith()
    version = csmith_version(binary)

    def program(seed: int) -> SuiteProgram:
        return SuiteProgram(
            name=f"csmith-{seed}",
            source=generate(builder, binary, version, seed),
            language="c",
            compile_args=(f"-I{include}",),
            check=Check.MATCH_REFERENCE,
        )

    def admitted(seed: int) -> tuple[SuiteProgram, str | None]:
        candidate = program(seed)
        return candidate, builder.references(candidate).excluded

    kept: list[SuiteProgram] = []
    discarded: list[str] = []
    seed = first_seed
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        while len(kept) < count and seed < first_seed + count * MAX_DRAWS_PER_PROGRAM:
            seeds = range(seed, seed + count - len(kept))
            seed = seeds.stop
            for candidate, reason in pool.map(admitted, seeds):
                if reason is None:
                    kept.append(candidate)
                else:
                    discarded.append(f"{candidate.name}: {reason}")
    return Suite(f"csmith-{count}", tuple(kept), tuple(discarded))
