"""Run a strategy on one program: evaluation through the cache, budgets, patience, and -Oz as the backup.

Proposals name the list they derive from (the strategy's base) so that native workers resume them from its module
states. A candidate that would become the best and was resumed is first measured again whole (so that every best
is exact), then passes the program's guards (when given): one that fails is logged as suspicious and scored as a
failure, so the strategy does not climb from a likely miscompile.

Every evaluation goes through the evaluation cache as it finishes, and strategies are seeded and propose in
fixed-size batches, so a run that is killed and started again with the same seed re-proposes the same lists,
finds the finished ones in the cache, and ends with the same result as an uninterrupted run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from stitchopt.core import EvalResult, IRModule, Objective
from stitchopt.evaluation.backend import Screen
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import Baseline
from stitchopt.tune.acceptance import GuardCheck
from stitchopt.tune.strategies import Strategy
from stitchopt.tune.trial_log import RUN_ID_KEY

BATCH_SIZE = 8  # proposals per ask(); fixed so that results do not depend on the number of workers


@dataclass(frozen=True)
class Budget:
    evaluations: int = 1000
    seconds: float | None = None  # a time limit makes a run depend on machine speed, not only on its seed
    patience: int | None = None  # stop after this many evaluations without improvement
    # Screening (size objective, native backend): skip codegen of a candidate whose code-size estimate is more
    # than this share above the best's; it counts as an evaluation that did not improve. None: off.
    screen_margin: float | None = None


@dataclass
class TuningRun:
    """What a run found. `best_passes` is None when nothing beat -Oz (the -Oz backup is the answer). With another
    reference build (`tune(reference=...)`), `oz` holds that build and is the backup."""

    program: str
    objective: Objective
    oz: EvalResult
    best_passes: PassNames | None
    best_result: EvalResult
    best_score: float
    evaluations: int = 0
    seconds: float = 0.0
    curve: list[float] = field(default_factory=list)  # best score so far after each evaluation
    bests: list[tuple[PassNames, float]] = field(default_factory=list)  # every best in turn, the latest last
    suspicious: int = 0  # candidates the guards rejected


def tune(
    evaluator: Evaluator,
    module: IRModule,
    strategy: Strategy,
    catalogue: Catalogue,
    objective: Objective = Objective(),
    budget: Budget = Budget(),
    trial_log: IO[str] | None = None,
    on_progress: Callable[[TuningRun], None] | None = None,
    guard: GuardCheck | None = None,
    run_id: str | None = None,
    reference: Baseline | None = None,
) -> TuningRun:
    """Search `module` within `budget`; each trial goes to `trial_log`, stamped with `run_id` (the run record's).
    `reference`: the build scores are relative to and the backup, whose options every list is built with
    (default -Oz; GPU device code: clang's -O3 device compile)."""
    oz_baseline = reference or evaluator.baselines["Oz"]
    oz = evaluator.evaluate(module, oz_baseline.pipeline, oz_baseline.options)
    run = TuningRun(module.name, objective, oz, None, oz, objective.score(oz, oz))
    start = time.monotonic()
    since_improvement = 0
    while proposals := next_batch(strategy, budget, run.evaluations, time.monotonic() - start, since_improvement):
        pipelines = [tuned_pipeline(passes, catalogue) for passes in proposals]
        # A resumed run's opt seconds are those of the part that ran: a compile-time objective runs lists whole.
        derived_from = None if objective.weighs("compile-time") else strategy.base()
        base = tuned_pipeline(derived_from, catalogue) if derived_from else None
        requests = [EvalRequest(module, p, oz_baseline.options, base) for p in pipelines]
        results = evaluator.evaluate_many(requests, screen=_size_screen(run, budget.screen_margin))
        scores = []
        for passes, pipeline, result in zip(proposals, pipelines, results, strict=True):
            score = objective.score(result, oz)
            if result.resumed and _improves(run, passes, score):
                result = evaluator.remeasure(module, pipeline, oz_baseline.options)
                score = objective.score(result, oz)
            run.evaluations += 1
            since_improvement += 1
            doubts = guard(pipeline) if guard is not None and _improves(run, passes, score) else []
            if doubts:
                run.suspicious += 1
                score = math.inf
            elif _improves(run, passes, score):
                run.best_passes, run.best_result, run.best_score = passes, result, score
                run.bests.append((passes, score))
                since_improvement = 0
            scores.append(score)
            run.curve.append(run.best_score)
            if trial_log is not None:
                trial_log.write(json.dumps(_trial(run, passes, pipeline, result, score, doubts, run_id)) + "\n")
        strategy.tell(list(zip(proposals, scores, strict=True)))
        run.seconds = time.monotonic() - start
        if on_progress is not None:
            on_progress(run)
    run.seconds = time.monotonic() - start
    return run


def next_batch(
    strategy: Strategy, budget: Budget, evaluations: int, seconds: float, since_improvement: int
) -> list[PassNames]:
    """The strategy's next proposals (at most BATCH_SIZE), or none once the budget, the time limit or the
    patience is spent (or the strategy is done)."""
    if evaluations >= budget.evaluations:
        return []
    if budget.seconds is not None and seconds >= budget.seconds:
        return []
    if budget.patience is not None and since_improvement >= budget.patience:
        return []
    return strategy.ask(min(BATCH_SIZE, budget.evaluations - evaluations))


def _size_screen(run: TuningRun, margin: float | None) -> Screen | None:
    """Codegen only for candidates whose code-size estimate is within `margin` of the best's (which stays fixed
    while a batch is evaluated, so screening does not depend on the number of workers)."""
    best = run.best_result.size_estimate
    if margin is None or best is None or not run.objective.size_only:
        return None
    limit = best * (1 + margin)
    return lambda optimized: optimized.size_estimate is None or optimized.size_estimate <= limit


def _improves(run: TuningRun, passes: PassNames, score: float) -> bool:
    return improves(run.best_passes, run.best_score, passes, score)


def improves(best: PassNames | None, best_score: float, passes: PassNames, score: float) -> bool:
    """Better, or as good and shorter."""
    if score < best_score:
        return True
    return score == best_score and best is not None and len(passes) < len(best)


def _trial(
    run: TuningRun,
    passes: PassNames,
    pipeline: str,
    result: EvalResult,
    score: float,
    doubts: list[str],
    run_id: str | None,
) -> dict[str, object]:
    return {
        RUN_ID_KEY: run_id,
        "program": run.program,
        "evaluation": run.evaluations,
        "passes": list(passes),
        "pipeline": pipeline,
        "status": result.status.value,
        "size_bytes": result.size_bytes,
        "ir_instruction_count": result.ir_instruction_count,
        "compile_seconds": result.opt_seconds + result.codegen_seconds,
        "runtime": result.runtime,
        "security": result.security,
        "score": score if math.isfinite(score) else None,
        "best_score": run.best_score,
        "suspicious": doubts,
    }
