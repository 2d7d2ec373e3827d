"""`stitchopt evaluate`: a flag-tuning model judged on held-out programs (a built dataset's split or the user's own
files), scored against -Oz, -Os, -O3, the best single list and the autotuner."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    ModelOption,
    console,
    destination,
    format_option,
    open_evaluator,
    output_option,
    print_table,
    refuse_ignored,
    status_console,
    target_paths,
)
from stitchopt.datasets.benchmarks import is_dataset_uri
from stitchopt.errors import InputError
from stitchopt.learning.heldout import Evaluation, evaluate_dataset, evaluate_paths, without_packages
from stitchopt.learning.verification import EVIDENCE_FORMAT, LARGE_WIN
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.reports.flag_tuning import evaluation_csv, evaluation_json, method_tables, tables_markdown
from stitchopt.reports.tables import Rows, to_rich
from stitchopt.toolchain.discovery import Toolchain, find_toolchain

EVALUATE_FORMATS = ("json", "csv", "md")
DATASET_ONLY = ("split", "per_package", "max_ir_kb")  # options that pick programs of a dataset


def _program_files(ctx: typer.Context, targets: list[str], programs: int, toolchain: Toolchain) -> list[Path] | None:
    """None for one dataset URI (the dataset options pick its programs); else the files the targets name, the
    first `programs` of them, with the dataset options refused."""
    if len(targets) == 1 and is_dataset_uri(targets[0]):
        return None
    if any(is_dataset_uri(target) for target in targets):
        raise InputError("give one dataset URI, or files and directories, not both")
    refuse_ignored(ctx, DATASET_ONLY, "to a dataset URI")
    paths = target_paths(targets, toolchain)
    return paths[:programs] if programs else paths


def _tables(evaluation: Evaluation, title: str, excluded: list[str]) -> list[Rows]:
    """The tables over every program, then over the programs outside the excluded packages."""
    tables = method_tables(evaluation, title)
    if excluded:
        missing = sorted(set(excluded) - {o.package for o in evaluation.programs})
        if missing:
            status_console.print(f"--exclude-package: no program of {', '.join(missing)} here", highlight=False)
        rest = without_packages(evaluation, excluded)
        tables += method_tables(rest, f"{title}; without {', '.join(excluded)}: {len(rest.programs)} programs")
    return tables


def evaluate_command(
    ctx: typer.Context,
    targets: Annotated[
        list[str],
        typer.Argument(
            help="A built dataset (e.g. bench://pypi-v1), or C/C++/.ll/.bc files and directories of them: your own "
            "code."
        ),
    ],
    model_dir: ModelOption = None,
    split: Annotated[str, typer.Option(help="A dataset's split to evaluate on (refused with files).")] = "test",
    programs: Annotated[
        int,
        typer.Option(min=0, help="At most this many programs (a dataset: round-robin by package; files: the first)."),
    ] = 0,
    max_ir_kb: Annotated[
        float, typer.Option(min=1, help="Skip a dataset's programs whose IR file is larger (refused with files).")
    ] = 100.0,
    per_package: Annotated[
        int, typer.Option(min=0, help="At most this many programs of one dataset package (0: all; refused with files).")
    ] = 40,
    ks: Annotated[str, typer.Option("--ks", help="jit k values, comma-separated.")] = "5,10",
    autotuner: Annotated[
        Optional[Path],  # noqa: UP045 (typer needs Optional on Python 3.10)
        typer.Option(help="Run record of `stitchopt tune` on the same programs: adds the % of its gain."),
    ] = None,
    llm_compiler: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="A local LLM Compiler model directory: adds its flag-tuning answers (`lift` extra)."),
    ] = None,
    verified: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help=f"Run evidence, JSON lines ({EVIDENCE_FORMAT}): builds that ran and passed their tests. A win "
            f"{LARGE_WIN} counts only with it; without, it counts as -Oz and is listed apart."
        ),
    ] = None,
    exclude_package: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--exclude-package",
            help="Also show the tables without this package's programs (repeatable; a file's package is its "
            "directory's name). Tables only: json and csv rows carry each program's package.",
        ),
    ] = None,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option(
            "Write the evaluation here: json (read by `stitchopt report evaluation`), csv (one row per "
            "program) or md (the tables)."
        ),
    ] = None,
    fmt: Annotated[Optional[str], format_option(EVALUATE_FORMATS)] = None,  # noqa: UP045
    json_output: JsonOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Evaluate a model against -Oz, -Os, -O3, the best single list and the autotuner, on a dataset's held-out
    split or on your own files."""
    shown = destination(output, fmt, EVALUATE_FORMATS, json_output)
    excluded = exclude_package or []
    if excluded and not (shown.tables or shown.fmt == "md"):
        raise InputError(
            "--exclude-package only applies to the tables (terminal or md): json and csv rows name each "
            "program's package"
        )
    toolchain = find_toolchain(llvm)
    paths = _program_files(ctx, targets, programs, toolchain)
    model = model_dir or DEFAULT_MODEL_DIR
    jit_ks = tuple(int(k) for k in ks.split(",") if k)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        if paths is None:
            evaluation, title = evaluate_dataset(
                evaluator,
                targets[0],
                model,
                split=split,
                programs=programs,
                max_ir_kb=max_ir_kb,
                per_package=per_package or None,
                ks=jit_ks,
                autotuner=autotuner,
                llm_compiler=llm_compiler,
                verified=verified,
            )
        else:
            evaluation, title = evaluate_paths(
                evaluator, paths, model, ks=jit_ks, autotuner=autotuner, llm_compiler=llm_compiler, verified=verified
            )
    tables = _tables(evaluation, title, excluded)
    renderers = {
        "json": lambda: evaluation_json(evaluation),
        "csv": lambda: evaluation_csv(evaluation),
        "md": lambda: tables_markdown(tables),
    }
    shown.write(lambda chosen: renderers[chosen]())
    if not shown.tables:
        return
    for table in tables:
        print_table(to_rich(table))
    mape = ", ".join(f"{name} {value:.3f}" for name, value in evaluation.size_mape.items())
    console.print(
        f"inference: median {evaluation.inference_ms_median:.1f} ms, max {evaluation.inference_ms_max:.1f} ms; "
        f"size model MAPE: {mape}; {len(evaluation.skipped)} programs skipped",
        highlight=False,
    )
