"""Turn what a user asks to validate against into a suite: a named suite, Csmith programs or their own program."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from stitchopt.errors import InputError
from stitchopt.validate.builder import ProgramBuilder
from stitchopt.validate.csmith import BuildProgress, csmith_suite
from stitchopt.validate.suites import Check, Suite, load_suite, source_program

# Enough to catch every known miscompiling list (validate/miscompiles.py): on the programs of seeds 1-100 the
# newgvn list fails only 3, the first of them the 38th (benchmarks/csmith_strength.py, docs/results.md).
DEFAULT_CSMITH_PROGRAMS = 60
INPUT_PLACEHOLDER = "{input}"
DIFFERENTIAL_LEVELS = ("O0", "O2")


def select_suite(
    spec: str,
    builder: ProgramBuilder,
    *,
    limit: int | None = None,
    seed: int = 1,
    data_dir: Path | None = None,
    jobs: int = 1,
    progress: BuildProgress | None = None,
) -> Suite:
    """`humaneval`, `csmith`, a directory or a JSONL file; `limit` keeps the first N programs; `progress` follows
    the building of a generated (csmith) suite."""
    if spec == "csmith":
        return csmith_suite(builder, limit or DEFAULT_CSMITH_PROGRAMS, first_seed=seed, jobs=jobs, progress=progress)
    return load_suite(spec, data_dir).limited(limit)


def differential_suite(program: Path, run_args: Sequence[str] = (), inputs: Path | None = None) -> Suite:
    """A user's program run on each input: a list passes when exit status and stdout equal the -O0 and -O2 builds.

    Each file in `inputs` is fed on stdin, or substituted for `{input}` when the arguments contain it.
    """
    check_run_inputs(run_args, inputs)
    base = source_program(program, check=Check.MATCH_REFERENCE, reference_levels=DIFFERENTIAL_LEVELS)
    if inputs is None:
        return Suite(program.name, (replace(base, run_args=tuple(run_args)),))
    if not inputs.is_dir():
        raise InputError(f"{inputs}: --inputs must be a directory of input files")
    files = sorted(p for p in inputs.iterdir() if p.is_file())
    if not files:
        raise InputError(f"{inputs}: no input files")
    programs = []
    as_argument = _takes_input(run_args)
    for path in files:
        args = tuple(arg.replace(INPUT_PLACEHOLDER, str(path.resolve())) for arg in run_args)
        stdin = None if as_argument else path.read_bytes()
        programs.append(replace(base, name=f"{program.name} < {path.name}", run_args=args, stdin=stdin))
    return Suite(program.name, tuple(programs))


def _takes_input(run_args: Sequence[str]) -> bool:
    return any(INPUT_PLACEHOLDER in arg for arg in run_args)


def check_run_inputs(run_args: Sequence[str], inputs: Path | None) -> None:
    """`{input}` needs `--inputs`: without it the program would run on a file literally named "{input}"."""
    if inputs is None and _takes_input(run_args):
        raise InputError(f"--run names {INPUT_PLACEHOLDER} but no --inputs DIR was given: give the directory of inputs")
