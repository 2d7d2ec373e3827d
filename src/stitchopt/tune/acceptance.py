"""How the autotuner keeps miscompiles out of its answers.

Guards (cheap, per program) run on every candidate that would become a best and on every change the
minimizer keeps; a candidate that fails one is logged as suspicious and scored as a failure, so search never
climbs from it. Before a list is reported it is fully validated (PassListEval on the chosen suites, stopping
at the first failing program); when it fails, the next best list found is tried, and -Oz is the last resort.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from stitchopt.core import IRModule
from stitchopt.datasets.demo import demo_directory
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.toolchain.frontend import is_source
from stitchopt.validate.csmith import BuildProgress
from stitchopt.validate.guards import Guard
from stitchopt.validate.runner import Validator
from stitchopt.validate.selection import check_run_inputs, differential_suite, select_suite
from stitchopt.validate.suites import Suite, humaneval_path

GuardCheck = Callable[[str], list[str]]  # pipeline -> reasons to distrust it (empty: fine)


def program_guard(evaluator: Evaluator, module: IRModule, self_check: ListValidation | None = None) -> GuardCheck:
    """The guards for `module`, comparing with -Oz on it, then (when given) `self_check`: the program itself
    run against its -O0/-O2 builds, which costs one build and run and catches what the IR guards cannot.
    Answers are remembered per pipeline; the guards' own summaries (the module and -Oz on it) are made on the
    first question, so a program whose candidates never beat -Oz costs nothing. When they cannot be made (opt
    fails or times out on the module or on -Oz), no list can be trusted and each is refused with that reason:
    the program keeps -Oz."""
    answers: dict[str, list[str]] = {}
    guards: list[Guard | str] = []  # the guard, or why it could not be made

    def check(pipeline: str) -> list[str]:
        if not guards:
            oz = evaluator.baselines["Oz"]
            try:
                guards.append(Guard(evaluator.toolchain, module, oz.options, oz.pipeline, timeout=evaluator.timeout))
            except InputError as exc:
                guards.append(str(exc))
        if isinstance(guards[0], str):
            return [guards[0]]
        if pipeline not in answers:
            reasons = guards[0].check(pipeline)
            if not reasons and self_check is not None:
                verified = self_check.check(pipeline)
                reasons = [] if verified.passed else [verified.note]
            answers[pipeline] = reasons
        return answers[pipeline]

    return check


def self_check_for(
    evaluator: Evaluator, path: Path, program_run: ProgramRun | None, validation: ListValidation | None = None
) -> ListValidation | None:
    """The program itself as a one-suite validation (sharing `validation`'s validator when given), when it is a
    C/C++ source that we are allowed to run."""
    if program_run is None or not is_source(path):
        return None
    if validation is not None:
        validator = validation.validator
    else:
        oz = evaluator.baselines["Oz"]
        validator = Validator(evaluator.toolchain, evaluator.store, options=oz.options, jobs=evaluator.jobs)
    return ListValidation(validator, (differential_suite(path, program_run.args, program_run.inputs),))


@dataclass(frozen=True)
class ProgramRun:
    """How to run a tuned program to check its answer (and time it for the perf objective): arguments
    (`{input}` = each input file), inputs, and the runtime counter (auto, instructions or seconds)."""

    args: tuple[str, ...] = ()
    inputs: Path | None = None
    counter: str = "auto"

    def __post_init__(self) -> None:
        check_run_inputs(self.args, self.inputs)  # refused now, not after the validation suites are built


def validation_for(
    validation: ListValidation | None, path: Path, program_run: ProgramRun | None
) -> ListValidation | None:
    """`validation`, plus the program itself run differentially (vs its -O0/-O2 builds) when asked and a source."""
    if validation is None or program_run is None or not is_source(path):
        return validation
    return validation.including(differential_suite(path, program_run.args, program_run.inputs))


@dataclass(frozen=True)
class Verified:
    passed: bool
    note: str  # what was run and, on failure, where it failed


@dataclass(frozen=True)
class ListValidation:
    """Full validation of final lists: every suite must pass. Verdicts are cached, so a list that several
    programs share (and broadcast candidates) is validated once."""

    validator: Validator
    suites: tuple[Suite, ...]

    def check(self, pipeline: str) -> Verified:
        for suite in self.suites:
            report = self.validator.validate(suite, pipeline, fail_fast=True)
            if not report.passed:
                failure = report.failures[0] if report.failures else None
                where = f"{failure.program} {failure.status.value}" if failure else "no program could be judged"
                return Verified(False, f"failed {suite.name}: {where}")
        return Verified(True, f"passed {self.describe()}")

    def including(self, suite: Suite) -> ListValidation:
        """The same validation plus one more suite, e.g. the tuned program itself run differentially."""
        return replace(self, suites=(*self.suites, suite))

    def describe(self) -> str:
        return " + ".join(f"{suite.name} ({len(suite.programs)} programs)" for suite in self.suites)


DEMO_SUITE = "demo"  # the built-in self-checking C programs (datasets/demo_v1): a suite every install has


def suite_spec(spec: str) -> str:
    """A suite as `validate.selection` reads it: `demo` is the built-in programs' directory."""
    return str(demo_directory()) if spec == DEMO_SUITE else spec


def training_suites(data_dir: Path | None = None, note: Callable[[str], None] | None = None) -> list[str]:
    """What a model's lists are validated on unless told: `default_suites` and the demo programs, which caught
    lists that pass HumanEval-X and still break real C (docs/results.md, "Lists that break the demo programs")."""
    return [*default_suites(data_dir, note), DEMO_SUITE]


def default_suites(data_dir: Path | None = None, note: Callable[[str], None] | None = None) -> list[str]:
    """HumanEval-X when its data is found (LLM Compiler's PassListEval), else Csmith when installed; `note` hears
    which suite was chosen instead of HumanEval-X and why (building it takes a while the first time)."""
    try:
        humaneval_path(data_dir)
        return ["humaneval"]
    except InputError as missing:
        if shutil.which("csmith") is not None:
            if note is not None:
                note(
                    f"validating on Csmith programs instead of HumanEval-X ({missing}); building them takes a minute "
                    "or more the first time, then they are cached"
                )
            return ["csmith"]
    raise InputError(
        "no validation suite available: set STITCHOPT_DATA to the HumanEval-X data, install csmith, "
        "pass --validate demo|DIR|FILE.jsonl, or opt out with --no-validate"
    )


def list_validation(
    evaluator: Evaluator,
    specs: Sequence[str] | None = None,
    *,
    limit: int | None = None,
    data_dir: Path | None = None,
    note: Callable[[str], None] | None = None,
    progress: BuildProgress | None = None,
) -> ListValidation:
    """Validation with the evaluator's toolchain, cache and -Oz options, on `specs` (default_suites if None, which
    tells `note` when it falls back to Csmith); `progress` follows the building of a Csmith suite."""
    validator = Validator(
        evaluator.toolchain, evaluator.store, options=evaluator.baselines["Oz"].options, jobs=evaluator.jobs
    )
    chosen = list(specs) if specs else default_suites(data_dir, note)
    suites = tuple(
        select_suite(
            suite_spec(spec), validator.builder, limit=limit, data_dir=data_dir, jobs=validator.jobs, progress=progress
        )
        for spec in chosen
    )
    return ListValidation(validator, suites)
