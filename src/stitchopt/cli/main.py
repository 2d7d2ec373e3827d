"""The `stitchopt` command: thin typer commands, each calling one library function, and the one entry point
that turns what happened into an exit status (EXIT_STATUSES)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer
from rich.progress import Progress

from stitchopt import __version__
from stitchopt.cache.store import DB_NAME, default_cache_dir, remove_store
from stitchopt.cli.datasets import datasets_app
from stitchopt.cli.hot import hot_command
from stitchopt.cli.learn import (
    KOption,
    ModelOption,
    evaluate_command,
    labels_command,
    optimize_command,
    predict_command,
    train_command,
)
from stitchopt.cli.lift import lift_eval_command
from stitchopt.cli.options import (
    BackendOption,
    CacheDirOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    console,
    destination,
    format_option,
    open_evaluator,
    open_store,
    output_option,
    print_table,
    refuse_ignored,
    status_console,
    target_paths,
)
from stitchopt.cli.report import report_command
from stitchopt.cli.stitch import stitch_app
from stitchopt.cli.tune import broadcast_command, minimize_command, pareto_command, tune_command
from stitchopt.cli.validate import validate_command
from stitchopt.datasets.benchmarks import program_path
from stitchopt.datasets.demo import demo_programs
from stitchopt.errors import StitchoptError, ToolchainError
from stitchopt.evaluation.comparison import compare, compare_many
from stitchopt.evaluation.evaluator import BACKEND_ENV, Evaluator, select_backend
from stitchopt.evaluation.native.pool import probe_native
from stitchopt.learning.corpus_choices import choose_for_corpus
from stitchopt.learning.kinds import load_model
from stitchopt.learning.warm import warm_caches
from stitchopt.models.directory import model_identity, read_model_directory
from stitchopt.models.flag_model import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import EXCLUSION_RULES, load_catalogue
from stitchopt.passes.pipeline import check_pipeline, pipeline_from_text
from stitchopt.reports.demo_report import choice_rows, demo_report
from stitchopt.reports.document import generated_now, to_html
from stitchopt.reports.tables import corpus_rows, evaluation_rows, results_json, to_markdown, to_rich
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import compile_source, is_source, load_module
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S
from stitchopt.toolchain.runtimes import profile_runtime_package, profile_runtime_problem

DEBUG_ENV = "STITCHOPT_DEBUG"
DEMO_FORMATS = ("html", "md")
SUCCESS, NEGATIVE, USER_ERROR, INTERNAL_ERROR, INTERRUPTED = 0, 1, 2, 3, 130
EXIT_STATUSES = (
    f"Exit status: {SUCCESS} success; {NEGATIVE} a negative verdict (validation failed); {USER_ERROR} a user error "
    f"(bad input or option); {INTERNAL_ERROR} an internal error (its traceback with --debug or {DEBUG_ENV}=1); "
    f"{INTERRUPTED} interrupted."
)

app = typer.Typer(
    help="Choose LLVM optimization pass lists that make programs smaller and faster.",
    epilog=EXIT_STATUSES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("validate")(validate_command)
app.command("labels")(labels_command)
app.command("train")(train_command)
app.command("predict")(predict_command)
app.command("optimize")(optimize_command)
app.command("evaluate")(evaluate_command)
app.command("report")(report_command)
app.command("hot")(hot_command)
app.command("lift-eval")(lift_eval_command)
app.command("tune")(tune_command)
app.command("broadcast")(broadcast_command)
app.command("pareto")(pareto_command)
app.command("minimize")(minimize_command)
app.add_typer(datasets_app, name="datasets")
app.add_typer(stitch_app, name="stitch")
cache_app = typer.Typer(help="Inspect or clear the evaluation cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


def version_lines() -> list[str]:
    """stitchopt's version, the LLVM it would use (or why none) and the shipped model, without loading a model."""
    try:
        toolchain = find_toolchain()
        llvm = f"LLVM {toolchain.version_string} ({toolchain.tool('opt')}, from {toolchain.source})"
    except ToolchainError as exc:
        llvm = f"LLVM: not found ({str(exc).splitlines()[0]})"
    config, arrays = read_model_directory(DEFAULT_MODEL_DIR)
    model = (
        f"model: shipped {DEFAULT_MODEL_DIR.name} model {model_identity(config, arrays)}, made by stitchopt "
        f"{config.get('stitchopt', '?')} for LLVM {config.get('llvm', '?')} (format {config.get('format', '?')})"
    )
    return [f"stitchopt {__version__}", llvm, model]


