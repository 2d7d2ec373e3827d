"""The `stitchopt` command: thin typer commands, each calling one library function.

Every StitchoptError becomes one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import Progress, TaskID

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
    AddressOption,
    BackendOption,
    CacheDirOption,
    DataDirOption,
    InputsOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    NoValidateOption,
    ObjectiveOption,
    OutputOption,
    PerfCounterOption,
    RunArgsOption,
    RunOption,
    ValidateLimitOption,
    ValidateOption,
    console,
    open_store,
    parse_objective,
    print_table,
    refuse_data_dir_without_humaneval,
    refuse_ignored,
    status_console,
    target_paths,
)
from stitchopt.cli.report import report_command
from stitchopt.cli.stitch import stitch_app
from stitchopt.cli.validate import validate_command
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import program_path
from stitchopt.datasets.demo import demo_programs
from stitchopt.errors import StitchoptError
from stitchopt.evaluation.comparison import compare, compare_many
from stitchopt.evaluation.evaluator import BACKEND_ENV, Evaluator, select_backend
from stitchopt.evaluation.native.pool import probe_native
from stitchopt.learning.corpus_choices import choose_for_corpus
from stitchopt.learning.kinds import load_model
from stitchopt.learning.warm import warm_caches
from stitchopt.models.flag_model import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import EXCLUSION_RULES, load_catalogue
from stitchopt.passes.pipeline import check_pipeline, is_explicit_pipeline, pipeline_from_text, split_top_level
from stitchopt.reports.demo_report import choice_rows, demo_report
from stitchopt.reports.document import generated_now, to_html
from stitchopt.reports.tables import (
    corpus_rows,
    evaluation_rows,
    pareto_rows,
    results_json,
    to_markdown,
    to_rich,
    tuning_rows,
)
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import compile_source, is_source, load_module
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S
from stitchopt.toolchain.runtimes import profile_runtime_package, profile_runtime_problem
from stitchopt.tune.acceptance import ProgramRun, list_validation
from stitchopt.tune.broadcast import DEFAULT_TOP, broadcast
from stitchopt.tune.driver import Budget, TuningRun
from stitchopt.tune.minimize import minimize
from stitchopt.tune.pareto import METRICS, fronts_from_log
from stitchopt.tune.record import RunRecord
from stitchopt.tune.runtime import COUNTERS
from stitchopt.tune.session import run_record, tune_programs
from stitchopt.tune.strategies import STRATEGIES

app = typer.Typer(
    help="Choose LLVM optimization pass lists that make programs smaller and faster.",
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
app.add_typer(datasets_app, name="datasets")
app.add_typer(stitch_app, name="stitch")
cache_app = typer.Typer(help="Inspect or clear the evaluation cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")

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
        console.print(f"  {name:<14} {'found' if present else 'missing':<8} {purpose}", markup=False, highlight=False,
                      soft_wrap=True)  # fmt: skip
    problem = profile_runtime_problem(toolchain)
    console.print(
        "  profile rt     found" if problem is None else
        f"  profile rt     missing: install {profile_runtime_package(toolchain)} (hot-path profiles and"
        f" `optimize --mode hybrid --run` link it; {problem})"
    )  # fmt: skip
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
        "prlimit": (found("prlimit") is not None,
                    "required: resource limits of tools and test programs (util-linux)"),
        "valgrind": (found("valgrind") is not None, "optional: instruction counts for the perf objective"),
        "csmith": (found("csmith") is not None, "optional: the csmith validation suite"),
        "csmith.h": (any(Path(p).is_file() for p in ("/usr/include/csmith/csmith.h", "/usr/include/csmith.h")),
                     "optional: building csmith programs (libcsmith-dev)"),
        "chromium": (found("chromium") is not None and found("chromedriver") is not None,
                     "optional: the HTML reports' browser test (chromium, chromium-driver)"),
        "stitch extra": (all(importlib.util.find_spec(m) is not None for m in ("torch", "ot", "sklearn")),
                         "optional: stitchopt stitch (stitchopt[stitch])"),
        "lift extra": (all(importlib.util.find_spec(m) is not None for m in ("transformers", "sacrebleu", "rapidfuzz")),
                       "optional: stitchopt lift-eval (stitchopt[lift])"),
    }  # fmt: skip


@app.command()
def ir(
    source: Annotated[Path, typer.Argument(help="C or C++ source file.")],
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("-o", "--output", help="Write .bc (bitcode) or .ll (text); default: text on stdout."),
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
            "excluded": [
                {"name": e.name, "level": e.level.value, "rule": e.rule} for e in catalogue.excluded
            ],
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
    passes: Annotated[
        str, typer.Option("--passes", "-p", help="Flat list 'sroa,instcombine' or a pipeline.")
    ],
    clang_args: Annotated[Optional[list[str]], typer.Argument(help="Extra clang arguments after --.")] = None,  # noqa: UP045
    json_output: JsonOption = False,
    timeout: Annotated[float, typer.Option(help="Seconds per tool run.")] = DEFAULT_TIMEOUT_S,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache.")] = False,
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
    with Evaluator(toolchain, store, timeout=timeout, backend=backend) as evaluator:
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
    markdown: Annotated[bool, typer.Option("--markdown", help="Print Markdown tables.")] = False,
    report: Annotated[Path, typer.Option(help="Where to write the HTML report of the run.")] = Path("demo-report.html"),
    k: KOption = 5,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Evaluate the built-in corpus at clang's -O0, -Oz and -O3, apply the shipped model in static and jit mode
    (each answer checked by running the program), print the tables and write an HTML report."""
    programs = demo_programs()
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(DEFAULT_MODEL_DIR, catalogue)
    with (
        Evaluator(toolchain, open_store(cache_dir), jobs=jobs or None, backend=backend) as evaluator,
        Progress(console=status_console, transient=True) as progress,
    ):
        comparisons = compare_many(evaluator, programs.values())
        task = progress.add_task("shipped model, static and jit", total=len(programs))
        choices = choose_for_corpus(evaluator, catalogue, model, sorted(programs.values()), k=k,
                                    on_program=lambda _: progress.advance(task))  # fmt: skip
    corpus = f"bench://demo-v1 ({len(programs)} programs)"
    tables = [corpus_rows(comparisons, corpus), choice_rows(choices)]
    sources = (("dataset", "bench://demo-v1"), ("toolchain", toolchain.identity), ("catalogue", catalogue.identity),
               ("model", model.identity))  # fmt: skip
    report.write_text(to_html(demo_report(corpus, comparisons, choices, sources, k), generated_now()))
    for table in tables:
        if markdown:
            print(to_markdown(table) + "\n")
        else:
            print_table(to_rich(table))
    counters = evaluator.counters
    status_console.print(
        f"[dim]{counters.evaluated} evaluated ({evaluator.backend.name} backend), {counters.cache_hits} from the "
        f"cache[/dim]\nreport: {report.resolve()}"
    )


