"""What the security guard costs a size search: on searched units (label shards) or fresh searches, how many
of the search's best lists the guard turns away, and the size of the best list that passes it.

The guard (`validate.guards`, with `validate.security_guard`'s counts) is asked about the minimized best first, then
about each earlier best of the search, latest first: the same order in which `stitchopt tune` falls back. A unit
whose bests all fail gets -Oz (ratio 1.0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from stitchopt.core import IRModule
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.shards import SearchedUnit
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.validate.guards import Guard


@dataclass(frozen=True)
class GuardCost:
    """One unit: the size search's best, whether the guard turned it away and why, and the guarded answer."""

    unit: str
    best_ratio: float  # the search's best (minimized) size over -Oz's; 1.0 when nothing beat -Oz
    guarded_ratio: float  # the best list that passes the guard; 1.0 when none does (-Oz)
    turned_away: bool  # the search's best failed the guard
    reasons: tuple[str, ...]  # why it failed
    oz_removed: dict[str, int]  # security-relevant code -Oz itself removes from the unit (a warning)


def guard_cost(
    evaluator: Evaluator,
    catalogue: Catalogue,
    name: str,
    module: IRModule,
    candidates: Sequence[tuple[PassNames, float]],
) -> GuardCost:
    """`candidates`: (list, size / -Oz) best first; only lists smaller than -Oz are asked about."""
    oz = evaluator.baselines["Oz"]
    guard = Guard(evaluator.toolchain, module, oz.options, oz.pipeline, timeout=evaluator.timeout)
    smaller = [(passes, ratio) for passes, ratio in candidates if ratio < 1.0]
    if not smaller:
        return GuardCost(name, 1.0, 1.0, False, (), guard.oz_removed)
    first_reasons: list[str] | None = None
    for passes, ratio in smaller:
        reasons = guard.check(tuned_pipeline(passes, catalogue))
        if first_reasons is None:
            first_reasons = reasons
        if not reasons:
            return GuardCost(name, smaller[0][1], ratio, bool(first_reasons), tuple(first_reasons), guard.oz_removed)
    return GuardCost(name, smaller[0][1], 1.0, True, tuple(first_reasons or ()), guard.oz_removed)


def searched_candidates(unit: SearchedUnit) -> list[tuple[PassNames, float]]:
    """A searched unit's lists in fallback order: the minimized best, then the search's bests, latest first."""
    if unit.failed:
        return []
    found = [(unit.best, unit.best_size)] if unit.best is not None and unit.best_size else []
    found += [(passes, size) for passes, size in reversed(unit.bests)]
    return [(passes, size / unit.oz_size) for passes, size in found]


@dataclass(frozen=True)
class GuardSummary:
    units: int
    improved: int  # units whose size search beat -Oz
    turned_away: int  # of those, units whose best list the guard turned away
    geomean_best: float  # size / -Oz over all units, the search's bests
    geomean_guarded: float  # the same with the guard's answers

    @classmethod
    def of(cls, costs: Sequence[GuardCost]) -> GuardSummary:
        return cls(
            len(costs),
            sum(c.best_ratio < 1.0 for c in costs),
            sum(c.turned_away for c in costs),
            _geomean([c.best_ratio for c in costs]),
            _geomean([c.guarded_ratio for c in costs]),
        )


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 1.0
