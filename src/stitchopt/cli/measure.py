"""`stitchopt ir | passes | eval`: the IR every evaluation starts from, the passes a search may use, and one pass
list measured beside clang's levels."""

from __future__ import annotations

import csv
import io
import json
import sys
from contextlib import nullcontext
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
    PassesOption,
    console,
    destination,
    format_option,
    open_store,
    output_option,
    print_table,
    refuse_ignored,
    require_positive,
)
from stitchopt.datasets.benchmarks import program_path
from stitchopt.diagnostics import telling_line
from stitchopt.errors import InputError, StitchoptError
from stitchopt.evaluation.comparison import Comparison, compare
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import EXCLUSION_RULES, load_catalogue
from stitchopt.passes.pipeline import check_pipeline, pipeline_from_text
from stitchopt.reports.flag_tuning import tables_markdown
from stitchopt.reports.tables import Rows, evaluation_rows, results_json, to_rich
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import compile_source, is_source, load_module
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S
from stitchopt.validate.security_guard import KINDS, HardeningError, SecurityComparison, compare_security, describe

EVAL_FORMATS = ("json", "csv", "md")
CSV_FIELDS = ("size_bytes", "text_bytes", "ir_instruction_count", "opt_seconds", "codegen_seconds")


def _security(evaluator: Evaluator, path: Path, pipeline: str, clang_args: list[str]) -> SecurityComparison | None:
    """The security-relevant code of the program, at -Oz and with the list (None when the IR cannot be read:
    the size table then says why)."""
    oz = evaluator.baselines["Oz"]
    module = load_module(evaluator.toolchain, path, clang_args)
    try:
        return compare_security(evaluator.toolchain, evaluator.store, module, oz.options, oz.pipeline, pipeline)
    except HardeningError:
        return None


def security_rows(security: SecurityComparison) -> Rows:
    """One row per kind: the unoptimized module, -Oz and the list."""
    columns = (security.source.to_dict(), security.oz.to_dict(), security.passes.to_dict())
    rows = [[kind.replace("_", " "), *(str(c[kind]) for c in columns)] for kind in KINDS]
    return Rows("security-relevant code (security guard)", ["kind", "source", "-Oz", "passes"], rows)


def results_csv(comparison: Comparison) -> str:
    """One row per build (clang's levels, then the list): the measured numbers, unformatted."""
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["program", "build", "pipeline", "status", *CSV_FIELDS, "size_change_vs_oz_percent"])
    for label, result in comparison.results.items():
        measured = [getattr(result, name) for name in CSV_FIELDS]
        change = comparison.size_change_vs_oz(label)
        writer.writerow([comparison.name, label, result.pipeline, result.status.value, *measured, change])
    return stream.getvalue()


ClangArgs = Annotated[Optional[list[str]], typer.Argument(help="Extra clang arguments after --.")]  # noqa: UP045


def ir_command(
    source: Annotated[str, typer.Argument(help="C or C++ source file (or a bench:// URI of one).")],
    output: Annotated[
        Optional[Path],  # noqa: UP045 (typer needs Optional on Python 3.10)
        output_option("Write .bc (bitcode) or .ll (text); default: text on stdout."),
    ] = None,
    clang_args: ClangArgs = None,
    llvm: LlvmOption = None,
) -> None:
    """Emit the unoptimized IR that every evaluation starts from (clang -Oz front end, no LLVM passes)."""
    if output is not None and output.suffix not in (".bc", ".ll"):
        raise StitchoptError(f"{output}: the output must end in .bc (bitcode) or .ll (text)")
    text = output is None or output.suffix == ".ll"
    toolchain = find_toolchain(llvm)
    data = compile_source(toolchain, program_path(source, toolchain), text=text, extra_args=clang_args or [])
    if output is None:
        sys.stdout.buffer.write(data)
    else:
        output.write_bytes(data)


