"""Greedy covering orders: after static's pick, the list that most lowers the mean best cost of the lists before it.

jit builds the first k lists of an order and keeps the smallest object, so a list that helps the programs the
earlier lists miss is worth more there than one that helps the same programs again. The host chooser covers a
program's neighbours (shrunk toward all training programs); the device model covers its training kernels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Part = tuple[float, np.ndarray]  # (weight, programs x choices costs: lower is better)


def cover(first: int, candidates: Sequence[int], parts: Sequence[Part]) -> list[int]:
    """The candidates (choice columns, ties go to the earlier) that lower the weighted mean best cost of `parts`,
    most first, starting from `first` alone, while one does. Sums run row by row, as the clang plugin's do."""
    bests = [costs[:, first].copy() for _, costs in parts]
    left = [j for j in candidates if j != first]
    chosen: list[int] = []
    while left and any(
        weight > 0 and (costs[:, left] < best[:, None]).any()
        for (weight, costs), best in zip(parts, bests, strict=True)
    ):
        values = np.zeros(len(left))
        for (weight, costs), best in zip(parts, bests, strict=True):
            values += weight * (np.minimum(best[:, None], costs[:, left]).sum(axis=0) / len(costs))
        pick = left.pop(int(np.argmin(values)))
        chosen.append(pick)
        for (_, costs), best in zip(parts, bests, strict=True):
            np.minimum(best, costs[:, pick], out=best)
    return chosen


def cover_order(ranked: Sequence[int], parts: Sequence[Part], candidates: Sequence[int] | None = None) -> list[int]:
    """A whole order: `ranked`'s first (static's pick), then the candidates (default: `ranked`'s) in `cover`'s
    order, then the rest of `ranked` in its own order."""
    first = ranked[0]
    tried = [first, *cover(first, ranked if candidates is None else candidates, parts)]
    return tried + [j for j in ranked if j not in tried]
