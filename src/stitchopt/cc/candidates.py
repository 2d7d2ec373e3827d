"""Which pass lists a model build tries on a unit, by mode. -Oz is always built besides them, and the smallest
object wins, so no mode can make an object larger than -Oz.

- `static`: the model's top-ranked list (one extra compilation);
- `jit`: the model's top `k` lists;
- `search`: the answer of a seeded search (`apply.search`: the model's top `k` lists start a local
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

from stitchopt.apply.modes import MODES
from stitchopt.cache.store import EvaluationStore
from stitchopt.cc.settings import BuildSettings
from stitchopt.core import IRModule
from stitchopt.diagnostics import exception_line
from stitchopt.errors import InputError
from stitchopt.learning.kinds import load_model
from stitchopt.models.list_model import RankedList
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import pipeline_from_text, tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain


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
    mode = MODES[settings.mode]
    chosen = [tuned_pipeline(e.passes, catalogue) for e in ranked[: mode.tried(settings.k)] if e.passes is not None]
    if not mode.searches:
        return Candidates(chosen)
    try:
        found = _searched(settings, toolchain, catalogue, module, store, ranked)
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
    """The answer of the mode's search on this unit: seeded search's, or in tune mode the autotuner's, validated
    (none when nothing, or nothing valid, beat -Oz)."""
    # Imported here: static and jit builds, one process per compile, should not pay for the search's modules.
    from stitchopt.apply.search import search_ranked, tuned_ranked
    from stitchopt.evaluation.evaluator import Evaluator

    with Evaluator(toolchain, store, jobs=1) as evaluator:
        if settings.mode != "tune":
            choice = search_ranked(evaluator, catalogue, module, ranked, k=settings.k, budget=settings.budget)
            return [] if choice.passes is None else [choice.pipeline]
        chosen = tuned_ranked(
            evaluator,
            catalogue,
            module,
            ranked,
            k=settings.k,
            budget=settings.budget,
            objective=settings.objective,
            validate_limit=settings.validate_limit,
        )
    return [] if chosen is None else [tuned_pipeline(chosen, catalogue)]
