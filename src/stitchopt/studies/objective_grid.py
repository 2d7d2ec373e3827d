"""Objective weights for the flag-tuning model: one model per weighting of `size`, `instructions` and
`compile-time` is trained on the train split, each model's static choice (with the -Oz backup judged by the
same objective) is measured on the validation split, and the weightings on the Pareto front of (object size,
compile time) are marked. Runtime (`perf`) needs run commands, which dataset programs do not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import unit_language
from stitchopt.features.base import Representation
from stitchopt.labels.labelset import LabelSet
from stitchopt.learning.train import train_flag_model
from stitchopt.models.ranker import geomean_change

DEFAULT_GRID = (
    "size=1",
    "size=1,compile-time=0.1",
    "size=1,compile-time=0.3",
    "size=1,compile-time=1",
    "size=1,compile-time=3",
    "compile-time=1",
    "size=1,instructions=1",
)


@dataclass(frozen=True)
class WeightRow:
    objective: str
    size_change: float  # geomean object size vs -Oz of the validation programs' static choices
    compile_time_change: float  # geomean opt + llc seconds vs -Oz of the same choices
    changed: float  # share of validation programs whose choice is not -Oz
    pareto: bool  # no other weighting is at least as good on both and better on one


def objective_grid(
    labels: LabelSet,
    features: np.ndarray,
    representations: Sequence[Representation],
    *,
    llvm_version: str,
    objectives: Sequence[Objective],
    k: int = 50,
) -> list[WeightRow]:
    """`features`: raw rows in `labels.programs` order; `labels` must hold compile times and both splits."""
    rows = np.arange(len(labels.programs))
    in_train = np.array([p.split == "train" for p in labels.programs])
    train, validation = labels.subset(lambda p: p.split == "train"), labels.subset(lambda p: p.split == "validation")
    sizes, seconds = _ratios(validation)
    languages = [unit_language(p.uri) for p in validation.programs]
    points = []
    for objective in objectives:
        model, _ = train_flag_model(
            train, features[rows[in_train]], representations, llvm_version=llvm_version, k=k, objective=objective
        )
        values = validation.objective_values(objective)
        chosen_size, chosen_time, changed = [], [], 0
        for i, ranked in enumerate(model.rank_features(features[rows[~in_train]], languages)):
            j = None if ranked[0].passes is None else labels.lists.index(ranked[0].passes)
            if j is None or not values[i, j] <= 1.0:  # the -Oz backup, judged by the objective
                chosen_size.append(1.0)
                chosen_time.append(1.0)
                continue
            changed += 1
            chosen_size.append(sizes[i, j])
            chosen_time.append(seconds[i, j])
        points.append(
            (
                str(objective),
                geomean_change(np.array(chosen_size)),
                geomean_change(np.array(chosen_time)),
                changed / len(values),
            )
        )
    front = [(size, time) for _, size, time, _ in points]
    return [
        WeightRow(name, size, time, changed, not any(_dominates(other, (size, time)) for other in front))
        for name, size, time, changed in points
    ]


def _ratios(labels: LabelSet) -> tuple[np.ndarray, np.ndarray]:
    """programs x lists: object size and compile seconds over -Oz's (NaN where the list failed)."""
    sizes = np.array([[np.nan if s is None else s / p.baseline_sizes["Oz"] for s in p.sizes] for p in labels.programs])
    seconds = np.array(
        [[np.nan if t is None else t / max(p.baseline_seconds["Oz"], 1e-9) for t in p.seconds] for p in labels.programs]
    )
    return sizes.reshape(len(labels.programs), -1), seconds.reshape(len(labels.programs), -1)


def _dominates(first: tuple[float, float], second: tuple[float, float]) -> bool:
    return first[0] <= second[0] and first[1] <= second[1] and first != second
