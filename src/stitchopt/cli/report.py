"""`stitchopt report KIND INPUT...`: an HTML page, Markdown or CSV from what stitchopt already stored."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from stitchopt.cli.options import LlvmOption, print_table, refuse_ignored, status_console
from stitchopt.errors import InputError
from stitchopt.reports.build import KINDS, build_report, check_kind
from stitchopt.reports.document import FORMATS, generated_now, render
from stitchopt.reports.tables import to_rich


def report_command(
    ctx: typer.Context,
    kind: Annotated[str, typer.Argument(help="; ".join(f"{k}: {v}" for k, v in KINDS.items()))],
    inputs: Annotated[list[Path], typer.Argument(help="The files (or model directory) to report on.")],
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("-o", "--output", help="File to write; without it the tables are printed."),
    ] = None,
    fmt: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--format", help="html, md or csv (default: from the output's suffix, else html)."),
    ] = None,
    log: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(help="run: trial logs of `tune --log` (search detail and Pareto fronts); repeatable."),
    ] = None,
    evaluation: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option(help="model: evaluations of the model (`stitchopt evaluate --json`); repeatable."),
    ] = None,
    study: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="model: the stitching study behind it (`stitchopt stitch table --json`)."),
    ] = None,
    llvm: LlvmOption = None,
) -> None:
    """Plots and tables of runs, evaluations, models or validations, without re-running anything."""
    check_kind(kind)  # an unknown kind first: the refusals below would misname the problem
    if kind != "run":
        refuse_ignored(ctx, ("log",), "to run reports")
    if kind != "model":
        refuse_ignored(ctx, ("evaluation", "study", "llvm"), "to model reports")
    chosen = fmt or (output.suffix.lstrip(".") if output is not None and output.suffix else "html")
    if chosen not in FORMATS:
        raise InputError(f"unknown format {chosen!r}: use one of {', '.join(FORMATS)}")
    report = build_report(
        kind, inputs, output_dir=output.parent if output is not None else Path("."), trial_logs=log or [],
        evaluations=evaluation or [], study=study, llvm=llvm,
    )  # fmt: skip
    if output is not None:
        output.write_text(render(report, chosen, generated_now()))
        status_console.print(f"wrote {output}", highlight=False)
    elif fmt is not None:
        print(render(report, chosen, generated_now()), end="")
    else:
        for table in report.tables():
            print_table(to_rich(table))
