"""`stitchopt validate`: judge a pass list on self-test suites, Csmith programs or the user's own program."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from stitchopt.cli.exit_codes import NEGATIVE
from stitchopt.cli.options import (
    EXE,
    CacheDirOption,
    DataDirOption,
    InputsOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    ValidateLimitOption,
    ValidateOption,
    console,
    open_store,
    output_option,
    passes_option,
    print_table,
    progress_bar,
    refuse_data_dir_without_humaneval,
    refuse_ignored,
    require_positive,
    run_arguments,
    run_option,
    status_console,
    suite_build_bar,
    writable_directory,
)
from stitchopt.datasets.benchmarks import program_path
from stitchopt.errors import InputError, StitchoptError
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import pipeline_from_text
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.tune.acceptance import suite_spec
from stitchopt.validate.runner import Validator
from stitchopt.validate.sandbox import Limits
from stitchopt.validate.selection import differential_suite, select_suite
from stitchopt.validate.session import validate_suites
from stitchopt.validate.suites import Suite
from stitchopt.validate.verdicts import ValidationReport, Verdict, VerdictStatus


def validate_command(
    ctx: typer.Context,
    program: Annotated[
        Optional[str],  # noqa: UP045  (a path or a bench:// URI, which a Path would turn into bench:/)
        typer.Argument(help="Your C/C++ program: compared with its -O0 and -O2 builds instead of a suite."),
    ] = None,
    passes: Annotated[
        str,
        passes_option(
            "Flat list 'sroa,instcombine' or a pipeline; nothing is put before it. Lists from tune, optimize and "
            "the models begin with always-inline; a bare label-pool list does not, and C++ programs may then fail "
            "to link (libc++'s always_inline functions left as calls)"
        ),
    ] = "",
    suites: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    seed: Annotated[int, typer.Option(min=0, help="First Csmith seed.")] = 1,
    run: Annotated[str, run_option("How PROGRAM runs (compared with its -O0 and -O2 builds)")] = "",
    inputs: InputsOption = None,
    data_dir: DataDirOption = None,
    reduce: Annotated[bool, typer.Option("--reduce", help="Shrink a failing list and write a reproducer.")] = False,
    reproducer: Annotated[Path, typer.Option(help="Where --reduce writes the reproducer directory.")] = Path(
        "stitchopt-reproducer"
    ),
    run_timeout: Annotated[float, typer.Option(help="Seconds each test program may run.")] = 10.0,
    show_passed: Annotated[bool, typer.Option("--show-passed", help="List passing programs too.")] = False,
    json_output: JsonOption = False,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the verdicts as JSON here (read by `stitchopt report validation`)."),
    ] = None,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Build and run test programs with a pass list (--validate suites, default humaneval, or PROGRAM); exit status
    0 only when every program passed, 1 when one failed."""
    if not passes:
        raise StitchoptError("give the pass list to validate with --passes, e.g. --passes 'default<Oz>'")
    if program is None:
        refuse_ignored(ctx, ("run", "inputs"), "to a PROGRAM (compared with its -O0 and -O2 builds)")
    else:
        refuse_ignored(ctx, ("suites", "validate_limit", "seed", "data_dir"), "to suites (without a PROGRAM)")
    refuse_data_dir_without_humaneval(ctx, suites)
    if "csmith" not in (suites or []):
        refuse_ignored(ctx, ("seed",), "to the csmith suite")
    if not reduce:
        refuse_ignored(ctx, ("reproducer",), "with --reduce")
    else:  # found out now, not after the validation ran
        writable_directory("--reproducer", reproducer)
    if json_output:
        refuse_ignored(ctx, ("show_passed",), "to the table (--json has every verdict)")
    require_positive("--run-timeout", run_timeout)
    run_args = run_arguments(run or EXE, inputs=True)
    toolchain = find_toolchain(llvm)
    pipeline = pipeline_from_text(passes, load_catalogue(toolchain))
    limits = Limits(wall_seconds=run_timeout, cpu_seconds=max(1, int(run_timeout)))
    with open_store(cache_dir) as store:
        validator = Validator(toolchain, store, jobs=jobs or None, limits=limits)
        own = None
        if program is not None:
            own = differential_suite(program_path(program, toolchain), run_args, inputs)
            _refuse_unjudgeable(validator, own)  # before the bars: a refusal is its one line
        with progress_bar(disable=json_output) as bar:
            if own is not None:
                chosen_suites = [own]
            else:
                chosen_suites = [
                    select_suite(
                        suite_spec(spec),
                        validator.builder,
                        limit=validate_limit,
                        seed=seed,
                        data_dir=data_dir,
                        jobs=validator.jobs,
                        progress=suite_build_bar(bar),
                    )
                    for spec in suites or ["humaneval"]
                ]

            def progress(suite: Suite) -> Callable[[Verdict], None]:
                task = bar.add_task(f"validating on {suite.name}", total=len(suite.programs))
                return lambda _verdict: bar.advance(task)

            outcomes = validate_suites(
                validator,
                chosen_suites,
                pipeline,
                reduce_into=reproducer if reduce else None,
                progress=progress,
                note=lambda text: status_console.print(f"[dim]{text}[/dim]", highlight=False),
            )
    entries = [outcome.to_dict() for outcome in outcomes]
    if output is not None:
        output.write_text(json.dumps(entries, indent=2) + "\n")
    if json_output:
        print(json.dumps(entries, indent=2))
    else:
        for outcome in outcomes:
            _show(outcome.report, show_passed)
    if any(outcome.report.failures for outcome in outcomes):
        raise typer.Exit(NEGATIVE)
    _refuse_verdictless([outcome.report for outcome in outcomes])
    if not all(outcome.report.passed for outcome in outcomes):
        raise typer.Exit(NEGATIVE)


