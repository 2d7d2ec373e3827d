"""Measuring a pool of lists on programs: one labels row per program, the baselines beside the lists.

Both ways labels are made end here: the pool labels (`labels.pool`) and the broadcast matrix (`labels.matrix`).
Wins over -Oz are kept only when the program's guards trust them.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from stitchopt.core import EvalResult, EvalStatus, IRModule
from stitchopt.datasets.benchmarks import Benchmark
from stitchopt.errors import StitchoptError
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.labels.labelset import LabeledProgram
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import program_guard

BASELINES = ("O0", "Oz", "O3")

# A list's measures on one program: object bytes, optimized IR instructions, opt + llc seconds (None: failed).
ListMeasure = tuple[int | None, int | None, float | None]


@dataclass(frozen=True)
class Program:
    """A program to label: where it comes from and its IR."""

    uri: str
    package: str
    split: str
    module: IRModule


def load_programs(toolchain: Toolchain, benchmarks: Iterable[Benchmark]) -> Iterator[Program]:
    """Dataset units as programs, loaded one at a time as they are used; one unreadable unit costs that unit
    (a warning), not the run."""
    for benchmark in benchmarks:
        try:
            module = load_module(toolchain, benchmark.path)
        except StitchoptError as error:
            warnings.warn(f"{benchmark.uri} skipped: {error}", stacklevel=2)
            continue
        yield Program(benchmark.uri, benchmark.package, benchmark.split, module)


@dataclass
class KnownRow:
    """What earlier matrices measured on one program (same IR, toolchain and catalogue): a row of theirs, for
    the baselines, and each list one of them built (failures left out: they are measured again, under today's
    guards). Sizes depend only on those; the guards' verdicts on wins are the ones of the stitchopt that made
    the rows."""

    row: LabeledProgram
    lists: dict[PassNames, ListMeasure] = field(default_factory=dict)


def label_programs(
    evaluator: Evaluator,
    catalogue: Catalogue,
    programs: Sequence[Program],
    lists: Sequence[PassNames],
    *,
    known: Mapping[tuple[str, str], KnownRow] | None = None,
    on_program: Callable[[int], None] | None = None,
) -> tuple[tuple[LabeledProgram, ...], float]:
    """Evaluate every list (and the baselines) on every program; return the labels and the CPU seconds spent.
    What `known` holds for a program (by URI and IR hash) is taken as it is: its baselines and lists are not
    evaluated again.

    A program whose -Oz build fails is skipped: it has no reference to be normalized by. A result below -Oz is
    kept only if the program's guards find nothing suspicious (no miscompile signs, no security-relevant code
    removed relative to -Oz); otherwise it is recorded as a failure, so that no model learns to predict one."""
    options = evaluator.baselines["Oz"].options
    rows_before = known or {}
    labeled: list[LabeledProgram] = []
    cpu = 0.0
    for index, program in enumerate(programs):
        earlier = rows_before.get((program.uri, program.module.sha256))
        fresh = [passes for passes in lists if earlier is None or passes not in earlier.lists]
        baseline_requests = (
            []
            if earlier is not None
            else [
                EvalRequest(program.module, evaluator.baselines[name].pipeline, evaluator.baselines[name].options)
                for name in BASELINES
            ]
        )
        requests = baseline_requests + [
            EvalRequest(program.module, tuned_pipeline(passes, catalogue), options) for passes in fresh
        ]
        results = evaluator.evaluate_many(requests) if requests else []
        cpu += sum(r.opt_seconds + r.codegen_seconds for r in results)
        row = earlier.row if earlier is not None else _baseline_row(program, results[: len(BASELINES)])
        if row is not None:
            rest = distrust_suspicious(
                evaluator, program.module, results[len(baseline_requests) :], row.baseline_sizes["Oz"]
            )
            measures = {**(earlier.lists if earlier else {}), **dict(zip(fresh, map(_measure, rest), strict=True))}
            columns = [measures[passes] for passes in lists]
            labeled.append(
                replace(
                    row,
                    package=program.package,
                    split=program.split,
                    sizes=tuple(size for size, _, _ in columns),
                    instructions=tuple(count for _, count, _ in columns),
                    seconds=tuple(seconds for _, _, seconds in columns),
                )
            )
        if on_program is not None:
            on_program(index)
    return tuple(labeled), cpu


def list_measures(row: LabeledProgram, lists: Sequence[PassNames]) -> dict[PassNames, ListMeasure]:
    """A row's measures by list (`lists`: its label set's columns), failures left out; nothing for a row whose
    columns do not match `lists` or that has no compile seconds (written before they were recorded)."""
    if not (len(row.sizes) == len(row.instructions) == len(row.seconds) == len(lists)):
        return {}
    columns = zip(lists, row.sizes, row.instructions, row.seconds, strict=True)
    return {passes: (size, count, seconds) for passes, size, count, seconds in columns if size is not None}


def _baseline_row(program: Program, baselines: Sequence[EvalResult]) -> LabeledProgram | None:
    """A row with `program`'s baselines measured (its lists to be filled in); None where one failed."""
    if not all(r.ok and r.size_bytes for r in baselines):
        return None
    by_name = dict(zip(BASELINES, baselines, strict=True))
    return LabeledProgram(
        uri=program.uri,
        ir_sha256=program.module.sha256,
        package=program.package,
        split=program.split,
        baseline_sizes={name: _size(r) for name, r in by_name.items()},
        baseline_instructions={name: r.ir_instruction_count or 0 for name, r in by_name.items()},
        sizes=(),
        instructions=(),
        baseline_seconds={name: _seconds(r) for name, r in by_name.items()},
    )


def _measure(result: EvalResult) -> ListMeasure:
    if not result.ok:
        return None, None, None
    return result.size_bytes, result.ir_instruction_count, _seconds(result)


def distrust_suspicious(
    evaluator: Evaluator, module: IRModule, results: Sequence[EvalResult], oz_size: int
) -> list[EvalResult]:
    """`results` with the wins (smaller than -Oz) that fail the program's guards turned into failures: wins that
    look too good are usually miscompiles, and a small one may be a secret's clear deleted. The guards cost one
    `opt -S` per win (and two per program that has one)."""
    guard = None
    checked = []
    for result in results:
        if result.ok and result.size_bytes and result.size_bytes < oz_size:
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
