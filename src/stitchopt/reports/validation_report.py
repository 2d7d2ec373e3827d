"""The report of validation runs (`stitchopt validate ... -o validation.json`): verdicts per suite, the failing
programs (miscompiles first), and links to the reproducers `--reduce` wrote."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError
from stitchopt.reports.document import Figure, Link, Report, Section
from stitchopt.reports.sources import file_identity
from stitchopt.reports.svg import BAD, GOOD, NEUTRAL, bar_chart
from stitchopt.reports.tables import Rows
from stitchopt.validate.session import REPRODUCER_KEY
from stitchopt.validate.verdicts import ValidationReport, VerdictStatus


def load_validation(path: Path) -> list[tuple[ValidationReport, str | None]]:
    """Each report in the file with the reproducer directory written for it, if any."""
    try:
        data: list[dict[str, Any]] = json.loads(path.read_text())
        if not isinstance(data, list):
            raise ValueError("expected a list of suite reports")
        return [(ValidationReport.from_dict(entry), entry.get(REPRODUCER_KEY)) for entry in data]
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such validation file (write one with `stitchopt validate ... -o FILE`)") from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a stitchopt validation file ({exc})") from exc


def _colour(status: str) -> str:
    return GOOD if status == VerdictStatus.PASSED.value else NEUTRAL if status == VerdictStatus.EXCLUDED.value else BAD


def suite_section(report: ValidationReport, reproducer: str | None, base: Path) -> Section:
    counts = Counter(v.status.value for v in report.verdicts)
    statuses = [s.value for s in VerdictStatus if counts[s.value]]
    chart = bar_chart(
        f"{report.suite}: verdicts",
        statuses,
        [float(counts[s]) for s in statuses],
        y_label="programs",
        colours=[_colour(s) for s in statuses],
    )
    data = Rows(f"{report.suite}: verdicts", ["status", "programs"], [[s, str(counts[s])] for s in statuses])
    failures = Rows(
        f"{report.suite}: failing programs (miscompiles first)",
        ["program", "status", "detail"],
        [[v.program, v.status.value, v.detail] for v in report.failures],
    )
    notes = [report.summary(), f"pipeline: {report.pipeline}"]
    if not report.complete:
        notes.append("Stopped at the first failure (fail-fast): the other programs were not run.")
    links: tuple[Link, ...] = ()
    if reproducer is not None:
        href = os.path.relpath((Path(reproducer) / "README.md").resolve(), base.resolve())
        links = (Link(f"reproducer: {reproducer}", href),)
    return Section(
        f"Suite: {report.suite}", tuple(notes), (Figure(chart, data),), (failures,) if report.failures else (), links
    )


def validation_report(files: Sequence[Path], base: Path) -> Report:
    """`base`: the directory the report is written to, so that links to reproducers are relative to it."""
    entries = [(path, report, reproducer) for path in files for report, reproducer in load_validation(path)]
    if not entries:
        raise InputError("these validation files hold no reports")
    sources = [("validation", file_identity(path)) for path in files]
    sources += [("toolchain", " | ".join(sorted({r.toolchain for _, r, _ in entries})))]
    summary = Rows(
        "All suites",
        ["suite", "verdict", "programs", "failing", "seconds", "pipeline"],
        [
            [
                r.suite,
                "passed" if r.passed else "FAILED",
                str(len(r.verdicts)),
                str(len(r.failures)),
                f"{r.seconds:.1f}",
                r.pipeline,
            ]
            for _, r, _ in entries
        ],
    )
    sections = [Section("Summary", tables=(summary,))]
    sections += [suite_section(report, reproducer, base) for _, report, reproducer in entries]
    passed = sum(r.passed for _, r, _ in entries)
    return Report(
        "validation", f"Validation: {passed} of {len(entries)} suite runs passed", tuple(sources), tuple(sections)
    )
