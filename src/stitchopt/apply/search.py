"""Seeded search: the model's top lists start a short local search, so that a program gets most of the
autotuner's gain in tens of compilations instead of hundreds.

The top `k` lists of the model's ranking (-Oz aside), then the flattened -Oz pipeline, are the search's first
proposals and count within its `budget` of evaluations; -Oz itself is compiled once besides, as the backup. So
a run costs at most `budget + 1` compilations, its answer is never larger than -Oz, every best it keeps has
passed the program's IR guards, and with a validation the answer is the best of its bests that passes it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from stitchopt.apply.choose import Choice, oz_backup_size
from stitchopt.apply.modes import SEARCH_BUDGET, SEARCH_K
from stitchopt.core import IRModule, Objective
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.models.list_model import ListModel, RankedList
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.tune.acceptance import ListValidation, list_validation, program_guard
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.runtime import attach_probes
from stitchopt.tune.session import first_valid, search_and_validate
from stitchopt.tune.strategies import make_strategy

STRATEGY = "local"  # the only strategy that starts from given lists; with -Oz's own pipeline among its seeds, the
# strongest at small budgets


def seeded_search(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    module: IRModule,
    *,
    k: int = SEARCH_K,
    budget: int = SEARCH_BUDGET,
    seed: int = 0,
    validation: ListValidation | None = None,
) -> Choice:
    """Rank `module`'s lists with `model` (through the prediction cache), then search from the top `k`."""
    start = time.perf_counter()
    ranked = cached_rank(model, evaluator.toolchain, module, evaluator.store)
    inference_ms = 1000 * (time.perf_counter() - start)
    choice = search_ranked(evaluator, catalogue, module, ranked, k=k, budget=budget, seed=seed, validation=validation)
    return replace(choice, inference_ms=inference_ms)


def top_lists(ranked: Sequence[RankedList], k: int) -> list[PassNames]:
    """The first `k` lists of a ranking that are not -Oz: the seeds of a search."""
    return [entry.passes for entry in ranked if entry.passes is not None][:k]


def search_ranked(
    evaluator: Evaluator,
    catalogue: Catalogue,
    module: IRModule,
    ranked: Sequence[RankedList],
    *,
    k: int = SEARCH_K,
    budget: int = SEARCH_BUDGET,
    seed: int = 0,
    validation: ListValidation | None = None,
) -> Choice:
    """Seeded search from a ranking already made (the evaluation protocol ranks from features it keeps), with
    no inference time of its own."""
    oz = evaluator.baselines["Oz"]
    searcher = make_strategy(STRATEGY, catalogue, seed, oz.pipeline, seeds=top_lists(ranked, k))
    guard = program_guard(evaluator, module)
    run = tune(evaluator, module, searcher, catalogue, budget=Budget(evaluations=budget), guard=guard)
    oz_size = oz_backup_size(module, run.oz)
    chosen, notes = first_valid(list(reversed(run.bests)), catalogue, validation, guard)
    if run.suspicious:
        notes.append(f"{run.suspicious} candidates failed the program's guards")
    compilations = run.evaluations + 1  # and -Oz
    if chosen is None:
        return Choice(
            None, oz.pipeline, oz_size, oz_size, compilations, 0.0, tuple(ranked), tuple(notes), tuple(run.curve)
        )
    pipeline = tuned_pipeline(chosen, catalogue)
    # An earlier best (the latest failed validation) was compiled during the run: the cache answers.
    result = run.best_result if chosen == run.best_passes else evaluator.evaluate(module, pipeline, oz.options)
    assert result.size_bytes is not None  # a best was measured
    return Choice(
        chosen, pipeline, result.size_bytes, oz_size, compilations, 0.0, tuple(ranked), tuple(notes), tuple(run.curve)
    )


def tuned_ranked(
    evaluator: Evaluator,
    catalogue: Catalogue,
    module: IRModule,
    ranked: Sequence[RankedList],
    *,
    k: int,
    budget: int,
    objective: Objective,
    validate_limit: int | None,
) -> PassNames | None:
    """Tune mode, for release builds where minutes per unit are fine: the autotuner on `module` within `budget`
    evaluations from the model's top `k` lists, its best list minimized and validated (the default suite,
    `validate_limit` programs of it); None when nothing valid beat -Oz."""
    attach_probes(evaluator, module, objective, Path(module.name), None)
    validation = list_validation(evaluator, limit=validate_limit)
    oz_pipeline = evaluator.baselines["Oz"].pipeline
    searcher = make_strategy(STRATEGY, catalogue, 0, oz_pipeline, seeds=top_lists(ranked, k))
    _, chosen, _ = search_and_validate(
        evaluator,
        catalogue,
        module,
        searcher,
        objective=objective,
        budget=Budget(evaluations=budget),
        guard=program_guard(evaluator, module),
        validation=validation,
    )
    return chosen
