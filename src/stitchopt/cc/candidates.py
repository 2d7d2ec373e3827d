"""Which pass lists a model build tries on a unit, by mode. -Oz is always built besides them, and the smallest
object wins, so no mode can make an object larger than -Oz.

- `static`: the model's top-ranked list (one extra compilation);
- `jit`: the model's top `k` lists;
- `search`: the answer of a seeded search (`learning.seeded_search`: the model's top `k` lists start a local
  search of `budget` evaluations under the unit's IR guards, not validated), and the model's top list;
- `tune`: the autotuner on the unit within `budget` evaluations, starting from the model's top `k` lists, its
  best list minimized and validated (the default suite, `validate_limit` programs of it), and the model's top
  list: for release builds, where minutes per unit are fine;
- a fixed list (`STITCHOPT_LIST`): that list for every unit, e.g. the answer of `stitchopt broadcast`.

A search that fails (no validation suite can be made, a tool fails) leaves the model's top list and -Oz: the
searching modes are never worse than static.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.cc.settings import SEARCHING, BuildSettings
from stitchopt.core import IRModule
from stitchopt.diagnostics import exception_line
from stitchopt.errors import InputError
from stitchopt.learning.kinds import load_model
from stitchopt.models.list_model import RankedList
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import pipeline_from_text, tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain

TUNE_STRATEGY = "local"  # seeded with the model's top lists and -Oz's own pipeline: the strongest at small budgets


@dataclass(frozen=True)
class Candidates:
    """The pipelines to build besides -Oz, best first (possibly none); `fallback` says why a searching mode
    fell back to the model's choice (such an object is not cached, so that a rebuild searches again)."""

    pipelines: list[str]
    fallback: str | None = None


def candidate_pipelines(
    settings: BuildSettings, toolchain: Toolchain, catalogue: Catalogue, module: IRModule, store: EvaluationStore
) -> Candidates:
    """The lists the settings' mode builds on this unit besides -Oz."""
    if settings.pass_list is not None:
        return Candidates([pipeline_from_text(settings.pass_list, catalogue)])
    if settings.model is None:
        raise InputError("no model to rank lists with: set STITCHOPT_MODEL")
    model = load_model(settings.model, catalogue)
    ranked = cached_rank(model, toolchain, module, store)
    count = settings.k if settings.mode == "jit" else 1
    chosen = [tuned_pipeline(entry.passes, catalogue) for entry in ranked[:count] if entry.passes is not None]
    if settings.mode not in SEARCHING:
        return Candidates(chosen)
    search = _tuned if settings.mode == "tune" else _searched
    try:
        found = search(settings, toolchain, catalogue, module, store, ranked)
    except Exception as error:  # e.g. no validation suite: static's choice still stands
        failed = f"the {settings.mode} search failed ({exception_line(error)})"
        return Candidates(chosen, fallback=f"{failed}: built with the model's choice or -Oz; a rebuild searches again")
    # The model's choice stays a candidate of the searching modes: they are never worse than static.
    return Candidates(list(dict.fromkeys([*found, *chosen])))


def _searched(
    settings: BuildSettings,
    toolchain: Toolchain,
    catalogue: Catalogue,
    module: IRModule,
    store: EvaluationStore,
    ranked: list[RankedList],
) -> list[str]:
    """The answer of a seeded search on this unit (none when nothing beat -Oz)."""
    # Imported here: static and jit builds, one process per compile, should not pay for the search's modules.
    from stitchopt.evaluation.evaluator import Evaluator
    from stitchopt.learning.seeded_search import search_ranked

    with Evaluator(toolchain, store, jobs=1) as evaluator:
        choice = search_ranked(evaluator, catalogue, module, ranked, k=settings.k, budget=settings.budget)
    return [] if choice.passes is None else [choice.pipeline]


def _tuned(
    settings: BuildSettings,
    toolchain: Toolchain,
    catalogue: Catalogue,
    module: IRModule,
    store: EvaluationStore,
    ranked: list[RankedList],
) -> list[str]:
    """The validated answer of a search on this unit from the model's top lists (none when nothing valid beat
    -Oz)."""
    from stitchopt.evaluation.evaluator import Evaluator
    from stitchopt.learning.seeded_search import top_lists
    from stitchopt.tune.acceptance import list_validation, program_guard
    from stitchopt.tune.driver import Budget
    from stitchopt.tune.runtime import attach_probes
    from stitchopt.tune.session import search_and_validate
    from stitchopt.tune.strategies import make_strategy

    with Evaluator(toolchain, store, jobs=1) as evaluator:
        attach_probes(evaluator, module, settings.objective, Path(module.name), None)
        validation = list_validation(evaluator, limit=settings.validate_limit)
        oz_pipeline = evaluator.baselines["Oz"].pipeline
        searcher = make_strategy(TUNE_STRATEGY, catalogue, 0, oz_pipeline, seeds=top_lists(ranked, settings.k))
        _, chosen, _ = search_and_validate(
            evaluator,
            catalogue,
            module,
            searcher,
            objective=settings.objective,
            budget=Budget(evaluations=settings.budget),
            guard=program_guard(evaluator, module),
            validation=validation,
        )
    return [] if chosen is None else [tuned_pipeline(chosen, catalogue)]