@app.command("tune")
def tune_command(
    ctx: typer.Context,
    targets: Annotated[list[str], typer.Argument(help="Files, directories or bench:// URIs.")],
    budget: Annotated[int, typer.Option(help="Evaluations per program.")] = 200,
    seconds: Annotated[Optional[float], typer.Option(help="Time limit per program.")] = None,  # noqa: UP045
    patience: Annotated[Optional[int], typer.Option(help="Stop after N evaluations without gain.")] = None,  # noqa: UP045
    strategy: Annotated[str, typer.Option(help=f"One of {', '.join(STRATEGIES)}.")] = "local",
    objective: ObjectiveOption = "size=1",
    seed: Annotated[int, typer.Option(help="Random seed; same seed + same cache = same result.")] = 0,
    no_minimize: Annotated[bool, typer.Option("--no-minimize", help="Report the best list as found.")] = False,
    insertion: Annotated[bool, typer.Option(help="Also try inserting every pass while minimizing.")] = False,
    log: Annotated[Optional[Path], typer.Option(help="Write every trial to this JSONL file.")] = None,  # noqa: UP045
    output: OutputOption = None,
    csv_summary: Annotated[
        Optional[Path], typer.Option("--csv", help="Write a one-row-per-program CSV summary here.")  # noqa: UP045
    ] = None,
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    no_validate: NoValidateOption = False,
    data_dir: DataDirOption = None,
    run_programs: RunOption = False,
    run_args: RunArgsOption = "",
    inputs: InputsOption = None,
    perf_counter: PerfCounterOption = "auto",
    json_output: JsonOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Search for pass lists that beat -Oz on each program; report only lists that pass validation."""
    if strategy not in STRATEGIES:
        raise StitchoptError(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    if no_minimize:
        refuse_ignored(ctx, ("insertion",), "while minimizing (without --no-minimize)")
    _refuse_unused_validation(ctx, no_validate, validate)
    parsed_objective = parse_objective(objective)
    program_run = _program_run(ctx, run_programs, run_args, inputs, perf_counter, parsed_objective)
    paths = target_paths(targets)
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    with (
        Evaluator(toolchain, open_store(cache_dir), jobs=jobs or None, backend=backend, address=address) as evaluator,
        open(log, "w") if log else nullcontext() as trial_log,
        Progress(console=status_console, transient=True, disable=json_output) as progress,
    ):
        validation = None if no_validate else list_validation(
            evaluator, validate, limit=validate_limit, data_dir=data_dir
        )
        overall = progress.add_task(f"{len(paths)} program(s)", total=budget * len(paths))
        bars: dict[str, TaskID] = {}
        done: dict[str, int] = {}

        def show(run: TuningRun) -> None:
            """One bar per program with its best so far, and one for the whole run."""
            if run.program not in bars:
                bars[run.program] = progress.add_task(run.program, total=budget)
            done[run.program] = run.evaluations
            best = f"{run.program}: best {100 * (run.best_score - 1):+.2f}% vs -Oz"
            if run.suspicious:
                best += f", {run.suspicious} suspicious"
            progress.update(bars[run.program], completed=run.evaluations, description=best)
            progress.update(overall, completed=sum(done.values()))

        tuned = tune_programs(
            evaluator, catalogue, paths, strategy=strategy, objective=parsed_objective,
            budget=Budget(budget, seconds, patience), seed=seed, minimize_best=not no_minimize,
            insertion=insertion, trial_log=trial_log, on_progress=show, validation=validation, program_run=program_run,
        )
        record = run_record(evaluator, tuned, parsed_objective, strategy, catalogue)
    if output is not None:
        record.save(output)
    if csv_summary is not None:
        record.save_csv(csv_summary)
    _show_record(record, f"tune: {strategy}, {budget} evaluations, objective {objective}", json_output)


def _program_run(
    ctx: typer.Context, run_programs: bool, run_args: str, inputs: Path | None, counter: str, objective: Objective
) -> ProgramRun | None:
    """How --run runs each program; its options without --run (or a perf counter without perf) are refused."""
    if not run_programs:
        refuse_ignored(ctx, ("run_args", "inputs", "perf_counter"), "with --run")
        return None
    if not objective.needs_runtime:
        refuse_ignored(ctx, ("perf_counter",), "to an objective with a perf term")
    if counter not in COUNTERS:
        raise StitchoptError(f"unknown --perf-counter {counter!r}: use {', '.join(COUNTERS)}")
    return ProgramRun(tuple(shlex.split(run_args)), inputs, counter)


def _refuse_unused_validation(ctx: typer.Context, no_validate: bool, suites: list[str] | None) -> None:
    if no_validate:
        refuse_ignored(ctx, ("validate", "validate_limit", "data_dir"), "with validation (without --no-validate)")
    refuse_data_dir_without_humaneval(ctx, suites)


def _show_record(record: RunRecord, title: str, json_output: bool) -> None:
    if json_output:
        print(json.dumps([p.to_dict() for p in record.programs], indent=2))
        return
    print_table(to_rich(tuning_rows(record.programs, title)))
    for program in record.programs:
        console.print(f"[bold]{Path(program.program).stem}[/bold]: {program.replay}", highlight=False, soft_wrap=True)
    unvalidated = [p for p in record.programs if not p.validated]
    if unvalidated:
        status_console.print(f"[yellow]{len(unvalidated)} answer(s) NOT validated: size searches reward miscompiles; "
                             "check them with `stitchopt validate` before use.[/yellow]")  # fmt: skip
    for program in record.programs:
        if program.validation:
            status_console.print(f"[dim]{Path(program.program).stem}: {program.validation}[/dim]", highlight=False)


@app.command("broadcast")
def broadcast_command(
    ctx: typer.Context,
    record_path: Annotated[Path, typer.Argument(help="A run record written by `tune -o`.")],
    top: Annotated[int, typer.Option(help="How many of the most frequent best lists to try.")] = DEFAULT_TOP,
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    no_validate: NoValidateOption = False,
    data_dir: DataDirOption = None,
    run_programs: RunOption = False,
    run_args: RunArgsOption = "",
    inputs: InputsOption = None,
    perf_counter: PerfCounterOption = "auto",
    output: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "-o",
            "--output",
            help="Where to save the new run record (default: RUN.broadcast.json beside the input, numbered rather "
            "than overwrite a file).",
        ),
    ] = None,
    json_output: JsonOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Try the run's most frequent best lists on every program; each keeps any improvement."""
    _refuse_unused_validation(ctx, no_validate, validate)
    record = RunRecord.load(record_path)
    program_run = _program_run(ctx, run_programs, run_args, inputs, perf_counter, parse_objective(record.objective))
    toolchain = find_toolchain(llvm)
    with Evaluator(
        toolchain, open_store(cache_dir), jobs=jobs or None, backend=backend, address=address
    ) as evaluator:
        validation = None if no_validate else list_validation(
            evaluator, validate, limit=validate_limit, data_dir=data_dir
        )
        outcome = broadcast(evaluator, load_catalogue(toolchain), record, top, validation=validation,
                            program_run=program_run)  # fmt: skip
    destination = output or _beside(record_path)
    outcome.record.save(destination)
    status_console.print(f"broadcast {len(outcome.candidates)} list(s): {outcome.changed} of {len(record.programs)} "
                         f"best(s) changed; run record -> {destination}", highlight=False)  # fmt: skip
    _show_record(outcome.record, f"broadcast of {len(outcome.candidates)} lists", json_output)


def _beside(record_path: Path) -> Path:
    """`run.broadcast.json` beside `run.json` (else `run.broadcast-2.json`, ...): never overwrite a file, the
    input least of all (it is the only copy of what tune found)."""
    candidate, n = record_path.with_name(f"{record_path.stem}.broadcast{record_path.suffix}"), 1
    while candidate.exists():
        n += 1
        candidate = record_path.with_name(f"{record_path.stem}.broadcast-{n}{record_path.suffix}")
    return candidate


@app.command("pareto")
def pareto_command(
    trial_log: Annotated[Path, typer.Argument(help="A trial log written by `tune --log`.")],
    metrics: Annotated[str, typer.Option(help=f"Comma-separated, from: {', '.join(METRICS)}.")] = "size,compile-time",
) -> None:
    """The Pareto front of every program in a finished run, without re-running anything."""
    chosen = tuple(m.strip() for m in metrics.split(",") if m.strip())
    for program, front in fronts_from_log(trial_log, chosen).items():
        print_table(to_rich(pareto_rows(Path(program).stem, front)))


@app.command("minimize")
def minimize_command(
    file: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    passes: Annotated[str, typer.Option("--passes", "-p", help="A flat list of catalogue passes.")],
    objective: ObjectiveOption = "size=1",
    insertion: Annotated[bool, typer.Option(help="Also try inserting every pass before every position.")] = False,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Drop redundant passes, order the rest canonically (and optionally insert), never worsening the list."""
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    names = tuple(split_top_level(passes))
    pipeline_from_text(passes, catalogue)  # refuses unknown or excluded names
    if any(is_explicit_pipeline(name) for name in names):
        raise StitchoptError("minimize takes a flat list of catalogue passes, not a nested pipeline")
    parsed_objective = parse_objective(objective)
    with Evaluator(toolchain, open_store(cache_dir), backend=backend) as evaluator:
        module = load_module(toolchain, program_path(file))
        result = minimize(evaluator, module, names, catalogue, parsed_objective, insertion=insertion)
    status_console.print(
        f"{len(names)} -> {len(result.passes)} passes, objective {result.score:.4f} (-Oz = 1), "
        f"{result.evaluations} evaluations{'' if result.complete else ' (budget ran out)'}"
    )
    print(",".join(result.passes))


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
    llvm: LlvmOption = None,
) -> None:
    """Rank every unit and measure what static and jit builds of it will ask for, ahead of the build."""
    paths = target_paths(targets)
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir or DEFAULT_MODEL_DIR, catalogue)
    with (
        Evaluator(toolchain, open_store(cache_dir), jobs=jobs or None) as evaluator,
        Progress(console=status_console, transient=True) as progress,
    ):
        modules = [load_module(toolchain, path) for path in paths]
        task = progress.add_task("ranking", total=len(modules))
        report = warm_caches(evaluator, catalogue, model, modules, k=k, common=common,
                             on_unit=lambda done, _: progress.update(task, completed=done))  # fmt: skip
    status_console.print(
        f"{report.units} unit(s) ranked, {report.requests:,} compilations asked for, {report.compiled:,} not "
        f"cached before, {report.seconds:.1f} s; common lists: {len(report.common_lists)}",
        highlight=False,
    )


@cache_app.command("clear")
def cache_clear(cache_dir: CacheDirOption = None) -> None:
    """Delete the evaluation cache (also one written by an incompatible stitchopt)."""
    removed = remove_store((cache_dir or default_cache_dir()) / DB_NAME)
    status_console.print(f"removed {len(removed)} file(s)" + (f" from {removed[0].parent}" if removed else ""),
                         highlight=False)  # fmt: skip


def main() -> None:
    try:
        app()
    except StitchoptError as exc:
        print(f"stitchopt: error: {exc}", file=sys.stderr)
        sys.exit(2)
