"""`stitchopt optimize` as one library call: a program, a mode and its settings in; the object written and the
answer (what was chosen, its size against -Oz, its cost, what validation said) out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stitchopt.apply.choose import Choice, choose
from stitchopt.apply.hybrid import HybridChoice, hot_functions, optimize_hybrid, profile_counts
from stitchopt.apply.modes import Mode
from stitchopt.apply.search import seeded_search
from stitchopt.core import IRModule
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.hotpath.predict import predicted_hot_functions
from stitchopt.models.list_model import OZ, ListModel
from stitchopt.passes.catalogue import Catalogue
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import write_object
from stitchopt.tune.acceptance import ListValidation
from stitchopt.tune.session import replay_command


def optimize(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    module: IRModule,
    mode: Mode,
    output: Path,
    *,
    k: int,
    budget: int,
    hot: Sequence[str] = (),
    validation: ListValidation | None = None,
) -> dict[str, Any]:
    """Write `module`'s object built the way `mode` chooses to `output` and return the answer; `budget` is
    search's, `hot` hybrid's functions tuned one by one."""
    oz = evaluator.baselines["Oz"]
    if mode.name == "hybrid":
        data, hybrid = optimize_hybrid(evaluator, catalogue, model, module, hot, k, validation)
        output.write_bytes(data)
        return _hybrid_answer(hybrid, oz.pipeline)
    if mode.name == "search":
        choice = seeded_search(evaluator, catalogue, model, module, k=k, budget=budget, validation=validation)
    else:
        choice = choose(evaluator, catalogue, model, module, mode=mode.name, k=k, validation=validation)
    write_object(evaluator.toolchain, module, choice.pipeline, oz.options, output)
    return _choice_answer(choice, replay_command(evaluator, choice.pipeline))


def hybrid_hot_functions(
    toolchain: Toolchain,
    module: IRModule,
    source: Path,
    *,
    hot: Sequence[str],
    run: Sequence[str] | None,
    hot_from: str,
) -> list[str]:
    """The functions hybrid mode tunes one by one: `hot` when given, else those of a profiled run of the program
    with the arguments `run`, else those `hot_from` predicts."""
    if hot:
        return list(hot)
    if run is not None:
        return hot_functions(profile_counts(toolchain, source, run))
    return predicted_hot_functions(toolchain, module, hot_from)


def _sizes(size: int, oz_size: int, compilations: int, notes: tuple[str, ...]) -> dict[str, Any]:
    """What every mode's answer says: its size against -Oz's (an empty object is 0 B at both), its cost, and
    what validation said."""
    return {
        "size_bytes": size,
        "oz_size_bytes": oz_size,
        "size_change_vs_oz_percent": 100 * (size / oz_size - 1) if oz_size else 0.0,
        "compilations": compilations,
        "notes": list(notes),
    }


def _choice_answer(choice: Choice, replay: str) -> dict[str, Any]:
    """static, jit and search: one list for the whole module, or -Oz; the commands that rebuild the object."""
    return {
        **_sizes(choice.size_bytes, choice.oz_size_bytes, choice.compilations, choice.notes),
        "oz_backup": choice.passes is None,
        "passes": OZ if choice.passes is None else choice.pipeline,
        "replay": replay,
        "inference_ms": choice.inference_ms,
    }


def _hybrid_answer(choice: HybridChoice, oz_pipeline: str) -> dict[str, Any]:
    """hybrid: each part's list (-Oz where it got -Oz's pipeline), or -Oz for the whole module."""
    return {
        **_sizes(choice.size_bytes, choice.oz_size_bytes, choice.compilations, choice.notes),
        "oz_backup": not choice.split_kept,
        "parts": {part: OZ if pipeline == oz_pipeline else pipeline for part, pipeline in choice.lists.items()},
    }
