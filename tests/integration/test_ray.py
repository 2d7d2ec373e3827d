"""`--backend ray` on a local Ray instance: the same results as the reference backend, and a tuning run."""

from __future__ import annotations

import random

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.evaluation.subprocess_backend import SubprocessBackend
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import nest
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.strategies import make_strategy

pytest.importorskip("ray")


@pytest.mark.slow
def test_ray_backend_matches_the_reference_and_tunes(
    toolchain: Toolchain, catalogue: Catalogue, loop_sum: IRModule, store: EvaluationStore
) -> None:
    rng = random.Random(3)
    pipelines = [nest(rng.choices(catalogue.passes, k=rng.randint(1, 30))) for _ in range(12)]
    with Evaluator(toolchain, store, backend="ray", jobs=2) as evaluator:
        assert evaluator.backend.name == "ray" and evaluator.jobs == 2
        options = evaluator.baselines["Oz"].options
        on_ray = [evaluator.evaluate(loop_sum, p, options) for p in pipelines]
        searcher = make_strategy("random", catalogue, 1, evaluator.baselines["Oz"].pipeline)
        run = tune(evaluator, loop_sum, searcher, catalogue, budget=Budget(16))
    reference = SubprocessBackend(toolchain)
    for pipeline, remote in zip(pipelines, on_ray, strict=True):
        local = reference.evaluate(loop_sum, pipeline, options)
        assert (remote.status, remote.size_bytes, remote.ir_instruction_count) == (
            local.status,
            local.size_bytes,
            local.ir_instruction_count,
        )
    assert run.evaluations == 16 and run.best_score <= 1.0