def _show_version(shown: bool) -> None:
    if shown:
        for line in version_lines():
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit()


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_show_version,
            help="Print the versions of stitchopt, the LLVM it finds and the shipped model.",
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help=f"Print the traceback of an internal error (also {DEBUG_ENV}=1).")
    ] = False,
) -> None:
    """Options before the command; --version answers at once (eager), --debug is for exit_status()."""
    if debug:
        os.environ[DEBUG_ENV] = "1"  # read by exit_status(), which sees the exception after the command


@app.command()
def doctor(llvm: LlvmOption = None) -> None:
    """Show the LLVM toolchain stitchopt will use and which optional parts are available."""
    toolchain = find_toolchain(llvm)
    console.print(f"[bold]LLVM {toolchain.version_string}[/bold] chosen from {toolchain.source}")
    for step in toolchain.searched:
        console.print(f"  skipped: {step}")
    for name, path in sorted(toolchain.tools.items()):
        console.print(f"  {name:<14} {path}")
    console.print(f"  target triple  {toolchain.default_triple}")
    console.print(f"  identity       {toolchain.identity}")
    for name, (present, purpose) in _system_parts().items():
        console.print(
            f"  {name:<14} {'found' if present else 'missing':<8} {purpose}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    problem = profile_runtime_problem(toolchain)
    console.print(
        "  profile rt     found"
        if problem is None
        else f"  profile rt     missing: install {profile_runtime_package(toolchain)} (hot-path profiles and"
        f" `optimize --mode hybrid --run` link it; {problem})"
    )
    probe = probe_native(toolchain)
    console.print(f"  native eval    {'available' if probe.available else 'unavailable'}: {probe.reason}")
    backend = select_backend(toolchain)
    console.print(f"  evaluator      [bold]{backend.name}[/bold] (override with --backend or ${BACKEND_ENV})")
    backend.close()


def _system_parts() -> dict[str, tuple[bool, str]]:
    """System tools and extras, each with whether it is found (without importing anything heavy) and what it is
    for."""
    found = shutil.which
    return {
        "prlimit": (found("prlimit") is not None, "required: resource limits of tools and test programs (util-linux)"),
        "valgrind": (found("valgrind") is not None, "optional: instruction counts for the perf objective"),
        "csmith": (found("csmith") is not None, "optional: the csmith validation suite"),
        "csmith.h": (
            any(Path(p).is_file() for p in ("/usr/include/csmith/csmith.h", "/usr/include/csmith.h")),
            "optional: building csmith programs (libcsmith-dev)",
        ),
        "chromium": (
            found("chromium") is not None and found("chromedriver") is not None,
            "optional: the HTML reports' browser test (chromium, chromium-driver)",
        ),
        "stitch extra": (
            all(importlib.util.find_spec(m) is not None for m in ("torch", "ot", "sklearn")),
            "optional: stitchopt stitch (stitchopt[stitch])",
        ),
        "lift extra": (
            all(importlib.util.find_spec(m) is not None for m in ("transformers", "sacrebleu", "rapidfuzz")),
            "optional: stitchopt lift-eval (stitchopt[lift])",
        ),
    }


@app.command()
def ir(
    source: Annotated[Path, typer.Argument(help="C or C++ source file.")],
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write .bc (bitcode) or .ll (text); default: text on stdout."),
    ] = None,
    clang_args: Annotated[Optional[list[str]], typer.Argument(help="Extra clang arguments after --.")] = None,  # noqa: UP045
    llvm: LlvmOption = None,
) -> None:
    """Emit the unoptimized IR that every evaluation starts from (clang -Oz front end, no LLVM passes)."""
    if output is not None and output.suffix not in (".bc", ".ll"):
        raise StitchoptError(f"{output}: the output must end in .bc (bitcode) or .ll (text)")
    text = output is None or output.suffix == ".ll"
    data = compile_source(find_toolchain(llvm), source, text=text, extra_args=clang_args or [])
    if output is None:
        sys.stdout.buffer.write(data)
    else:
        output.write_bytes(data)


