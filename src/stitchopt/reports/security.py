"""A detection study as a report (`stitchopt report detection study.json`): every row's test-split metrics,
the stitched rows against the best detector alone (relative changes, the design's claim is +22% accuracy and
-15% false positives), per-CWE tables and an F1 heatmap. Torch-free: it only reads a saved study."""

from __future__ import annotations

from pathlib import Path

from stitchopt.reports.document import Figure, Report, Section
from stitchopt.reports.sources import file_identity
from stitchopt.reports.svg import heatmap
from stitchopt.reports.tables import Rows
from stitchopt.security.results import Counts, DetectionReport, DetectionRow

METRICS = ("accuracy", "precision", "recall", "false-positive rate", "F1", "CWE accuracy")


def metrics(counts: Counts) -> list[float | None]:
    """The values of METRICS, in order (None where a denominator is 0)."""
    return [
        counts.accuracy,
        counts.precision,
        counts.recall,
        counts.false_positive_rate,
        counts.f1,
        counts.cwe_accuracy,
    ]


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _role(report: DetectionReport, row: DetectionRow) -> str:
    marks = [row.kind]
    if row.kind == "detector" and row.members[:1] == (report.best_detector,):
        marks.append("best on validation")
    if row.name == report.winner:
        marks.append("winner")
    return ", ".join(marks)


def overall_rows(report: DetectionReport) -> Rows:
    test = report.functions.get("test", {})
    rows = [
        [
            r.name,
            _role(report, r),
            str(r.overall.functions),
            *(_value(v) for v in metrics(r.overall)),
            _value(r.threshold),
            _value(r.validation_f1),
            f"{r.seconds:.1f}",
        ]
        for r in report.rows
    ]
    headers = ["row", "kind", "functions", *METRICS, "threshold", "validation F1", "training s"]
    title = f"Detection on the test split ({test.get('bad', 0)} bad, {test.get('good', 0)} good functions)"
    return Rows(title, headers, rows)


def per_cwe_rows(report: DetectionReport) -> Rows:
    rows = [
        [cwe, r.name, f"{c.tp + c.fn}/{c.fp + c.tn}", *(_value(v) for v in metrics(c))]
        for cwe in _cwes(report)
        for r in report.rows
        if (c := r.counts.get(cwe)) is not None
    ]
    return Rows("Per CWE (test split)", ["CWE", "row", "bad/good", *METRICS], rows)


def comparisons(report: DetectionReport) -> list[str]:
    """Stitched, control and anchor rows against the best detector alone (relative changes, as the design states
    its claim); each operating point against the analyzer whose false-positive rate it was set to."""
    best = next((r for r in report.rows if r.kind == "detector" and r.members[:1] == (report.best_detector,)), None)
    if best is None:
        return []
    anchors = {r.name: r for r in report.rows if r.kind == "anchor"}
    lines = []
    for row in report.rows:
        base = anchors.get(row.init) if row.kind == "operating point" else best
        if row.kind not in ("stitched", "control", "anchor", "operating point") or base is None:
            continue
        c, b = row.overall, base.overall
        lines.append(
            f"{row.name} vs {base.name}: accuracy {_relative(c.accuracy, b.accuracy)}, false-positive rate "
            f"{_relative(c.false_positive_rate, b.false_positive_rate)}, F1 {_difference(c.f1, b.f1)}"
        )
    return lines


def _relative(value: float | None, base: float | None) -> str:
    if value is None or base is None:
        return "-"
    if base == 0:
        return f"{value:.3f} (from 0)"
    return f"{100 * (value / base - 1):+.1f}% relative ({base:.3f} -> {value:.3f})"


def _difference(value: float | None, base: float | None) -> str:
    return "-" if value is None or base is None else f"{value - base:+.3f} ({base:.3f} -> {value:.3f})"


def _cwes(report: DetectionReport) -> list[str]:
    return sorted({cwe for r in report.rows for cwe in r.counts})


def _short(row: DetectionRow) -> str:
    """A label short enough for the heatmap (its data table keeps the full names)."""
    if row.kind == "anchor":
        return row.name
    receiver = row.members[0].split(":", 1)[-1].split("-", 1)[0]
    if row.kind == "operating point":
        return f"{receiver} @ {row.init}"
    if row.kind == "detector":
        return receiver
    added = "opt" if row.kind == "stitched" else f"{len(row.members) - 1} det"
    return f"{receiver}+{added} {row.init}"


def f1_heatmap(report: DetectionReport) -> Figure:
    cwes = _cwes(report)
    values = [[(c.f1 if (c := r.counts.get(cwe)) is not None else None) for cwe in cwes] for r in report.rows]
    svg = heatmap("F1 per CWE (test split)", [_short(r) for r in report.rows], cwes, values, diverging=False)
    data = Rows(
        "F1 per CWE (test split)",
        ["row", *cwes],
        [[r.name, *(_value(v) for v in row)] for r, row in zip(report.rows, values, strict=True)],
    )
    return Figure(svg, data, "Darker is better; grey: undefined (no bad function of that CWE and none called bad).")


def detection_sections(report: DetectionReport) -> list[Section]:
    functions = ", ".join(f"{split} {n['bad']} bad / {n['good']} good" for split, n in report.functions.items())
    notes = (
        f"Functions: {functions}. Thresholds, the best detector and the winner are chosen on the validation split; "
        "every number below is on the test split (families never seen in training).",
        f"Optimization experts: {report.optimization_model or 'none (detectors and control only)'}.",
        *comparisons(report),
    )
    return [
        Section("Vulnerability detection", notes, tables=(overall_rows(report),)),
        Section("Per CWE", (), (f1_heatmap(report),), (per_cwe_rows(report),)),
    ]


def detection_report(path: Path, report: DetectionReport) -> Report:
    return Report(
        "detection",
        "Vulnerability detection study",
        (("study", file_identity(path)),),
        tuple(detection_sections(report)),
    )
