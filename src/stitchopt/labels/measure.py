"""Measuring a pool of lists on programs: one labels row per program, the baselines beside the lists.

Both ways labels are made end here: the pool labels (`labels.pool`) and the broadcast matrix (`labels.matrix`).
Wins over -Oz are kept only when the program's guards trust them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from stitchopt.core import EvalResult, EvalStatus, IRModule
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.labels.labelset import LabeledProgram
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.tune.acceptance import program_guard

BASELINES = ("O0", "Oz", "O3")


@dataclass(frozen=True)
class Program:
    """A program to label: where it comes from and its IR."""

    uri: str
    package: str
    split: str
    module: IRModule


def label_programs(
    evaluator: Evaluator,
    catalogue: Catalogue,
    programs: Sequence[Program],
    lists: Sequence[PassNames],
    *,
    on_program: Callable[[int], None] | None = None,
) -> tuple[tuple[LabeledProgram, ...], float]:
    """Evaluate every list (and the baselines) on every program; return the labels and their CPU seconds.

    A program whose -Oz build fails is skipped: it has no reference to be normalized by. A result below -Oz is
    kept only if the program's guards find nothing suspicious (no miscompile signs, no security-relevant code
    removed relative to -Oz); otherwise it is recorded as a failure, so that no model learns to predict one."""
    options = evaluator.baselines["Oz"].options
    pipelines = [tuned_pipeline(passes, catalogue) for passes in lists]
    labeled: list[LabeledProgram] = []
    cpu = 0.0
    for index, program in enumerate(programs):
        baseline_requests = [
            EvalRequest(program.module, evaluator.baselines[name].pipeline, evaluator.baselines[name].options)
            for name in BASELINES
        ]
        requests = baseline_requests + [EvalRequest(program.module, p, options) for p in pipelines]
        results = evaluator.evaluate_many(requests)
        cpu += sum(r.opt_seconds + r.codegen_seconds for r in results)
        baselines = dict(zip(BASELINES, results[: len(BASELINES)], strict=True))
        if all(r.ok and r.size_bytes for r in baselines.values()):
            rest = distrust_suspicious(evaluator, program.module, results[len(BASELINES) :], baselines["Oz"])
            labeled.append(
                LabeledProgram(
                    uri=program.uri,
                    ir_sha256=program.module.sha256,
                    package=program.package,
                    split=program.split,
                    baseline_sizes={name: _size(r) for name, r in baselines.items()},
                    baseline_instructions={name: r.ir_instruction_count or 0 for name, r in baselines.items()},
                    sizes=tuple(r.size_bytes if r.ok else None for r in rest),
                    instructions=tuple(r.ir_instruction_count if r.ok else None for r in rest),
                    baseline_seconds={name: _seconds(r) for name, r in baselines.items()},
                    seconds=tuple(_seconds(r) if r.ok else None for r in rest),
                )
            )
        if on_program is not None:
            on_program(index)
    return tuple(labeled), cpu


def distrust_suspicious(
    evaluator: Evaluator, module: IRModule, results: list[EvalResult], oz: EvalResult
) -> list[EvalResult]:
    """`results` with the wins (smaller than -Oz) that fail the program's guards turned into failures: wins that
    look too good are usually miscompiles, and a small one may be a secret's clear deleted. The guards cost one
    `opt -S` per win (and two per program that has one)."""
    guard = None
    checked = []
    for result in results:
        if result.ok and result.size_bytes and result.size_bytes < _size(oz):
            guard = guard or program_guard(evaluator, module)
            reasons = guard(result.pipeline)
            if reasons:
                result = replace(result, status=EvalStatus.COMPILE_ERROR, stderr_tail=f"guard: {reasons[0]}")
        checked.append(result)
    return checked


def _seconds(result: EvalResult) -> float:
    """opt + llc seconds, to 0.1 ms (finer is noise, and keeps the labels file small)."""
    return round(result.opt_seconds + result.codegen_seconds, 4)


def _size(result: EvalResult) -> int:
    assert result.size_bytes is not None  # checked by the caller
    return result.size_bytes