@app.command()
def passes(json_output: JsonOption = False, llvm: LlvmOption = None) -> None:
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


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    passes: Annotated[str, typer.Option("--passes", "-p", help="Flat list 'sroa,instcombine' or a pipeline.")],
    clang_args: Annotated[Optional[list[str]], typer.Argument(help="Extra clang arguments after --.")] = None,  # noqa: UP045
    json_output: JsonOption = False,
    timeout: Annotated[float, typer.Option(help="Seconds per tool run.")] = DEFAULT_TIMEOUT_S,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Measure a pass list on one program, beside clang's -O0, -Oz and -O3."""
    if no_cache:
        refuse_ignored(ctx, ("cache_dir",), "with the cache (without --no-cache)")
    path = program_path(file)
    if clang_args and not is_source(path):
        raise StitchoptError(f"{path}: clang arguments after -- only apply to C/C++ sources: drop them")
    toolchain = find_toolchain(llvm)
    pipeline = pipeline_from_text(passes, load_catalogue(toolchain))
    check_pipeline(toolchain, pipeline)
    store = None if no_cache else open_store(cache_dir)
    with Evaluator(toolchain, store, timeout=timeout, jobs=jobs or None, backend=backend) as evaluator:
        comparison = compare(evaluator, path, pipeline, clang_args or [])
    if json_output:
        print(json.dumps({"toolchain": toolchain.identity, **results_json(comparison)}, indent=2))
        return
    console.print(f"pipeline: {pipeline}", highlight=False, soft_wrap=True)
    print_table(to_rich(evaluation_rows(comparison)))
    for label, result in comparison.results.items():
        if not result.ok:
            console.print(f"[red]{label}: {result.status.value}[/red] {result.stderr_tail.strip()[-500:]}")


