"""Broadcast: the most frequent best lists of a run are tried on every program, which keeps any gain.

LLM Compiler's autotuner broadcast its 100 most common best lists to every program; lists that help one
program often help others, and each costs one evaluation per program. A list that would improve a program
must pass that program's guards and, when a validation is given, the full validation (cached per list).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import program_path
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import ListValidation, ProgramRun, program_guard, self_check_for, validation_for
from stitchopt.tune.record import RunRecord
from stitchopt.tune.runtime import attach_probes
from stitchopt.tune.session import replay_command

DEFAULT_TOP = 100


@dataclass(frozen=True)
class BroadcastOutcome:
    record: RunRecord
    candidates: tuple[PassNames, ...]
    changed: int  # programs whose best changed


def most_common_lists(record: RunRecord, top: int = DEFAULT_TOP) -> list[PassNames]:
    counts = Counter(p.passes for p in record.programs if p.passes is not None)
    return [passes for passes, _ in counts.most_common(top)]


def broadcast(
    evaluator: Evaluator,
    catalogue: Catalogue,
    record: RunRecord,
    top: int = DEFAULT_TOP,
    *,
    guards: bool = True,
    validation: ListValidation | None = None,
    program_run: ProgramRun | None = None,
) -> BroadcastOutcome:
    objective = Objective.parse(record.objective)
    candidates = most_common_lists(record, top)
    oz = evaluator.baselines["Oz"]
    updated, changed = [], 0
    for program in record.programs:
        path = program_path(program.program, evaluator.toolchain)
        module = load_module(evaluator.toolchain, path)
        self_check = self_check_for(evaluator, path, program_run, validation)
        guard = program_guard(evaluator, module, self_check) if guards else None
        attach_probes(evaluator, module, objective, path, program_run)
        checks = validation_for(validation, path, program_run)
        reference, current = evaluator.evaluate_many(
            [EvalRequest(module, oz.pipeline, oz.options), EvalRequest(module, program.pipeline, oz.options)]
        )
        best, best_score = program, objective.score(current, reference)
        pipelines = [tuned_pipeline(passes, catalogue) for passes in candidates]
        results = evaluator.evaluate_many([EvalRequest(module, p, oz.options) for p in pipelines])
        for passes, pipeline, result in zip(candidates, pipelines, results, strict=True):
            score = objective.score(result, reference)
            if score >= best_score or (guard is not None and guard(pipeline)):
                continue
            verified = checks.check(pipeline) if checks is not None else None
            if verified is not None and not verified.passed:
                continue
            best_score = score
            best = replace(
                program,
                passes=passes,
                pipeline=pipeline,
                size_bytes=result.size_bytes,
                replay=replay_command(evaluator, pipeline),
                validated=verified is not None,
                validation=verified.note if verified is not None else "",
            )
        changed += best is not program
        updated.append(best)
    return BroadcastOutcome(replace(record, programs=tuple(updated)), tuple(candidates), changed)
