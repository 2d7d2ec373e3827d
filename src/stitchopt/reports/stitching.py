"""Tables of the stitching study: experts, every stitched pair, the ensemble curve; and its JSON record.

Rows keep each program's result, so every table can also show the held-out score without one package (numpy's
few very large wins can carry a geomean over a few dozen programs).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from stitchopt.errors import InputError
from stitchopt.models.ranker import geomean_change
from stitchopt.reports.tables import Rows
from stitchopt.stitching.results import (
    Choices,
    CurveRow,
    ExpertRow,
    PairAlignment,
    PairRow,
    StudyReport,
    paired_difference,
)


def _pct(values: Choices, packages: tuple[str, ...] | None = None, exclude: str | None = None) -> str:
    kept = [v for i, v in enumerate(values) if packages is None or packages[i] != exclude]
    return f"{100 * geomean_change(np.array(kept)):+.2f}%" if kept else "-"


class _Columns:
    """The score columns every table shares: validation, held out, held out without `exclude`."""

    def __init__(self, report: StudyReport, exclude: str | None) -> None:
        self.report, self.exclude = report, exclude

    def headers(self, validation: bool = True) -> list[str]:
        names = ["validation (static + backup)"] if validation else []
        names.append("held out (static + backup)")
        return names + ([f"held out without {self.exclude}"] if self.exclude else [])

    def values(self, held_out: Choices, validation: Choices | None = None) -> list[str]:
        cells = [] if validation is None else [_pct(validation)]
        cells.append(_pct(held_out))
        if self.exclude:
            cells.append(_pct(held_out, self.report.held_out_packages, self.exclude))
        return cells


def expert_rows(report: StudyReport, exclude: str | None = None) -> Rows:
    columns = _Columns(report, exclude)
    rows = [
        [e.name, *columns.values(e.held_out, e.validation), f"{e.held_out_loss:.4f}", str(e.epochs), f"{e.seconds:.1f}"]
        for e in report.experts
    ]
    rows.append(["every coreset list (oracle)", "", *columns.values(report.oracle), "", "", ""])
    headers = ["expert", *columns.headers(), "held-out loss", "epochs", "training s"]
    return Rows(f"Experts ({report.lists} coreset lists; {_programs(report)})", headers, rows)


def pair_rows(report: StudyReport, exclude: str | None = None) -> Rows:
    columns = _Columns(report, exclude)
    rows = [
        [
            p.source,
            p.target,
            p.init,
            f"{p.penalty:+.4f}",
            f"{100 * p.agreement:.0f}%",
            *columns.values(p.held_out),
            f"{p.seconds:.1f}",
        ]
        for p in report.pairs
    ]
    headers = [
        "A (encoder)",
        "B (head)",
        "layer",
        "stitching penalty",
        "top-1 agreement with B",
        *columns.headers(validation=False),
        "training s",
    ]
    return Rows("Stitched pairs A -> B", headers, rows)


def curve_rows(report: StudyReport, exclude: str | None = None) -> Rows:
    columns = _Columns(report, exclude)
    rows = [
        [
            str(len(c.members)),
            " + ".join(c.members),
            *columns.values(c.held_out, c.validation),
            f"{c.held_out_loss:.4f}",
            f"{c.seconds:.1f}",
        ]
        for c in report.curve
    ]
    headers = ["k", "experts (receiver first)", *columns.headers(), "held-out loss", "training s"]
    return Rows("Stitched ensembles, grown greedily on the validation split", headers, rows)


def comparisons(report: StudyReport) -> list[str]:
    """The validation split's verdict between the best ensemble, the best single expert and the ranker, each
    difference with its 95% paired bootstrap interval (the shipped model is chosen on validation only)."""
    if not report.curve:
        return []
    best_curve = min(report.curve, key=lambda c: geomean_change(np.array(c.validation)))
    neural = [e for e in report.experts if not e.name.startswith("ranker")]
    best_expert = min(neural, key=lambda e: geomean_change(np.array(e.validation)))
    ranker = next(e for e in report.experts if e.name.startswith("ranker"))
    lines = []
    for label, other in ((f"best single expert ({best_expert.name})", best_expert), ("ranker", ranker)):
        difference, low, high = paired_difference(best_curve.validation, other.validation)
        lines.append(
            f"validation: ensemble of {len(best_curve.members)} minus {label}: {100 * difference:+.2f} pp "
            f"(95% interval {100 * low:+.2f} to {100 * high:+.2f})"
        )
    return lines


def study_json(report: StudyReport) -> str:
    return json.dumps(asdict(report), indent=1) + "\n"


def write_json(report: StudyReport, path: Path) -> None:
    path.write_text(study_json(report))


def load_report(path: Path) -> StudyReport:
    """A study written by `write_json` (`stitchopt stitch table -o study.json`)."""
    try:
        data = json.loads(path.read_text())
        return StudyReport(
            data["programs"],
            data["lists"],
            tuple(data["oracle"]),
            tuple(data["held_out_packages"]),
            tuple(data["validation_packages"]),
            [
                ExpertRow(**{**e, "held_out": tuple(e["held_out"]), "validation": tuple(e["validation"])})
                for e in data["experts"]
            ],
            [PairRow(**{**p, "held_out": tuple(p["held_out"])}) for p in data["pairs"]],
            [
                CurveRow(
                    **{
                        **c,
                        "members": tuple(c["members"]),
                        "validation": tuple(c["validation"]),
                        "held_out": tuple(c["held_out"]),
                    }
                )
                for c in data["curve"]
            ],
            [PairAlignment(**a) for a in data["alignments"]],
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{path}: not a stitching study written by `stitchopt stitch table -o study.json` ({exc})"
        ) from exc


def _programs(report: StudyReport) -> str:
    return ", ".join(f"{count} {split}" for split, count in report.programs.items())
