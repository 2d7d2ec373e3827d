"""A stitching study as report sections (`stitchopt stitch inspect`, and the model report when a study is
given): the stitching penalty of every pair, the ensemble curve, the transport plans between hidden spaces and
the experts. Torch-free: it only reads a saved study."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stitchopt.models.ranker import geomean_change
from stitchopt.reports.document import Figure, Report, Section
from stitchopt.reports.sources import file_identity
from stitchopt.reports.stitching import comparisons, curve_rows, expert_rows
from stitchopt.reports.svg import heatmap, line_chart
from stitchopt.reports.tables import Rows
from stitchopt.stitching.results import INITIALIZATIONS, PairAlignment, StudyReport


def stitching_sections(report: StudyReport, exclude: str | None = None) -> list[Section]:
    names = [e.name for e in report.experts if not e.name.startswith("ranker")]
    penalties = [figure for init in INITIALIZATIONS if (figure := _penalty_matrix(report, names, init))]
    return [
        Section("Stitching study", tuple(comparisons(report)), tables=(expert_rows(report, exclude),)),
        Section(
            "Stitching penalty (held-out loss of A -> B minus B's own)",
            (
                "Rows: A (whose encoder is used); columns: B (whose head predicts). Blue: A's hidden space serves "
                "B's head better than B's own; red: worse.",
            ),
            tuple(penalties),
        ),
        Section("Stitched ensembles", (), _curve(report), (curve_rows(report, exclude),)),
        Section(
            "Optimal-transport plans between hidden spaces (training programs)",
            (
                "Each plan summed over blocks of units; a bright diagonal would mean units that match one to one "
                "(experts trained from different seeds order their units arbitrarily, so a match is any "
                "permutation).",
            ),
            tuple(_plan(a) for a in report.alignments),
        ),
    ]


def stitching_report(path: Path, report: StudyReport, exclude: str | None = None) -> Report:
    return Report(
        "stitching", "Stitching study", (("study", file_identity(path)),), tuple(stitching_sections(report, exclude))
    )


def _penalty_matrix(report: StudyReport, names: list[str], init: str) -> Figure | None:
    penalties = {(p.source, p.target): p.penalty for p in report.pairs if p.init == init}
    if not penalties:
        return None
    matrix = [[penalties.get((source, target)) for target in names] for source in names]
    svg = heatmap(f"layer: {init}", names, names, matrix)
    data = Rows(
        f"Stitching penalty, layer {init}",
        ["A (encoder)", *names],
        [
            [source, *("-" if v is None else f"{v:+.4f}" for v in row)]
            for source, row in zip(names, matrix, strict=True)
        ],
    )
    return Figure(svg, data)


def _curve(report: StudyReport) -> tuple[Figure, ...]:
    """Validation and held-out change (static + backup) against the number of stitched experts."""
    if not report.curve:
        return ()
    splits = {"validation": [c.validation for c in report.curve], "held out": [c.held_out for c in report.curve]}
    series = {
        name: [(float(k + 1), 100 * geomean_change(np.array(choices))) for k, choices in enumerate(per_k)]
        for name, per_k in splits.items()
    }
    svg = line_chart(
        "Ensemble size against geomean vs -Oz",
        series,
        x_label="experts stitched (k)",
        y_label="% vs -Oz (lower is better)",
        integer_x=True,
    )
    rows = [
        [f"{k:.0f}", f"{v:+.2f}", f"{h:+.2f}"]
        for (k, v), (_, h) in zip(series["validation"], series["held out"], strict=True)
    ]
    return (Figure(svg, Rows("Ensemble curve", ["k", "validation %", "held out %"], rows)),)


def _plan(alignment: PairAlignment) -> Figure:
    plan = alignment.plan
    blank = [""] * len(plan)
    svg = heatmap(
        f"{alignment.source} -> {alignment.target}",
        blank,
        [""] * len(plan[0]) if plan else [],
        plan,
        diverging=False,
        annotate=False,
    )
    caption = (
        f"{alignment.source} (rows) -> {alignment.target} (columns): transport cost "
        f"{alignment.transport_cost:.3f}, matched units' mean correlation {alignment.matched_correlation:.2f}, "
        f"{1000 * alignment.seconds:.0f} ms"
    )
    data = Rows(
        f"Transport plan {alignment.source} -> {alignment.target} (block sums)",
        ["block", *(str(j) for j in range(len(plan[0]) if plan else 0))],
        [[str(i), *(f"{v:.3g}" for v in row)] for i, row in enumerate(plan)],
    )
    return Figure(svg, data, caption)