@app.command()
def demo(
    jobs: JobsOption = 0,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the report of the run here (html: a self-contained page, or md)."),
    ] = None,
    fmt: Annotated[Optional[str], format_option(DEMO_FORMATS)] = None,  # noqa: UP045
    k: KOption = 5,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Evaluate the built-in corpus at clang's -O0, -Oz and -O3, apply the shipped model in static and jit mode
    (each answer checked by running the program) and print the tables; -o report.html writes an HTML report."""
    shown = destination(output, fmt, DEMO_FORMATS)
    programs = demo_programs()
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(DEFAULT_MODEL_DIR, catalogue)
    with (
        open_evaluator(toolchain, cache_dir, jobs, backend) as evaluator,
        Progress(console=status_console, transient=True) as progress,
    ):
        comparisons = compare_many(evaluator, programs.values())
        task = progress.add_task("shipped model, static and jit", total=len(programs))
        choices = choose_for_corpus(
            evaluator, catalogue, model, sorted(programs.values()), k=k, on_program=lambda _: progress.advance(task)
        )
    corpus = f"bench://demo-v1 ({len(programs)} programs)"
    tables = [corpus_rows(comparisons, corpus), choice_rows(choices)]
    sources = (
        ("dataset", "bench://demo-v1"),
        ("toolchain", toolchain.identity),
        ("catalogue", catalogue.identity),
        ("model", model.identity),
    )

    def render(chosen: str) -> str:
        if chosen == "md":
            return "".join(to_markdown(table) + "\n\n" for table in tables)
        return to_html(demo_report(corpus, comparisons, choices, sources, k), generated_now())

    shown.write(render)
    if shown.tables:
        for table in tables:
            print_table(to_rich(table))
    counters = evaluator.counters
    status_console.print(
        f"[dim]{counters.evaluated} evaluated ({evaluator.backend.name} backend), "
        f"{counters.cache_hits} from the cache[/dim]"
    )


@cache_app.command("stats")
def cache_stats(cache_dir: CacheDirOption = None) -> None:
    """Entries, size on disk and results by status."""
    with open_store(cache_dir) as store:
        stats = store.stats()
    console.print(
        f"{stats.path}: {stats.entries:,} entries, {stats.file_bytes / 1e6:.1f} MB "
        f"(bound {stats.max_bytes / 1e6:.0f} MB)",
        highlight=False,
    )
    for status, count in sorted(stats.by_status.items()):
        console.print(f"  {status:<14} {count:,}")
    for kind, count in sorted(stats.artifacts_by_kind.items()):
        console.print(f"  {kind:<14} {count:,} (validation)")


@cache_app.command("warm")
def cache_warm(
    targets: Annotated[list[str], typer.Argument(help="Files, directories or bench:// URIs.")],
    model_dir: ModelOption = None,
    k: KOption = 5,
    common: Annotated[int, typer.Option(help="Also measure the N lists most often in the top k on every unit.")] = 5,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Rank every unit and measure what static and jit builds of it will ask for, ahead of the build."""
    paths = target_paths(targets)
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir or DEFAULT_MODEL_DIR, catalogue)
    with (
        open_evaluator(toolchain, cache_dir, jobs, backend) as evaluator,
        Progress(console=status_console, transient=True) as progress,
    ):
        modules = [load_module(toolchain, path) for path in paths]
        task = progress.add_task("ranking", total=len(modules))
        report = warm_caches(
            evaluator,
            catalogue,
            model,
            modules,
            k=k,
            common=common,
            on_unit=lambda done, _: progress.update(task, completed=done),
        )
    status_console.print(
        f"{report.units} unit(s) ranked, {report.requests:,} compilations asked for, {report.compiled:,} not "
        f"cached before, {report.seconds:.1f} s; common lists: {len(report.common_lists)}",
        highlight=False,
    )


@cache_app.command("clear")
def cache_clear(cache_dir: CacheDirOption = None) -> None:
    """Delete the evaluation cache (also one written by an incompatible stitchopt)."""
    removed = remove_store((cache_dir or default_cache_dir()) / DB_NAME)
    status_console.print(
        f"removed {len(removed)} file(s)" + (f" from {removed[0].parent}" if removed else ""), highlight=False
    )


def main(args: Sequence[str] | None = None) -> NoReturn:
    """The entry point: every way a command ends becomes one exit status (EXIT_STATUSES), an error one line."""
    sys.exit(exit_status(args))


def exit_status(args: Sequence[str] | None = None) -> int:
    """Runs the command; what it returns, raises or is interrupted by, as an exit status."""
    try:
        # typer exits by itself: after the command, on usage errors (2), typer.Exit and Ctrl-C (130)
        app(args=args, prog_name="stitchopt")
        status = SUCCESS
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else SUCCESS if exc.code is None else NEGATIVE
    except KeyboardInterrupt:
        status = INTERRUPTED
    except StitchoptError as exc:
        return _error(exc, f"stitchopt: error: {exc}", USER_ERROR)
    except Exception as exc:
        text = str(exc).strip()
        what = f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
        line = f"stitchopt: internal error: {what} (run with --debug or {DEBUG_ENV}=1 for the traceback)"
        return _error(exc, line, INTERNAL_ERROR)
    if status == INTERRUPTED:  # typer ends a Ctrl-C with this status, silently
        print("stitchopt: interrupted", file=sys.stderr)
    return status


def _error(exc: BaseException, line: str, status: int) -> int:
    """One line on stderr; the traceback before it only when debugging."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        traceback.print_exception(exc)
    print(line, file=sys.stderr)
    return status
