"""`stitchopt tune | broadcast | pareto | minimize`: search for pass lists, share them, and shorten them."""

from __future__ import annotations

import json
import math
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import TaskID

from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    DataDirOption,
    FailIfNoGainOption,
    InputsOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    NoValidateOption,
    ObjectiveOption,
    PerfCounterOption,
    RunOption,
    ValidateLimitOption,
    ValidateOption,
    console,
    exit_if_no_gain,
    open_evaluator,
    output_option,
    parse_objective,
    passes_option,
    print_table,
    progress_bar,
    refuse_ignored,
    require_positive,
    run_arguments,
    status_console,
    target_paths,
    time_left,
    validation_choice,
    writable_file_output,
)
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import program_path
from stitchopt.errors import InputError, StitchoptError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import is_explicit_pipeline, pipeline_from_text, split_top_level
from stitchopt.reports.tables import pareto_rows, to_rich, tuning_rows
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import ProgramRun
from stitchopt.tune.broadcast import DEFAULT_TOP, broadcast
from stitchopt.tune.driver import Budget, TuningRun
from stitchopt.tune.minimize import minimize
from stitchopt.tune.pareto import METRICS, fronts_from_log
from stitchopt.tune.record import RunRecord
from stitchopt.tune.runtime import COUNTERS
from stitchopt.tune.session import TunedProgram, run_record, tune_programs
from stitchopt.tune.strategies import STRATEGIES
from stitchopt.tune.trial_log import new_run_id, trial_log_file


def _check_screen(margin: float | None, objective: Objective) -> None:
    """Screening compares code-size estimates: it needs a margin of 0 or more and a size-only objective."""
    if margin is None:
        return
    if not (math.isfinite(margin) and margin >= 0):
        raise InputError(f"--screen-margin {margin:g}: give a share of 0 or more (0.05 = 5% above the best)")
    if not objective.size_only:
        raise InputError("--screen-margin only applies to a size-only objective: drop it or the other terms")


def _check_screening_backend(evaluator: Evaluator, margin: float | None) -> None:
    """Only native workers estimate code size: a screen on another backend would be silently ignored."""
    if margin is not None and not evaluator.backend.screens:
        raise InputError(f"--screen-margin needs the native backend, not {evaluator.backend.name}: drop it")


