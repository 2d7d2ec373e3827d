"""What a detection study found, as plain data: one row per detector (alone, stitched, or an anchor such as a
static analyzer), each keeping its confusion counts per CWE on the test split, so reports compute any metric
for any CWE and anchors computed elsewhere fit the same table. No PyTorch here: a saved study is read and drawn
without the `stitch` extra."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, astuple, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from stitchopt.errors import InputError

STUDY_KIND = "detection-study"
STUDY_FORMAT = 1
ROW_KINDS = ("detector", "stitched", "control", "anchor")  # anchor: a tool outside the study (clang, cppcheck)


class LabeledFunction(Protocol):
    """What scoring needs of a function (`datasets.juliet.JulietFunction` has it): its case's CWE and label."""

    @property
    def cwe(self) -> str: ...

    @property
    def label(self) -> str: ...  # "bad" | "good"


@dataclass(frozen=True)
class Counts:
    """Confusion counts of bad (positive) vs good functions; `cwe_right` of `cwe_scored` bad functions got
    their CWE right (`cwe_scored` is 0 for a row that guesses no CWE)."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    cwe_right: int = 0
    cwe_scored: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    @property
    def functions(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.tp + self.tn, self.functions)

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def false_positive_rate(self) -> float | None:
        return _ratio(self.fp, self.fp + self.tn)

    @property
    def f1(self) -> float | None:
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    @property
    def cwe_accuracy(self) -> float | None:
        return _ratio(self.cwe_right, self.cwe_scored)


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def tally(
    functions: Sequence[LabeledFunction], flagged: Sequence[bool], guesses: Sequence[str | None] | None = None
) -> dict[str, Counts]:
    """Per-CWE counts of a row's verdicts (`flagged[i]`: function i called bad; `guesses[i]`: its CWE guess,
    None where it made none, which counts as wrong), keyed by each function's case CWE, sorted. Without
    `guesses` (a tool that names no CWE) the row has no CWE accuracy."""
    if len(flagged) != len(functions) or (guesses is not None and len(guesses) != len(functions)):
        raise ValueError("one verdict (and one guess) per function")
    totals: dict[str, Counts] = {}
    for i, function in enumerate(functions):
        bad, said_bad = function.label == "bad", bool(flagged[i])
        one = Counts(
            tp=int(bad and said_bad),
            fp=int(said_bad and not bad),
            tn=int(not bad and not said_bad),
            fn=int(bad and not said_bad),
            cwe_right=int(bad and guesses is not None and guesses[i] == function.cwe),
            cwe_scored=int(bad and guesses is not None),
        )
        totals[function.cwe] = totals.get(function.cwe, Counts()) + one
    return dict(sorted(totals.items()))


def total(counts: Iterable[Counts]) -> Counts:
    return sum(counts, Counts())


@dataclass(frozen=True)
class DetectionRow:
    name: str
    kind: str  # one of ROW_KINDS
    counts: dict[str, Counts]  # CWE -> counts on the test split
    members: tuple[str, ...] = ()  # experts, receiver first (empty for an anchor)
    init: str = ""  # stitching layers' start: lstsq or ot ("" when nothing is stitched)
    threshold: float | None = None  # risk at or above which a function is called bad, chosen on validation
    validation_f1: float | None = None  # what the choices (threshold, best detector, winner) were made on
    seconds: float = 0.0  # training time
    risks: tuple[float, ...] = ()  # each test function's risk, in the study's order (none for an anchor)

    @property
    def overall(self) -> Counts:
        return total(self.counts.values())


@dataclass
class DetectionReport:
    functions: dict[str, dict[str, int]]  # split -> {"bad": n, "good": n}
    cwes: tuple[str, ...]  # the classes of the CWE head, in its order
    best_detector: str  # the detector expert chosen on validation (the receiver of every stitched row)
    optimization_model: str  # identity of the stitched flag-tuning model whose experts were stitched in ("": none)
    rows: list[DetectionRow] = field(default_factory=list)
    winner: str = ""  # the row chosen on validation F1 (the one a detector model directory keeps)
    seconds: dict[str, float] = field(default_factory=dict)  # features, experts, stitching

    def row(self, name: str) -> DetectionRow:
        found = [r for r in self.rows if r.name == name]
        if not found:
            raise KeyError(name)
        return found[0]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": STUDY_KIND, "format": STUDY_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DetectionReport:
        if data.get("kind") != STUDY_KIND or data.get("format") != STUDY_FORMAT:
            raise ValueError(f"not a {STUDY_KIND} of format {STUDY_FORMAT}")
        rows = [
            DetectionRow(
                **{
                    **r,
                    "counts": {cwe: Counts(**c) for cwe, c in r["counts"].items()},
                    "members": tuple(r["members"]),
                    "risks": tuple(r["risks"]),
                }
            )
            for r in data["rows"]
        ]
        return cls(
            {split: dict(n) for split, n in data["functions"].items()},
            tuple(data["cwes"]),
            data["best_detector"],
            data["optimization_model"],
            rows,
            data["winner"],
            dict(data["seconds"]),
        )

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> DetectionReport:
        """A study written by `write_json`; one InputError line for anything else."""
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(
                f"{path}: not a detection study (`stitchopt.security.study.run_detection_study`, saved with "
                f"write_json): {exc}"
            ) from exc
