"""The modes that build ranked lists (static and jit): rank, measure what the mode allows, validate, keep the
smallest.

`static` compiles the top-ranked list and, as the backup, -Oz (two compilations; one when -Oz ranks first);
`jit` compiles the top `k` lists and -Oz. The answer is never larger than -Oz, passes the program's guards
(no miscompile signs, no security-relevant code removed relative to -Oz; checked only on lists smaller than
-Oz, best first) and with a validation it is a list that passed it (the next best is tried, then -Oz).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from stitchopt.apply.modes import MODES, RANKED_K
from stitchopt.core import EvalResult, IRModule
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.models.list_model import ListModel, RankedList
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.tune.acceptance import ListValidation, program_guard
from stitchopt.tune.session import first_valid

RANKED_MODES = ("static", "jit")


@dataclass(frozen=True)
class Choice:
    passes: PassNames | None  # None: -Oz
    pipeline: str
    size_bytes: int
    oz_size_bytes: int
    compilations: int
    inference_ms: float
    ranked: tuple[RankedList, ...]
    notes: tuple[str, ...] = ()  # what validation said
    curve: tuple[float, ...] = ()  # seeded search: the best score (size / -Oz) so far after each evaluation


def oz_backup_size(module: IRModule, oz: EvalResult) -> int:
    """-Oz's object size, the backup every mode falls back to; 0 (a file with no code or data, which clang
    builds) is a size like any other."""
    if not oz.ok or oz.size_bytes is None:
        raise InputError(f"{module.name}: -Oz itself fails ({oz.status.value}): {oz.stderr_tail}")
    return oz.size_bytes


def choose(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    module: IRModule,
    *,
    mode: str = "static",
    k: int = RANKED_K,
    validation: ListValidation | None = None,
) -> Choice:
    if mode not in RANKED_MODES:
        raise InputError(f"unknown mode {mode!r}: use static or jit")
    start = time.perf_counter()
    ranked = cached_rank(model, evaluator.toolchain, module, evaluator.store)
    inference_ms = 1000 * (time.perf_counter() - start)
    tried = [entry.passes for entry in ranked[: MODES[mode].tried(k)] if entry.passes is not None]
    oz = evaluator.baselines["Oz"]
    requests = [EvalRequest(module, oz.pipeline, oz.options)]
    requests += [EvalRequest(module, tuned_pipeline(p, catalogue), oz.options) for p in tried]
    results = evaluator.evaluate_many(requests)
    oz_size = oz_backup_size(module, results[0])
    measured = [
        (p, r.size_bytes / oz_size)
        for p, r in zip(tried, results[1:], strict=True)
        if r.ok and r.size_bytes and oz_size  # an empty -Oz object: no list can be smaller
    ]
    guard = program_guard(evaluator, module)
    chosen, notes = first_valid(sorted(measured, key=lambda item: item[1]), catalogue, validation, guard)
    if chosen is None:
        return Choice(None, oz.pipeline, oz_size, oz_size, len(requests), inference_ms, tuple(ranked), tuple(notes))
    size = next(r.size_bytes for p, r in zip(tried, results[1:], strict=True) if p == chosen)
    assert size is not None
    pipeline = tuned_pipeline(chosen, catalogue)
    return Choice(chosen, pipeline, size, oz_size, len(requests), inference_ms, tuple(ranked), tuple(notes))