def tune_command(
    ctx: typer.Context,
    targets: Annotated[list[str], typer.Argument(help="Files, directories or bench:// URIs.")],
    budget: Annotated[int, typer.Option(min=1, help="Evaluations per program.")] = 200,
    seconds: Annotated[Optional[float], typer.Option(help="Time limit per program.")] = None,  # noqa: UP045
    patience: Annotated[Optional[int], typer.Option(min=1, help="Stop after N evaluations without gain.")] = None,  # noqa: UP045
    screen_margin: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            help="Skip codegen of candidates whose code-size estimate is more than this share above the best's "
            "(size objective, native backend). Faster, but it can change answers: off by default."
        ),
    ] = None,
    strategy: Annotated[str, typer.Option(help=f"One of {', '.join(STRATEGIES)}.")] = "local",
    objective: ObjectiveOption = "size=1",
    seed: Annotated[int, typer.Option(min=0, help="Random seed; same seed + same cache = same result.")] = 0,
    no_minimize: Annotated[bool, typer.Option("--no-minimize", help="Report the best list as found.")] = False,
    insertion: Annotated[bool, typer.Option(help="Also try inserting every pass while minimizing.")] = False,
    log: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="Write every trial to this JSONL file (read by pareto and `report run --log`); it replaces an "
            "existing one only when the run finishes (a stopped run's trials: FILE.partial).",
            callback=writable_file_output,
        ),
    ] = None,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Where to save the run record (read by broadcast and `stitchopt report run`)."),
    ] = None,
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    no_validate: NoValidateOption = False,
    data_dir: DataDirOption = None,
    run: RunOption = "",
    inputs: InputsOption = None,
    perf_counter: PerfCounterOption = "auto",
    fail_if_no_gain: FailIfNoGainOption = False,
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
    validation = validation_choice(ctx, validate, validate_limit, data_dir, no_validate)
    require_positive("--seconds", seconds)
    parsed_objective = parse_objective(objective)
    _check_screen(screen_margin, parsed_objective)
    program_run = _program_run(ctx, run, inputs, perf_counter, parsed_objective)
    toolchain = find_toolchain(llvm)
    paths = target_paths(targets, toolchain)
    catalogue = load_catalogue(toolchain)
    run_id = new_run_id()  # in the trial log and the run record: `report run` checks that they belong together
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        _check_screening_backend(evaluator, screen_margin)  # before the log is opened
        with (
            trial_log_file(log) if log else nullcontext() as trial_log,
            progress_bar(disable=json_output) as progress,
        ):
            checks = validation.open(evaluator, progress)
            overall = progress.add_task(f"{len(paths)} program(s)", total=budget * len(paths))
            bars: dict[str, TaskID] = {}
            done: dict[str, int] = {}

            started = time.monotonic()
            answers: list[TunedProgram] = []

            def show(tuning: TuningRun) -> None:
                """One bar per program with its best so far, and one for the whole run."""
                if tuning.program not in bars:
                    bars[tuning.program] = progress.add_task(tuning.program, total=budget)
                done[tuning.program] = tuning.evaluations
                best = f"{tuning.program}: best {100 * (tuning.best_score - 1):+.2f}% vs -Oz"
                if tuning.suspicious:
                    best += f", {tuning.suspicious} suspicious"
                progress.update(bars[tuning.program], completed=tuning.evaluations, description=best)
                progress.update(overall, completed=sum(done.values()))

            def answered(answer: TunedProgram) -> None:
                """Off a terminal (a log of a long run), where no bar shows: one line per program's answer."""
                answers.append(answer)
                if not status_console.is_terminal:
                    left = time_left(time.monotonic() - started, len(answers), len(paths))
                    status_console.print(
                        f"tune: {len(answers)}/{len(paths)} programs, {answer.path.name}: {_answer_text(answer)}, "
                        f"{left}",
                        highlight=False,
                    )

            try:
                tune_programs(  # its answers are `answers`, heard one by one
                    evaluator,
                    catalogue,
                    paths,
                    strategy=strategy,
                    objective=parsed_objective,
                    budget=Budget(budget, seconds, patience, screen_margin),
                    seed=seed,
                    minimize_best=not no_minimize,
                    insertion=insertion,
                    trial_log=trial_log,
                    run_id=run_id,
                    on_progress=show,
                    on_answer=answered,
                    validation=checks,
                    program_run=program_run,
                )
            except (Exception, KeyboardInterrupt):
                if answers and output is not None:  # the programs finished before the failure are kept
                    run_record(evaluator, answers, parsed_objective, strategy, catalogue, run_id).save(output)
                    status_console.print(f"tune: the {len(answers)} finished program(s) are in {output}")
                raise
            record = run_record(evaluator, answers, parsed_objective, strategy, catalogue, run_id)
    if output is not None:
        record.save(output)
    _show_record(record, f"tune: {strategy}, {budget} evaluations, objective {objective}", json_output)
    exit_if_no_gain(fail_if_no_gain, _beats_oz(record))


def _program_run(
    ctx: typer.Context, run: str, inputs: Path | None, counter: str, objective: Objective
) -> ProgramRun | None:
    """How --run runs each program; its options without --run (or a perf counter without perf) are refused."""
    if not run:
        refuse_ignored(ctx, ("inputs", "perf_counter"), "with --run")
        return None
    if not objective.needs_runtime:
        refuse_ignored(ctx, ("perf_counter",), "to an objective with a perf term")
    if counter not in COUNTERS:
        raise StitchoptError(f"unknown --perf-counter {counter!r}: use {', '.join(COUNTERS)}")
    return ProgramRun(run_arguments(run, inputs=True), inputs, counter)


def _answer_text(answer: TunedProgram) -> str:
    """`-Oz kept`, or the answer's size against -Oz's."""
    oz, size = answer.run.oz.size_bytes, answer.result.size_bytes
    if answer.passes is None:
        return "-Oz kept"
    return f"{100 * (size / oz - 1):+.2f}% size vs -Oz" if oz and size is not None else "a list"


def _beats_oz(record: RunRecord) -> bool:
    """Whether some program's answer is a list rather than -Oz (an answer is a list only where it beat -Oz)."""
    return any(program.passes is not None for program in record.programs)


