"""The detector's threshold calibrated on ordinary code: a threshold chosen on Juliet alone flags most real
functions (`int add(int a, int b)` included), since Juliet's good and bad variants are both unlike them. The
threshold is set on benign real code (the demo corpus, the pypi dataset's train split) so that a known share of
its functions is flagged, and what that threshold still finds of Juliet's held-out flaws is measured, so that the
output can say what a flag means, and say so plainly when the detector cannot tell the two apart.

Calibrate with `python benchmarks/security.py calibrate` (it writes the result into the model's config.json);
the risks it calibrates on come from `security.risks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from stitchopt.errors import InputError

TARGET_FALSE_POSITIVE_RATE = 0.05
HELD_OUT_FOLDS = 5  # programs split this many ways to see the threshold's false-positive rate on programs it never saw
USEFUL_SEPARATION = 0.75  # below this, the output says the detector cannot tell ordinary code from Juliet's flaws
CALIBRATION_CONFIG: dict[str, Any] = {  # the schema of a calibration in a detector's config.json
    "threshold": (int, float),
    "target_false_positive_rate": (int, float),
    "corpus": [str],
    "benign_functions": int,
    "benign_false_positive_rate": (int, float),
    "benign_held_out_false_positive_rate": (int, float),
    "juliet_bad": int,
    "juliet_good": int,
    "juliet_recall": (int, float),
    "juliet_false_positive_rate": (int, float),
    "separation": (int, float),
    "method": str,
    "command": str,
}


@dataclass(frozen=True)
class Calibration:
    """Where a detector's threshold comes from, and what it means on benign code and on Juliet's held-out flaws."""

    threshold: float
    target_false_positive_rate: float
    corpus: tuple[str, ...]  # what the benign functions came from (dataset URIs, paths)
    benign_functions: int
    benign_false_positive_rate: float  # share of the benign functions at or above the threshold
    # The same share with each program's threshold set on the other folds' programs (HELD_OUT_FOLDS folds): what a
    # user's own code can expect, where benign_false_positive_rate is measured on what the threshold was set on.
    benign_held_out_false_positive_rate: float
    juliet_bad: int  # held-out (test-split) Juliet functions the recall is measured on
    juliet_good: int
    juliet_recall: float  # share of those bad functions at or above the threshold
    juliet_false_positive_rate: float  # share of those good functions at or above it
    separation: float  # chance that a held-out Juliet bad function outranks a benign one (ROC AUC; 0.5: chance)
    method: str
    command: str  # what reproduces it

    def meaning(self) -> str:
        """One line: what the risk is and what the threshold was set to."""
        return (
            f"risk: the detector's probability that a function is like Juliet's flawed functions. Flagged at >= "
            f"{self.threshold:.3f}, set so that {self.benign_false_positive_rate:.1%} of {self.benign_functions} "
            f"benign functions ({', '.join(self.corpus)}) are flagged ({self.benign_held_out_false_positive_rate:.1%}"
            f" of programs left out of the setting); {self.juliet_recall:.0%} of Juliet's held-out flawed functions "
            "are."
        )

    def caveat(self) -> str | None:
        """A plain warning when the detector ranks ordinary code too much like Juliet's flaws to be useful."""
        if self.separation >= USEFUL_SEPARATION:
            return None
        return (
            f"caveat: this detector does not tell ordinary code from Juliet's flaws: a held-out Juliet flawed "
            f"function outranks a benign function in {self.separation:.0%} of pairs (50% is chance). A flag is a "
            "hint to look, not a finding; no flag is no evidence of safety."
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "corpus": list(self.corpus)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        return cls(**{**{key: data[key] for key in CALIBRATION_CONFIG}, "corpus": tuple(data["corpus"])})


def uncalibrated_meaning(threshold: float) -> str:
    """What a detector's threshold means when it was only chosen on Juliet (a model fresh from the study)."""
    return (
        "risk: the detector's probability that a function is like Juliet's flawed functions. Flagged at >= "
        f"{threshold:.3f}, the best F1 on Juliet's validation split; not calibrated on ordinary code, which it "
        "flags often (`python benchmarks/security.py calibrate --model DIR`)."
    )


def calibrate(
    benign_programs: Sequence[np.ndarray],
    juliet_bad: np.ndarray,
    juliet_good: np.ndarray,
    corpus: Sequence[str],
    command: str,
    target: float = TARGET_FALSE_POSITIVE_RATE,
) -> Calibration:
    """The lowest threshold that flags at most `target` of the benign risks (one array per program), what it flags
    of Juliet's, and what a threshold set without a program flags of it (`held_out_rate`)."""
    benign = np.concatenate([np.zeros(0), *benign_programs])
    if not len(benign) or not len(juliet_bad):
        raise InputError("calibration needs benign functions and Juliet bad functions: give a corpus and Juliet data")
    threshold = _threshold_at(benign, target)
    return Calibration(
        threshold,
        target,
        tuple(corpus),
        len(benign),
        float(np.mean(benign >= threshold)),
        held_out_rate(benign_programs, target),
        len(juliet_bad),
        len(juliet_good),
        float(np.mean(juliet_bad >= threshold)),
        float(np.mean(juliet_good >= threshold)) if len(juliet_good) else 0.0,
        separation(juliet_bad, benign),
        f"the lowest risk at or above which at most {target:.0%} of the benign functions lie; Juliet's test split "
        "(families the detector never saw) measured at it",
        command,
    )


def held_out_rate(benign_programs: Sequence[np.ndarray], target: float, folds: int = HELD_OUT_FOLDS) -> float:
    """The share of benign functions flagged when each program's threshold is set on the other folds' programs
    (programs dealt to folds in turn); with one program, its own rate (nothing is left to set it on)."""
    if len(benign_programs) < 2:
        risks = np.concatenate([np.zeros(0), *benign_programs])
        return float(np.mean(risks >= _threshold_at(risks, target))) if len(risks) else 0.0
    folds = min(folds, len(benign_programs))
    flagged = total = 0
    for fold in range(folds):
        setting = [risks for i, risks in enumerate(benign_programs) if i % folds != fold]
        left_out = [risks for i, risks in enumerate(benign_programs) if i % folds == fold]
        threshold = _threshold_at(np.concatenate(setting), target)
        flagged += sum(int(np.sum(risks >= threshold)) for risks in left_out)
        total += sum(len(risks) for risks in left_out)
    return flagged / total if total else 0.0


def _threshold_at(benign: np.ndarray, target: float) -> float:
    """The lowest threshold that flags at most `target` of these benign risks."""
    return threshold_for(benign, int(target * len(benign)))


def separation(positives: np.ndarray, negatives: np.ndarray) -> float:
    """The chance that a random positive scores above a random negative, ties counting half (ROC AUC)."""
    ordered = np.sort(negatives)
    below = np.searchsorted(ordered, positives, side="left")
    tied = np.searchsorted(ordered, positives, side="right") - below
    return float((below + tied / 2).sum() / (len(positives) * len(negatives)))


def threshold_for(good_risks: np.ndarray, allowed: int) -> float:
    """The lowest threshold that calls at most `allowed` of these good functions bad (`risk >= threshold`): a
    detector set to another tool's false-positive count."""
    ordered = np.sort(good_risks)[::-1]
    if allowed >= len(ordered):
        return 0.0
    return float(np.nextafter(ordered[allowed], np.inf))
