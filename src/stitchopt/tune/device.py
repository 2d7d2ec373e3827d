"""Search pass lists for GPU device code: the CPU's search (strategies, driver, minimization) with clang's -O3
device compile as the reference and backup, and ptxas's cubin as the measured object."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stitchopt.core import IRModule, Objective
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import Baseline
from stitchopt.tune.driver import Budget, TuningRun, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.strategies import make_strategy


@dataclass(frozen=True)
class DeviceTuning:
    """The search's best list (None: nothing beat -O3, which is then the answer) and its pipeline."""

    run: TuningRun
    passes: PassNames | None
    pipeline: str
    score: float  # cubin bytes relative to -O3's (1.0: -O3)


def tune_device(
    evaluator: Evaluator,
    module: IRModule,
    catalogue: Catalogue,
    reference: Baseline,
    start: str,
    *,
    strategy: str = "local",
    seed: int = 0,
    budget: Budget = Budget(200),
    minimize_best: bool = True,
    on_progress: Callable[[TuningRun], None] | None = None,
) -> DeviceTuning:
    """`start`: clang's printed device pipeline, whose passes local search starts from."""
    assert catalogue.device, "GPU code is searched with the device catalogue (load_catalogue(device=True))"
    searched = make_strategy(strategy, catalogue, seed, start)
    run = tune(
        evaluator, module, searched, catalogue, Objective(), budget, on_progress=on_progress, reference=reference
    )
    if run.best_passes is None:
        return DeviceTuning(run, None, reference.pipeline, 1.0)
    passes, score = run.best_passes, run.best_score
    if minimize_best:
        shortened = minimize(evaluator, module, passes, catalogue, insertion=False, reference=reference)
        passes, score = shortened.passes, shortened.score
    return DeviceTuning(run, passes, tuned_pipeline(passes, catalogue), score)
