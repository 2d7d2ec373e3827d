"""Csmith differential testing: random C programs that print a checksum of their global state.

A pass list passes a program when the checksum (and exit status) equal those of the program built at -O0.
Programs are generated from consecutive seeds and cached; about one in ten never finishes, so seeds are drawn
until the suite has the requested number of programs that finish at -O0 within the time limit. A seed that Csmith
itself does not finish within GENERATION_TIMEOUT_S (a few take seconds idle, over a minute on a loaded machine) is
skipped the same way.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from stitchopt.diagnostics import first_error
from stitchopt.errors import ToolchainError
from stitchopt.toolchain.process import ToolRun, run_tool
from stitchopt.validate.builder import ProgramBuilder
from stitchopt.validate.suites import Check, Suite, SuiteProgram

GENERATION_TIMEOUT_S = 60.0
MAX_DRAWS_PER_PROGRAM = 4
BuildProgress = Callable[[int, int], None]  # (programs ready, programs wanted) while a suite is built


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


def csmith_failure(run: ToolRun) -> str | None:
    """Why a Csmith run failed (never empty: Csmith killed at its time limit says nothing), or None."""
    if run.timed_out:
        return f"timed out after {run.seconds:.0f} s"
    if run.returncode != 0:
        return f"exit status {run.returncode}: {first_error(run.stderr_text)}"
    return None


def csmith_version(binary: Path) -> str:
    run = _run_csmith(binary, "--version")
    failure = csmith_failure(run)
    if failure is not None:
        raise ToolchainError(f"csmith --version failed: {failure}")
    return run.stdout.decode(errors="replace").strip()


class GenerationTimedOut(Exception):
    """Csmith did not write a seed's program in time: the seed is skipped, like a program that never finishes."""


def generate(builder: ProgramBuilder, binary: Path, version: str, seed: int) -> str:
    """Csmith's program for `seed` (cached: the same csmith version always writes the same program). A seed
    that timed out is cached as such too, so that the same cache draws the same suite whatever the load."""
    store = builder.store
    timed_out_key = (version, str(seed), f"{GENERATION_TIMEOUT_S:g}")
    if store is not None:
        cached = store.get_artifact("csmith-source", version, str(seed))
        if cached is not None:
            return cached.decode()
        if (reason := store.get_artifact("csmith-timed-out", *timed_out_key)) is not None:
            raise GenerationTimedOut(reason.decode())
    run = _run_csmith(binary, "--seed", str(seed))
    failure = csmith_failure(run)
    if run.timed_out:
        if store is not None:
            store.put_artifact("csmith-timed-out", f"csmith {failure}".encode(), *timed_out_key)
        raise GenerationTimedOut(f"csmith {failure}")
    if failure is not None:
        raise ToolchainError(f"csmith --seed {seed} failed: {failure}")
    if store is not None:
        store.put_artifact("csmith-source", run.stdout, version, str(seed))
    return run.stdout.decode()


def csmith_suite(
    builder: ProgramBuilder, count: int, first_seed: int = 1, jobs: int = 1, progress: BuildProgress | None = None
) -> Suite:
    """`count` Csmith programs that finish at -O0, from seeds `first_seed`, `first_seed + 1`, ...; `progress`
    hears how many are ready after each seed (building them takes a minute or more when nothing is cached)."""
    binary, include = find_csmith()
    version = csmith_version(binary)

    def drawn(seed: int) -> SuiteProgram | str:
        """The program of `seed`, or why it is discarded."""
        try:
            source = generate(builder, binary, version, seed)
        except GenerationTimedOut as exc:
            return f"csmith-{seed}: {exc}"
        candidate = SuiteProgram(
            name=f"csmith-{seed}",
            source=source,
            language="c",
            compile_args=(f"-I{include}",),
            check=Check.MATCH_REFERENCE,
        )
        excluded = builder.references(candidate).excluded
        return candidate if excluded is None else f"{candidate.name}: {excluded}"

    kept: list[SuiteProgram] = []
    discarded: list[str] = []
    seed = first_seed
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        while len(kept) < count and seed < first_seed + count * MAX_DRAWS_PER_PROGRAM:
            seeds = range(seed, seed + count - len(kept))
            seed = seeds.stop
            for outcome in pool.map(drawn, seeds):
                if isinstance(outcome, SuiteProgram):
                    kept.append(outcome)
                else:
                    discarded.append(outcome)
                if progress is not None:
                    progress(len(kept), count)
    return Suite(f"csmith-{count}", tuple(kept), tuple(discarded))
