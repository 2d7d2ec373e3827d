"""What a stitching study found, as plain data: the rows of its tables, each keeping every program's result,
so reports can score any subset and compare two rows program by program. No PyTorch here: reading and drawing
a saved study (`stitchopt stitch inspect`) does not need the `stitch` extra."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INITIALIZATIONS = ("lstsq", "random", "ot")  # lstsq: closed form, not trained; the others: Adam from that start

Choices = tuple[float, ...]  # each program's size ratio to -Oz in static mode with the -Oz backup


@dataclass(frozen=True)
class ExpertRow:
    name: str
    held_out_loss: float
    held_out: Choices
    validation: Choices
    epochs: int
    seconds: float


@dataclass(frozen=True)
class PairRow:
    source: str
    target: str
    init: str
    penalty: float  # held-out loss of source -> target minus the target expert's own held-out loss
    agreement: float  # share of held-out programs whose top-1 list equals the target expert's
    held_out: Choices
    seconds: float


@dataclass(frozen=True)
class CurveRow:
    members: tuple[str, ...]  # receiver first, in the order they were added
    validation: Choices
    held_out: Choices
    held_out_loss: float
    seconds: float


@dataclass(frozen=True)
class PairAlignment:
    """The OT alignment of two experts' hidden units on the training programs, for `stitch inspect`."""

    source: str
    target: str
    transport_cost: float  # plan-weighted 2 - 2 correlation: 0 when every unit has a perfectly correlated match
    matched_correlation: float  # mean correlation between each source unit and the target unit it sends most to
    plan: list[list[float]]  # the plan summed over blocks of units (`study.ALIGNMENT_BLOCKS` at most on a side)
    seconds: float


@dataclass(frozen=True)
class StudyReport:
    programs: dict[str, int]  # split -> labeled programs used
    lists: int  # coreset size
    oracle: Choices  # every coreset list tried on each held-out program
    held_out_packages: tuple[str, ...]  # of each held-out program, in the rows' order
    validation_packages: tuple[str, ...]
    experts: list[ExpertRow]
    pairs: list[PairRow]
    curve: list[CurveRow]
    alignments: list[PairAlignment]


def paired_difference(
    first: Choices, second: Choices, samples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Geomean change of `first` minus that of `second` on the same programs, with a 95% paired bootstrap
    interval: a difference whose interval holds 0 is within the noise of this many programs."""
    a, b = np.log(np.array(first)), np.log(np.array(second))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(a), size=(samples, len(a)))
    differences = np.exp(a[draws].mean(axis=1)) - np.exp(b[draws].mean(axis=1))
    low, high = np.percentile(differences, [2.5, 97.5])
    return float(np.exp(a.mean()) - np.exp(b.mean())), float(low), float(high)
