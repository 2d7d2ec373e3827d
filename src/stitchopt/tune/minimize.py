"""Shrink a best pass list to a fixed point without ever making it worse.

Three moves, repeated until none applies (or the evaluation budget runs out):
1. redundant-pass elimination: drop a pass when the list without it scores no worse;
2. canonical ordering: swap adjacent passes into name order when the score stays the same, so equivalent
   lists found on different programs look the same (what broadcast counts);
3. insertion search: try every catalogue pass before every position and keep a strict improvement.
With a guard, a change is kept only when the changed list passes the program's guards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stitchopt.core import IRModule, Objective
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import Baseline
from stitchopt.tune.acceptance import GuardCheck


@dataclass(frozen=True)
class Minimized:
    passes: PassNames
    score: float
    evaluations: int
    complete: bool  # False when the budget ran out before a fixed point


class _Scorer:
    """Scores lists on one program through the evaluator (and so through the cache)."""

    def __init__(
        self, evaluator: Evaluator, module: IRModule, catalogue: Catalogue, objective: Objective, baseline: Baseline
    ):
        self.evaluator, self.module, self.catalogue, self.objective = evaluator, module, catalogue, objective
        self.options = baseline.options
        self.reference = evaluator.evaluate(module, baseline.pipeline, baseline.options)

    def __call__(self, candidates: list[PassNames]) -> list[float]:
        requests = [EvalRequest(self.module, tuned_pipeline(c, self.catalogue), self.options) for c in candidates]
        return [self.objective.score(r, self.reference) for r in self.evaluator.evaluate_many(requests)]


def minimize(
    evaluator: Evaluator,
    module: IRModule,
    passes: PassNames,
    catalogue: Catalogue,
    objective: Objective = Objective(),
    *,
    insertion: bool = True,
    max_evaluations: int = 5000,
    guard: GuardCheck | None = None,
    reference: Baseline | None = None,
) -> Minimized:
    """`reference`: the build scores are relative to, as in `tune` (default -Oz)."""
    score = _Scorer(evaluator, module, catalogue, objective, reference or evaluator.baselines["Oz"])

    def trusted(candidate: PassNames) -> bool:
        return guard is None or not guard(tuned_pipeline(candidate, catalogue))

    return minimize_scored(
        score, passes, catalogue, insertion=insertion, max_evaluations=max_evaluations, trusted=trusted
    )


ListScorer = Callable[[list[PassNames]], list[float]]  # lists -> scores (lower is better)


def minimize_scored(
    score: ListScorer,
    passes: PassNames,
    catalogue: Catalogue,
    *,
    insertion: bool = True,
    max_evaluations: int = 5000,
    trusted: Callable[[PassNames], bool] = lambda candidate: True,
) -> Minimized:
    """The three moves under any scorer: one program's (`minimize`) or a group's (`tune.group`). `trusted` is asked
    only about changes that would be kept."""
    evaluations = 0

    def scored(candidates: list[PassNames]) -> list[float]:
        nonlocal evaluations
        evaluations += len(candidates)
        return score(candidates)

    best = tuple(passes)
    (best_score,) = scored([best])

    def within_budget() -> bool:
        return evaluations < max_evaluations

    changed = True
    while changed and within_budget():
        changed = False
        position = 0
        while position < len(best) and len(best) > 1 and within_budget():  # 1. drop
            candidate = best[:position] + best[position + 1 :]
            (candidate_score,) = scored([candidate])
            if candidate_score <= best_score and trusted(candidate):
                best, best_score, changed = candidate, candidate_score, True
            else:
                position += 1
        swapped = True
        while swapped and within_budget():  # 2. canonical order (one bubble pass at a time)
            swapped = False
            for i in range(len(best) - 1):
                if best[i] > best[i + 1]:
                    candidate = best[:i] + (best[i + 1], best[i]) + best[i + 2 :]
                    (candidate_score,) = scored([candidate])
                    if candidate_score == best_score and trusted(candidate):
                        best, swapped = candidate, True
        if insertion and within_budget():  # 3. insertion, one position per batch
            for position in range(len(best) + 1):
                candidates = [best[:position] + (name,) + best[position:] for name in catalogue.names()]
                scores = scored(candidates)
                ranked = sorted(range(len(candidates)), key=scores.__getitem__)
                winner = next((i for i in ranked if scores[i] < best_score and trusted(candidates[i])), None)
                if winner is not None:
                    best, best_score, changed = candidates[winner], scores[winner], True
                    break
                if not within_budget():
                    break
    return Minimized(best, best_score, evaluations, complete=not changed)