def _show_record(record: RunRecord, title: str, json_output: bool) -> None:
    if json_output:
        print(json.dumps([p.to_dict() for p in record.programs], indent=2))
        return
    print_table(to_rich(tuning_rows(record.programs, title)))
    for program in record.programs:
        console.print(f"[bold]{Path(program.program).stem}[/bold]: {program.replay}", highlight=False, soft_wrap=True)
    unvalidated = [p for p in record.programs if not p.validated and p.passes is not None]  # -Oz is clang's own
    if unvalidated:
        status_console.print(
            f"[yellow]{len(unvalidated)} answer(s) NOT validated: size searches reward miscompiles; "
            "check them with `stitchopt validate` before use.[/yellow]"
        )
    for program in record.programs:
        if program.validation:
            status_console.print(f"[dim]{Path(program.program).stem}: {program.validation}[/dim]", highlight=False)


def broadcast_command(
    ctx: typer.Context,
    record_path: Annotated[Path, typer.Argument(help="A run record written by `tune -o`.")],
    top: Annotated[int, typer.Option(min=1, help="How many of the most frequent best lists to try.")] = DEFAULT_TOP,
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    no_validate: NoValidateOption = False,
    data_dir: DataDirOption = None,
    run: RunOption = "",
    inputs: InputsOption = None,
    perf_counter: PerfCounterOption = "auto",
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option(
            "Where to save the new run record (default: RUN.broadcast.json beside the input, numbered "
            "rather than overwrite a file)."
        ),
    ] = None,
    fail_if_no_gain: FailIfNoGainOption = False,
    json_output: JsonOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Try the run's most frequent best lists on every program; each keeps any improvement."""
    validation = validation_choice(ctx, validate, validate_limit, data_dir, no_validate)
    record = RunRecord.load(record_path)
    program_run = _program_run(ctx, run, inputs, perf_counter, parse_objective(record.objective))
    toolchain = find_toolchain(llvm)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        outcome = broadcast(
            evaluator,
            load_catalogue(toolchain),
            record,
            top,
            validation=validation.open(evaluator),
            program_run=program_run,
        )
    destination = output or _beside(record_path)
    outcome.record.save(destination)
    status_console.print(
        f"broadcast {len(outcome.candidates)} list(s): {outcome.changed} of {len(record.programs)} "
        f"best(s) changed; run record -> {destination}",
        highlight=False,
    )
    _show_record(outcome.record, f"broadcast of {len(outcome.candidates)} lists", json_output)
    exit_if_no_gain(fail_if_no_gain, _beats_oz(outcome.record))


def _beside(record_path: Path) -> Path:
    """`run.broadcast.json` beside `run.json` (else `run.broadcast-2.json`, ...): never overwrite a file, the
    input least of all (it is the only copy of what tune found)."""
    candidate, n = record_path.with_name(f"{record_path.stem}.broadcast{record_path.suffix}"), 1
    while candidate.exists():
        n += 1
        candidate = record_path.with_name(f"{record_path.stem}.broadcast-{n}{record_path.suffix}")
    return candidate


def pareto_command(
    trial_log: Annotated[Path, typer.Argument(help="A trial log written by `tune --log`.")],
    metrics: Annotated[str, typer.Option(help=f"Comma-separated, from: {', '.join(METRICS)}.")] = "size,compile-time",
) -> None:
    """The Pareto front of every program in a finished run, without re-running anything."""
    chosen = tuple(m.strip() for m in metrics.split(",") if m.strip())
    for program, front in fronts_from_log(trial_log, chosen).items():
        print_table(to_rich(pareto_rows(Path(program).stem, front)))


def minimize_command(
    file: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    passes: Annotated[str, passes_option("A flat list of catalogue passes (no nested pipeline)")],
    objective: ObjectiveOption = "size=1",
    insertion: Annotated[bool, typer.Option(help="Also try inserting every pass before every position.")] = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Drop redundant passes, order the rest canonically (and optionally insert), never worsening the list."""
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    names = tuple(split_top_level(passes))
    pipeline_from_text(passes, catalogue)  # refuses unknown or excluded names
    if is_explicit_pipeline(passes):
        raise StitchoptError("minimize takes a flat list of catalogue passes, not a nested pipeline")
    parsed_objective = parse_objective(objective)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        module = load_module(toolchain, program_path(file, toolchain))
        result = minimize(evaluator, module, names, catalogue, parsed_objective, insertion=insertion)
    status_console.print(
        f"{len(names)} -> {len(result.passes)} passes, objective {result.score:.4f} (-Oz = 1), "
        f"{result.evaluations} evaluations{'' if result.complete else ' (budget ran out)'}"
    )
    print(",".join(result.passes))
