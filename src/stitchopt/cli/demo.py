"""`stitchopt demo`: the built-in corpus at clang's levels and with the shipped model, as tables or a report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    JobsOption,
    KOption,
    LlvmOption,
    destination,
    format_option,
    open_evaluator,
    output_option,
    print_table,
    progress_bar,
    status_console,
)
from stitchopt.learning.demo import run_demo
from stitchopt.reports.demo_report import choice_rows, demo_report
from stitchopt.reports.document import generated_now, to_html
from stitchopt.reports.tables import corpus_rows, to_markdown, to_rich
from stitchopt.toolchain.discovery import find_toolchain

DEMO_FORMATS = ("html", "md")


def demo_command(
    jobs: JobsOption = 0,
    output: Annotated[
        Optional[Path],  # noqa: UP045 (typer needs Optional on Python 3.10)
        output_option("Write the report of the run here (html: a self-contained page, or md)."),
    ] = None,
    fmt: Annotated[Optional[str], format_option(DEMO_FORMATS)] = None,  # noqa: UP045
    k: KOption = 5,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Evaluate the built-in corpus at clang's -O0, -Oz and -O3, apply the shipped model in static and jit mode
    (each answer checked by running the program) and print the tables; -o report.html writes an HTML report."""
    shown = destination(output, fmt, DEMO_FORMATS)
    with (
        open_evaluator(find_toolchain(llvm), cache_dir, jobs, backend, address) as evaluator,
        progress_bar() as progress,
    ):
        task = progress.add_task("demo corpus: clang's levels, the shipped model", total=None)
        run = run_demo(evaluator, k=k, on_program=lambda _, total: progress.update(task, total=total, advance=1))
    tables = [corpus_rows(run.comparisons, run.corpus), choice_rows(run.choices)]

    def render(chosen: str) -> str:
        if chosen == "md":
            return "".join(to_markdown(table) + "\n\n" for table in tables)
        return to_html(demo_report(run.corpus, run.comparisons, run.choices, run.sources, k), generated_now())

    shown.write(render)
    if shown.tables:
        for table in tables:
            print_table(to_rich(table))
    counters = evaluator.counters
    status_console.print(
        f"[dim]{counters.evaluated} evaluated ({evaluator.backend.name} backend), "
        f"{counters.cache_hits} from the cache[/dim]"
    )
