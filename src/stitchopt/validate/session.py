"""`validate` as a library call: a pass list judged on several suites in turn, each failure reduced to a
reproducer when asked, and the verdicts as the JSON that `stitchopt report validation` reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stitchopt.validate.reduce import reduce_failure, write_reproducer
from stitchopt.validate.runner import Progress, Validator
from stitchopt.validate.suites import Suite
from stitchopt.validate.verdicts import ValidationReport

REPRODUCER_KEY = "reproducer"  # next to a failing suite's verdicts: the directory `--reduce` wrote


@dataclass(frozen=True)
class SuiteOutcome:
    report: ValidationReport
    reproducer: Path | None = None  # where the reduced failure was written

    def to_dict(self) -> dict[str, Any]:
        extra = {} if self.reproducer is None else {REPRODUCER_KEY: str(self.reproducer)}
        return {**self.report.to_dict(), **extra}


def validate_suites(
    validator: Validator,
    suites: Sequence[Suite],
    pipeline: str,
    *,
    reduce_into: Path | None = None,
    progress: Callable[[Suite], Progress | None] = lambda _suite: None,
    note: Callable[[str], None] = lambda _text: None,
) -> list[SuiteOutcome]:
    """Each suite's verdicts; with `reduce_into`, a failing suite's list is shrunk and its reproducer written
    there (`note` says what it was reduced to, and which programs were discarded while making a suite)."""
    outcomes = []
    for suite in suites:
        for discarded in suite.discarded:
            note(f"discarded {discarded}")
        report = validator.validate(suite, pipeline, progress=progress(suite))
        reproducer = None
        if reduce_into is not None and report.failures:
            reduction = reduce_failure(validator, report, suite.programs)
            write_reproducer(validator, reduction, reduce_into)
            reproducer = reduce_into.resolve()
            note(
                f"reduced to {reduction.pipeline!r} on {reduction.program.name} ({reduction.tests} builds); "
                f"reproducer in {reduce_into}/"
            )
        outcomes.append(SuiteOutcome(report, reproducer))
    return outcomes