def passes_command(json_output: JsonOption = False, llvm: LlvmOption = None) -> None:
    """List the searchable passes of the installed LLVM and what the rules excluded."""
    catalogue = load_catalogue(find_toolchain(llvm))
    if json_output:
        payload = {
            "llvm_version": catalogue.llvm_version,
            "passes": [
                {"name": p.name, "level": p.level.value, "spelling": p.spelling, "adaptor": p.adaptor}
                for p in catalogue.passes
            ],
            "excluded": [{"name": e.name, "level": e.level.value, "rule": e.rule} for e in catalogue.excluded],
            "rules": {rule.name: rule.reason for rule in EXCLUSION_RULES},
        }
        print(json.dumps(payload, indent=2))
        return
    for entry in catalogue.passes:
        console.print(f"{entry.level.value:<9} {entry.spelling}", highlight=False)
    console.print(
        f"[dim]{len(catalogue)} searchable passes, {len(catalogue.excluded)} excluded (see --json), LLVM "
        f"{catalogue.llvm_version}[/dim]"
    )


def eval_command(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    passes: PassesOption,
    clang_args: ClangArgs = None,
    json_output: JsonOption = False,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the results here: json (as --json prints them), csv (one row per build) or md."),
    ] = None,
    fmt: Annotated[Optional[str], format_option(EVAL_FORMATS)] = None,  # noqa: UP045
    timeout: Annotated[float, typer.Option(help="Seconds per tool run.")] = DEFAULT_TIMEOUT_S,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Measure a pass list on one program, beside clang's -O0, -Oz and -O3."""
    shown = destination(output, fmt, EVAL_FORMATS, json_output)
    require_positive("--timeout", timeout)
    if no_cache:
        refuse_ignored(ctx, ("cache_dir",), "with the cache (without --no-cache)")
    toolchain = find_toolchain(llvm)
    path = program_path(file, toolchain)
    if clang_args and not is_source(path):
        raise StitchoptError(f"{path}: clang arguments after -- only apply to C/C++ sources: drop them")
    pipeline = pipeline_from_text(passes, load_catalogue(toolchain))
    check_pipeline(toolchain, pipeline, timeout)
    with (
        nullcontext() if no_cache else open_store(cache_dir) as store,
        Evaluator(toolchain, store, timeout=timeout, jobs=jobs or None, backend=backend, address=address) as evaluator,
    ):
        comparison = compare(evaluator, path, pipeline, clang_args or [])
        security = _security(evaluator, path, pipeline, clang_args or [])
    oz = comparison.results["Oz"]
    if not any(result.ok for result in comparison.results.values()):  # clang's own levels fail too: the input
        why = telling_line(oz.stderr_tail) or oz.status.value
        raise InputError(f"{path}: not even clang's -O0/-Oz/-O3 build it ({why}); give IR for a target llc can emit")
    found = {"security": security.to_dict()} if security is not None else {}
    document = {"toolchain": toolchain.identity, **results_json(comparison), **found}
    tables = [evaluation_rows(comparison), *([security_rows(security)] if security is not None else [])]
    renderers = {
        "json": lambda: json.dumps(document, indent=2) + "\n",
        "csv": lambda: results_csv(comparison),
        "md": lambda: tables_markdown(tables),
    }
    shown.write(lambda chosen: renderers[chosen]())
    if shown.tables:
        _print_tables(comparison, pipeline, tables, security)


def _print_tables(
    comparison: Comparison, pipeline: str, tables: list[Rows], security: SecurityComparison | None
) -> None:
    """The terminal view: the pipeline as opt runs it, the tables, and what went wrong or was removed."""
    console.print(f"pipeline: {pipeline}", highlight=False, soft_wrap=True)
    for table in tables:
        print_table(to_rich(table))
    if security is not None:
        if security.removed_vs_oz:
            removed = describe(security.removed_vs_oz)
            console.print(f"[red]the list removes security-relevant code that -Oz keeps: {removed}[/red]")
        if security.removed_by_oz:
            console.print(f"[yellow]-Oz itself removes: {describe(security.removed_by_oz)}[/yellow]")
    for label, result in comparison.results.items():
        if not result.ok:
            console.print(f"[red]{label}: {result.status.value}[/red] {result.stderr_tail.strip()[-500:]}")
