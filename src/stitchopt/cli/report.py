"""`stitchopt report KIND INPUT...`: an HTML page, Markdown or CSV from what stitchopt already stored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from stitchopt.cli.options import (
    JsonOption,
    LlvmOption,
    destination,
    format_option,
    output_option,
    print_table,
    refuse_ignored,
)
from stitchopt.reports.build import KINDS, build_report, check_kind
from stitchopt.reports.document import FORMATS, generated_now, render
from stitchopt.reports.tables import to_rich


def report_command(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(help="; ".join(f"{k}: {v}" for k, v in KINDS.items()))],
    inputs: Annotated[list[Path], typer.Argument(help="The files (or model directory) to report on.")],
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("File to write; without it the tables are printed."),
    ] = None,
    fmt: Annotated[Optional[str], format_option(FORMATS)] = None,  # noqa: UP045
    log: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(help="run: trial logs of `tune --log` (search detail and Pareto fronts); repeatable."),
    ] = None,
    evaluation: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(help="model: evaluations of the model (`stitchopt evaluate -o FILE.json`); repeatable."),
    ] = None,
    study: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="model: the stitching study behind it (`stitchopt stitch table -o FILE.json`)."),
    ] = None,
    json_output: JsonOption = False,
    llvm: LlvmOption = None,
) -> None:
    """Plots and tables of runs, evaluations, models, validations, builds or detection studies, without re-running
    anything."""
    check_kind(kind)  # an unknown kind first: the refusals below would misname the problem
    if kind != "run":
        refuse_ignored(ctx, ("log",), "to run reports")
    if kind != "model":
        refuse_ignored(ctx, ("evaluation", "study", "llvm"), "to model reports")
    shown = destination(output, fmt, FORMATS, json_output)
    report = build_report(
        kind,
        inputs,
        output_dir=output.parent if output is not None else Path("."),
        trial_logs=log or [],
        evaluations=evaluation or [],
        study=study,
        llvm=llvm,
    )
    shown.write(lambda chosen: render(report, chosen, generated_now()))
    if shown.fmt is None and not shown.json_output:
        for table in report.tables():
            print_table(to_rich(table))
