"""Options and helpers shared by the CLI's commands."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from stitchopt.cache.store import CACHE_DIR_ENV, DB_NAME, EvaluationStore, default_cache_dir
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import dataset_programs, is_dataset_uri, program_path
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import BACKEND_ENV
from stitchopt.toolchain.frontend import supported_suffixes
from stitchopt.validate.suites import DATA_DIR_ENV

console = Console()  # results: tables, listings, answers
status_console = Console(stderr=True)  # progress, notes and status lines: stdout keeps only results (and --json)
TABLE_MIN_WIDTH = 100  # wide tables never lose columns; a narrow terminal wraps lines instead

LlvmOption = Annotated[
    Optional[Path],  # noqa: UP045 (typer needs Optional on Python 3.10)
    typer.Option(
        "--llvm", help="LLVM bin directory (default: $STITCHOPT_LLVM, then versioned installs, then PATH)."
    ),
]
CacheDirOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--cache-dir", help=f"Evaluation cache directory (default: ${CACHE_DIR_ENV} or the user cache)."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
STDOUT = Path("-")
JsonFileOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--json", help="Everything as JSON to this file; - prints it on stdout instead of the tables."),
]
JobsOption = Annotated[int, typer.Option(help="Concurrent evaluations (default: all cores).")]
ObjectiveOption = Annotated[
    str, typer.Option(help="Weighted terms: size, instructions, compile-time, perf (perf needs --run).")
]
OutputOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("-o", "--output", help="Where to save the run record (read by broadcast)."),
]
BackendOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--backend", help=f"auto (default), native, subprocess or ray (or ${BACKEND_ENV})."),
]
AddressOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--address", help="With --backend ray: the cluster to join (default: Ray's own, else a local one)."),
]

ValidateOption = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--validate",
        help="Suite a reported list must pass: humaneval, csmith, a directory or a .jsonl file (repeatable; "
        "default humaneval when its data is found, else csmith).",
    ),
]
ValidateLimitOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--validate-limit", help="Validate on the first N programs of each suite (csmith: N programs)."),
]
NoValidateOption = Annotated[
    bool, typer.Option("--no-validate", help="Skip full validation (guards still run): answers are NOT validated.")
]
DataDirOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--data-dir", help=f"Where humaneval_cpp.jsonl.gz is (default ${DATA_DIR_ENV})."),
]

RunOption = Annotated[
    bool,
    typer.Option(
        "--run", help="Also run each C/C++ program (its main) with the answer and compare with its -O0/-O2 builds."
    ),
]
RunArgsOption = Annotated[str, typer.Option(help="Arguments for the program; {input} stands for each input file.")]
InputsOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(help="Directory of inputs for the program (fed on stdin, or as {input})."),
]

PerfCounterOption = Annotated[
    str,
    typer.Option(
        "--perf-counter",
        help="How perf is measured: auto (valgrind instructions when installed, else seconds), instructions, seconds.",
    ),
]


def open_store(cache_dir: Path | None) -> EvaluationStore:
    return EvaluationStore((cache_dir or default_cache_dir()) / DB_NAME)


def print_table(table: Table) -> None:
    """Tables get at least TABLE_MIN_WIDTH columns: a narrow terminal wraps lines rather than drop columns."""
    Console(width=max(console.width, TABLE_MIN_WIDTH)).print(table)


def save_text(path: Path, text: str) -> None:
    """`path`, or stdout when it is `-` (`--json -`): JSON for scripts, with no table around it."""
    if path == STDOUT:
        sys.stdout.write(text)
    else:
        path.write_text(text)


def refuse_ignored(ctx: typer.Context, names: Sequence[str], applies: str) -> None:
    """A one-line error (exit 2) for an option given where it would be ignored: an option accepted and silently
    dropped makes the user believe it took effect."""
    for param in ctx.command.params:
        if not (param.name and param.name in names):
            continue
        source = ctx.get_parameter_source(param.name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):  # given, not defaulted
            raise InputError(f"{max(param.opts, key=len)} only applies {applies}: drop it")


def refuse_data_dir_without_humaneval(ctx: typer.Context, suites: Sequence[str] | None) -> None:
    """--data-dir only locates the HumanEval-X data: refused when suites are named and none is humaneval (with
    none named, the default suite is humaneval when its data is found)."""
    if suites and "humaneval" not in suites:
        refuse_ignored(ctx, ("data_dir",), "to the humaneval suite")


def refuse_beside_json_stdout(ctx: typer.Context, json_file: Path | None, names: Sequence[str], applies: str) -> None:
    """With `--json -` stdout holds the JSON alone, so options of the tables (`names`) would be ignored."""
    if json_file == STDOUT:
        refuse_ignored(ctx, names, f"{applies} (not with --json -)")


def json_replaces_tables(json_file: Path | None, text: str) -> bool:
    """Saves `text` where `--json FILE` says; True when it went to stdout, where no table may follow it."""
    if json_file is not None:
        save_text(json_file, text)
    return json_file == STDOUT


def parse_objective(text: str) -> Objective:
    """`--objective size=1,compile-time=0.1` as an Objective; a malformed one is a one-line error."""
    try:
        return Objective.parse(text)
    except ValueError as exc:
        raise InputError(str(exc)) from exc


def target_paths(targets: list[str]) -> list[Path]:
    """Files, directories (their C/C++/IR files), bench:// URIs and whole datasets (`bench://pypi-v1`, or
    `bench://pypi-v1?split=test` for one split), in the given order."""
    paths: list[Path] = []
    for target in targets:
        if is_dataset_uri(target):
            uri, _, query = target.partition("?split=")
            paths += dataset_programs(uri, split=query or None)
            continue
        path = program_path(target)
        if path.is_dir():
            paths += sorted(p for p in path.iterdir() if p.suffix in supported_suffixes())
        else:
            paths.append(path)
    if not paths:
        raise InputError("no programs given: give C/C++/.ll/.bc files, directories or bench:// URIs")
    return paths
