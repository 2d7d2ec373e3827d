"""A coreset of pass lists: the K lists that together reach most of the gain any list of the pool reaches.

The objective, mean log gain over -Oz with the -Oz backup (`mean_i -log min(1, min_{j in S} r_ij)`), is
monotone submodular in the chosen set S, so greedy selection is within (1 - 1/e) of the best K-set and in
practice close to it (Coreset-NVP does the same). Each list the greedy step would add is offered to `accept`
first (e.g. the validator): a rejected list is dropped for good and the next best is taken.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DEFAULT_K = 50


@dataclass(frozen=True)
class Coreset:
    indices: tuple[int, ...]  # into the pool, in the order chosen
    curve: tuple[float, ...]  # geomean size change vs -Oz (with backup) reached by the first 1..K lists
    pool_best: float  # the same with every list of the pool (the oracle over the pool)
    rejected: tuple[int, ...]  # lists `accept` turned down


def select_coreset(ratios: np.ndarray, k: int = DEFAULT_K, accept: Callable[[int], bool] | None = None) -> Coreset:
    """Greedy selection on a programs x lists matrix of size ratios to -Oz (inf = failed)."""
    gains = -np.log(np.minimum(ratios, 1.0))  # >= 0; a failed list (inf) gains nothing
    covered = np.zeros(ratios.shape[0])
    available = set(range(ratios.shape[1]))
    chosen: list[int] = []
    rejected: list[int] = []
    curve: list[float] = []
    while len(chosen) < k and available:
        order = sorted(available, key=lambda j: -float(np.maximum(gains[:, j], covered).sum()))
        best = order[0]
        if float(np.maximum(gains[:, best], covered).sum()) <= covered.sum() and chosen:
            break  # nothing left adds any gain
        available.discard(best)
        if accept is not None and not accept(best):
            rejected.append(best)
            continue
        chosen.append(best)
        covered = np.maximum(covered, gains[:, best])
        curve.append(_change(covered))
    pool = gains.max(axis=1) if gains.size else covered
    return Coreset(tuple(chosen), tuple(curve), _change(pool), tuple(rejected))


def _change(gains: np.ndarray) -> float:
    """Geomean size change vs -Oz for per-program log gains."""
    return math.exp(-float(gains.mean())) - 1.0 if gains.size else 0.0
