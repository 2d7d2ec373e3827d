"""What a detection study found, as plain data: one row per detector (alone, stitched, or an anchor such as a
static analyzer), each keeping its confusion counts per CWE on the test split, so reports compute any metric
for any CWE and anchors computed elsewhere fit the same table. No PyTorch here: a saved study is read and drawn
without the `stitch` extra."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, astuple, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from stitchopt.errors import InputError

STUDY_KIND = "detection-study"
STUDY_FORMAT = 1
LABELS = ("bad", "good")
# anchor: a tool outside the study (clang, cppcheck); operating point: the best detector thresholded on validation
# at an anchor's false-positive rate there, so the two compare at no higher false-positive rate
ROW_KINDS = ("detector", "stitched", "control", "anchor", "operating point")


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
    init: str = ""  # stitching layers' start (lstsq, ot); an operating point: the anchor it matches; else ""
    threshold: float | None = None  # risk at or above which a function is called bad, chosen on validation
    validation_f1: float | None = None  # what the choices (threshold, best detector, winner) were made on
    seconds: float = 0.0  # training time
    risks: tuple[float, ...] = ()  # each test function's risk, in the study's order (none for an anchor)
    flags: tuple[bool, ...] = ()  # an anchor's verdict on each test function, in the study's order

    @property
    def overall(self) -> Counts:
        return total(self.counts.values())

    def verdicts(self) -> tuple[bool, ...]:
        """Each test function called bad or not: an anchor's flags, or a detector's risk against its threshold."""
        if self.flags or self.threshold is None:
            return self.flags
        return tuple(risk >= self.threshold for risk in self.risks)


@dataclass(frozen=True)
class HeldOutFunction:
    """What a report keeps of each test function, in the study's order, so any subset can be counted again."""

    cwe: str
    label: str  # "bad" | "good"
    twin: bool = False  # its IR equals that of a function of the other label in the same case (see `without_twins`)


@dataclass
class DetectionReport:
    functions: dict[str, dict[str, int]]  # split -> {"bad": n, "good": n}
    cwes: tuple[str, ...]  # the classes of the CWE head, in its order
    best_detector: str  # the detector expert chosen on validation (the receiver of every stitched row)
    optimization_model: str  # identity of the stitched flag-tuning model whose experts were stitched in ("": none)
    rows: list[DetectionRow] = field(default_factory=list)
    winner: str = ""  # the row chosen on validation F1 (the one a detector model directory keeps)
    seconds: dict[str, float] = field(default_factory=dict)  # features, experts, stitching
    tests: list[HeldOutFunction] = field(default_factory=list)  # the test split, in the order of rows' risks

    def without_twins(self) -> DetectionReport:
        """Every row counted again without the test functions whose IR a function of the other label shares.

        Juliet labels "part of the flawed build": a bad case's sink can be the very code of a good variant's
        sink (`badSink` and `goodG2BSink`), which no reader of the IR can tell apart. CWE accuracy is dropped
        (a row keeps no per-function guesses)."""
        kept = [i for i, t in enumerate(self.tests) if not t.twin]
        functions = [self.tests[i] for i in kept]
        rows = []
        for row in self.rows:
            verdicts = row.verdicts()
            counts = tally(functions, [verdicts[i] for i in kept]) if verdicts else {}
            rows.append(replace(row, counts=counts, risks=(), flags=()))
        splits = {**self.functions, "test": {label: sum(f.label == label for f in functions) for label in LABELS}}
        return replace(self, functions=splits, rows=rows, tests=functions)

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
                    "flags": tuple(r.get("flags", ())),
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
            [HeldOutFunction(**t) for t in data.get("tests", [])],
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
                f"{path}: not a detection study (`stitchopt security study -o FILE` writes one, or write_json): {exc}"
            ) from exc
