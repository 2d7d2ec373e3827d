"""The lifting evaluation as a table: round trips, BLEU, exact matches, parse rate and edit distance per backend."""

from __future__ import annotations

from collections.abc import Sequence

from stitchopt.lifting.harness import LiftEvaluation
from stitchopt.reports.tables import Rows


def lift_rows(evaluations: Sequence[LiftEvaluation], title: str) -> Rows:
    rows = []
    for e in evaluations:
        trips = sum(r.round_trips for r in e.results)
        distance = sum(r.edit_distance for r in e.results) / len(e.results) if e.results else 1.0
        rows.append(
            [
                e.backend,
                str(len(e.results)),
                f"{trips} ({100 * trips / max(len(e.results), 1):.0f}%)",
                f"{e.bleu:.3f}",
                f"{100 * e.share('exact'):.1f}%",
                f"{100 * e.share('parses'):.0f}%",
                f"{distance:.3f}",
                str(e.too_long),
            ]
        )
    headers = ["backend", "inputs", "round trips", "BLEU", "exact match", "parses", "edit distance", "did not fit"]
    return Rows(title, headers, rows)