def _refuse_verdictless(reports: Sequence[ValidationReport]) -> None:
    """A suite none of whose programs could be judged (each excluded) says nothing of the list: the user's to
    fix (exit 2), not a failure (exit 1); its verdicts are written and shown first."""
    for report in reports:
        if report.complete and not report.counted:
            excluded = report.excluded
            why = f"all {len(excluded)} excluded, e.g. {excluded[0].detail}" if excluded else "it has no programs"
            raise InputError(
                f"{report.suite}: no program could be judged ({why}): give programs that build and run alone at -O0"
            )


# What the user can do about a program that cannot be judged, by what its exclusion says (validate/builder.py).
_FIXES = {
    "does not link on its own": "validate a whole program: one file with a main that defines what it uses",
    "does not finish": "raise --run-timeout, or give it --inputs that it finishes on",
    "behave differently": "make its output depend on its input only (no addresses, times, random numbers or "
    "undefined behaviour)",
}


def _refuse_unjudgeable(validator: Validator, suite: Suite) -> None:
    """A program that no run of can be judged (each is excluded) is the user's to fix, not a list that failed:
    one line that says what to fix (exit 2), before any list is built."""
    validator.prepare(suite)  # every run's reference builds, at once (cached for the validation)
    reasons = [validator.builder.references(program).excluded for program in suite.programs]
    if not all(reasons):
        return
    reason = str(reasons[0])
    fix = next((fix for phrase, fix in _FIXES.items() if phrase in reason), "fix it so that it builds and runs")
    raise InputError(f"{suite.programs[0].name}: no list can be judged on it: {reason}; {fix}")


def _show(report: ValidationReport, show_passed: bool) -> None:
    shown = [v for v in report.verdicts if show_passed or v.status is not VerdictStatus.PASSED]
    if shown:
        table = Table(title=f"{report.suite}: {report.pipeline[:80]}")
        for column in ("program", "status", "detail"):
            table.add_column(column)
        for verdict in shown:
            style = {VerdictStatus.PASSED: "green", VerdictStatus.EXCLUDED: "dim"}.get(verdict.status, "red")
            table.add_row(verdict.program, f"[{style}]{verdict.status.value}[/{style}]", verdict.detail)
        print_table(table)
    console.print(("[green]" if report.passed else "[red]") + report.summary(), highlight=False)
