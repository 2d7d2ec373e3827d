"""Warm the caches before a build: rank every translation unit once, then measure -Oz, each unit's own top-k
lists and the lists that rank in the top k most often across the units, so a later static or jit build of
those units reads every prediction and every size from the store instead of computing them.

Warming runs where time is cheap (overnight, on a build server sharing the cache directory); the build itself
then pays only for lookups. The common lists are measured on every unit because they are the ones a slightly
edited unit will most likely rank high again.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stitchopt.core import IRModule
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.models.list_model import ListModel
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline


@dataclass(frozen=True)
class WarmReport:
    units: int
    common_lists: tuple[PassNames, ...]  # most frequent in the units' top k first
    requests: int  # compilations asked for: -Oz + each unit's top k + the common lists, less duplicates
    compiled: int  # of those, not already in the store
    seconds: float


def common_lists(rankings: Sequence[Sequence[PassNames | None]], k: int, count: int) -> tuple[PassNames, ...]:
    """The `count` lists found most often among the first `k` of each ranking (-Oz left out: always measured);
    ties go to the list seen first, so the answer does not depend on hash order."""
    tally = Counter(passes for ranking in rankings for passes in ranking[:k] if passes is not None)
    return tuple(passes for passes, _ in tally.most_common(count))


def warm_caches(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    modules: Sequence[IRModule],
    *,
    k: int = 5,
    common: int = 5,
    on_unit: Callable[[int, int], None] | None = None,
) -> WarmReport:
    """Fill the prediction cache for `modules`, then measure what static and jit (up to `k`) builds will ask
    for, plus the `common` most frequent top-k lists on every unit. `on_unit(done, total)` reports ranking."""
    start = time.perf_counter()
    rankings: list[list[PassNames | None]] = []
    for done, module in enumerate(modules, 1):
        rankings.append([entry.passes for entry in cached_rank(model, evaluator.toolchain, module, evaluator.store)])
        if on_unit is not None:
            on_unit(done, len(modules))
    shared = common_lists(rankings, k, common)
    oz = evaluator.baselines["Oz"]
    requests = []
    for module, ranking in zip(modules, rankings, strict=True):
        own = [passes for passes in ranking[:k] if passes is not None]
        lists = dict.fromkeys([*own, *shared])  # ordered, without duplicates
        requests.append(EvalRequest(module, oz.pipeline, oz.options))
        requests += [EvalRequest(module, tuned_pipeline(passes, catalogue), oz.options) for passes in lists]
    before = evaluator.counters.evaluated
    evaluator.evaluate_many(requests)
    return WarmReport(
        len(modules), shared, len(requests), evaluator.counters.evaluated - before, time.perf_counter() - start
    )
