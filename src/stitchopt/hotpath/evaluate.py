"""Predictors of hot blocks and how they score on held-out profiled programs: accuracy, precision, recall
and F1 of hot blocks (pooled over all blocks), and the overlap of predicted and measured top-5 functions."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from stitchopt.hotpath.blocks import ProgramBlocks
from stitchopt.hotpath.labels import DEFAULT_SHARE, covering, function_totals, hot_blocks, measured_counts
from stitchopt.hotpath.model import DEFAULT_THRESHOLD, HotPathModel

TOP_FUNCTIONS = 5
THRESHOLD_GRID = tuple(round(0.05 * k, 2) for k in range(1, 20))


@dataclass(frozen=True)
class Prediction:
    hot: np.ndarray  # per block of the program, in function and layout order
    function_scores: np.ndarray  # per function: higher is hotter


Predictor = Callable[[ProgramBlocks], Prediction]


def static_frequency(program: ProgramBlocks, share: float = DEFAULT_SHARE) -> Prediction:
    """LLVM's static block frequencies (`print<block-freq>`) times call-graph estimates, covered to `share`."""
    estimate = np.concatenate([f.static for f in program.functions])
    return Prediction(covering(estimate, share), function_totals(program, estimate))


def loop_depth(program: ProgramBlocks, share: float = DEFAULT_SHARE) -> Prediction:
    """Each loop level counts ten times the one around it; calls are ignored."""
    estimate = np.concatenate([10.0**f.loop_depth for f in program.functions])
    return Prediction(covering(estimate, share), function_totals(program, estimate))


def from_probabilities(
    program: ProgramBlocks, probabilities: Sequence[np.ndarray], threshold: float = DEFAULT_THRESHOLD
) -> Prediction:
    joined = np.concatenate(list(probabilities)) if probabilities else np.zeros(0)
    return Prediction(joined >= threshold, np.array([p.sum() for p in probabilities]))


def lstm(model: HotPathModel) -> Predictor:
    return lambda program: from_probabilities(program, model.predict(program), model.threshold)


def best_threshold(
    probabilities: Sequence[np.ndarray], truths: Sequence[np.ndarray], grid: Sequence[float] = THRESHOLD_GRID
) -> float:
    """The cut-off that maximizes F1 over the given blocks (validation programs, never test ones)."""
    p, t = np.concatenate(list(probabilities)), np.concatenate(list(truths))

    def f1(cut: float) -> float:
        hit = float((t & (p >= cut)).sum())
        return 2 * hit / (float((p >= cut).sum()) + float(t.sum())) if hit else 0.0

    return max(grid, key=lambda cut: (f1(cut), -abs(cut - DEFAULT_THRESHOLD)))


@dataclass(frozen=True)
class Scores:
    method: str
    programs: int
    blocks: int
    accuracy: float
    precision: float
    recall: float
    f1: float
    top_functions: float  # mean share of the measured top-5 functions found in the predicted top 5


def _top(values: np.ndarray, limit: int) -> set[int]:
    order = np.argsort(-values, kind="stable")
    return {int(i) for i in order[:limit] if values[i] > 0}


def score(method: str, predictor: Predictor, programs: Sequence[ProgramBlocks], share: float = DEFAULT_SHARE) -> Scores:
    truth_all, predicted_all, overlaps = [], [], []
    for program in programs:
        truth = hot_blocks(program, share)
        prediction = predictor(program)
        truth_all.append(truth)
        predicted_all.append(prediction.hot)
        measured = _top(function_totals(program, measured_counts(program)), TOP_FUNCTIONS)
        if measured:
            guessed = _top(prediction.function_scores, TOP_FUNCTIONS)
            overlaps.append(len(measured & guessed) / len(measured))
    truth, predicted = np.concatenate(truth_all), np.concatenate(predicted_all)
    hits = float((truth & predicted).sum())
    precision = hits / predicted.sum() if predicted.sum() else 0.0
    recall = hits / truth.sum() if truth.sum() else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Scores(
        method,
        len(programs),
        len(truth),
        float((truth == predicted).mean()),
        precision,
        recall,
        f1,
        float(np.mean(overlaps)) if overlaps else math.nan,
    )
