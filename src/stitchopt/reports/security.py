"""A detection study as a report (`stitchopt report detection study.json`): every row's test-split metrics,
the stitched rows against the best detector alone (relative changes, the design's claim is +22% accuracy and
-15% false positives), per-CWE tables and an F1 heatmap. Torch-free: it only reads a saved study."""

from __future__ import annotations

from pathlib import Path

from stitchopt.reports.document import Figure, Report, Section
from stitchopt.reports.sources import file_identity
from stitchopt.reports.svg import heatmap
from stitchopt.reports.tables import Rows
from stitchopt.vulnerability.results import Counts, DetectionReport, DetectionRow

METRICS = ("accuracy", "precision", "recall", "false-positive rate", "F1", "CWE accuracy")
METRIC_HEADERS = ("acc", "prec", "recall", "FPR", "F1", "CWE acc")  # METRICS as terminal columns
METRICS_CAPTION = (
    "acc: accuracy; prec: precision; FPR: false-positive rate; CWE acc: bad functions whose CWE is named right. "
    "Rows: a detector by the representation it reads; +opt: the optimization experts stitched in; +N det: N other "
    "detectors stitched in (the control); lstsq, ot: how the stitching layers start; @ X: the best detector at "
    "X's false-positive rate on validation (full names in the study's JSON)."
)


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


def _chosen(report: DetectionReport, row: DetectionRow) -> str:
    marks = []
    if row.kind == "detector" and row.members[:1] == (report.best_detector,):
        marks.append("best")
    if row.name == report.winner:
        marks.append("winner")
    return ", ".join(marks)


def _metric_rows(title: str, rows: list[tuple[DetectionRow, Counts]], caption: str = "") -> Rows:
    return Rows(
        title,
        ["row", *METRIC_HEADERS],
        [[short_name(row), *(_value(v) for v in metrics(counts))] for row, counts in rows],
        caption,
    )


def overall_rows(report: DetectionReport) -> list[Rows]:
    """Every row's test-split metrics, and how each row was chosen on validation: two tables that fit a terminal."""
    test = report.functions.get("test", {})
    title = f"Detection on the test split ({test.get('bad', 0)} bad, {test.get('good', 0)} good functions)"
    choices = Rows(
        "Choices on the validation split",
        ["row", "chosen", "threshold", "val F1", "train s"],
        [
            [short_name(r), _chosen(report, r), _value(r.threshold), _value(r.validation_f1), f"{r.seconds:.1f}"]
            for r in report.rows
        ],
        "best: the detector with the best validation F1 (the receiver of every stitched row); winner: the row with "
        "the best validation F1 (what a saved model keeps); threshold: the risk from which a function is called bad",
    )
    return [_metric_rows(title, [(r, r.overall) for r in report.rows], METRICS_CAPTION), choices]


def per_cwe_rows(report: DetectionReport) -> list[Rows]:
    """One table per CWE, shaped like the overall one."""
    tables = []
    for cwe in _cwes(report):
        found = [(r, c) for r in report.rows if (c := r.counts.get(cwe)) is not None]
        bad, good = (found[0][1].tp + found[0][1].fn, found[0][1].fp + found[0][1].tn) if found else (0, 0)
        tables.append(_metric_rows(f"{cwe} (test split: {bad} bad, {good} good functions)", found))
    return tables


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


def short_name(row: DetectionRow) -> str:
    """A row's name short enough for a terminal table or the heatmap (METRICS_CAPTION says how to read it)."""
    if row.kind == "anchor":
        return row.name
    receiver = row.members[0].split(":", 1)[-1].split("-", 1)[0]
    if row.kind == "operating point":
        return f"{receiver} @ {row.init}"
    if row.kind == "detector":
        return receiver
    added = "opt" if row.kind == "stitched" else f"{len(row.members) - 1} det"
    return f"{receiver} +{added} {row.init}"


def f1_heatmap(report: DetectionReport) -> Figure:
    cwes = _cwes(report)
    values = [[(c.f1 if (c := r.counts.get(cwe)) is not None else None) for cwe in cwes] for r in report.rows]
    svg = heatmap("F1 per CWE (test split)", [short_name(r) for r in report.rows], cwes, values, diverging=False)
    data = Rows(
        "F1 per CWE (test split)",
        ["row", *cwes],
        [[short_name(r), *(_value(v) for v in row)] for r, row in zip(report.rows, values, strict=True)],
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
        Section("Vulnerability detection", notes, tables=tuple(overall_rows(report))),
        Section("Per CWE", (), (f1_heatmap(report),), tuple(per_cwe_rows(report))),
    ]


def detection_report(path: Path, report: DetectionReport) -> Report:
    return Report(
        "detection",
        "Vulnerability detection study",
        (("study", file_identity(path)),),
        tuple(detection_sections(report)),
    )
