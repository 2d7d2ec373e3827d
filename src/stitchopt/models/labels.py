"""Labels for learned flag tuning: what a pool of pass lists does to every training program.

Labels are the expensive part, so they are made in two plannable stages: a deep search on a sample of programs
proposes the pool (each program's minimized best list), then every list of the pool is evaluated on every
program, with -O0, -Oz and -O3 as baselines. All evaluations go through the evaluation cache, so an interrupted
run resumes. The result is a small gzip'd JSON file that lives in the repository, keyed by benchmark URI and IR
hash and stamped with the toolchain and pass catalogue, so that a new machine retrains without re-tuning (the IR
itself is rebuilt from the dataset's pinned manifest).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.core import EvalResult, EvalStatus, IRModule, Objective
from stitchopt.datasets.catalog import Benchmark
from stitchopt.errors import InputError
from stitchopt.evaluator import EvalRequest, Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.strategies import PassNames, make_strategy
from stitchopt.tune.validation import program_guard

LABELS_FORMAT = 1
BASELINES = ("O0", "Oz", "O3")
OZ = "default<Oz>"
# A list this much smaller than -Oz on one program is checked by that program's IR guards before it counts:
# wins that look too good are usually miscompiles (whole functions folded away).
SUSPICIOUS_RATIO = 0.9
# Passes that can shrink code after -Oz has run (merging, outlining, interprocedural clean-up, inlining with the
# size-tuned inliner) or prepare it for -Oz when run before: the building blocks of lists that help many programs.
AFTER_OZ = (
    "mergefunc", "iroutliner", "hotcoldsplit", "partial-inliner", "constmerge", "globalopt", "globaldce",
    "deadargelim", "ipsccp", "function-attrs", "attributor", "argpromotion", "scc-oz-module-inliner", "inline",
    "simplifycfg", "instcombine", "aggressive-instcombine", "newgvn", "gvn", "gvn-hoist", "dse", "bdce", "adce",
    "sink", "jump-threading", "early-cse", "tailcallelim", "lower-switch", "loop-deletion", "elim-avail-extern",
)  # fmt: skip
BEFORE_OZ = (
    "mergefunc", "attributor", "function-attrs", "ipsccp", "globalopt", "deadargelim", "argpromotion",
    "scc-oz-module-inliner", "partial-inliner", "inline", "sroa", "mem2reg", "simplifycfg", "instcombine",
)  # fmt: skip


@dataclass(frozen=True)
class LabeledProgram:
    """One program's measurements: object bytes, optimized IR instructions and compile seconds (opt + llc) per
    pool list (None: failed). Files written before compile seconds were recorded load with them empty."""

    uri: str
    ir_sha256: str
    package: str
    split: str
    baseline_sizes: dict[str, int]
    baseline_instructions: dict[str, int]
    sizes: tuple[int | None, ...]
    instructions: tuple[int | None, ...]
    baseline_seconds: dict[str, float] = field(default_factory=dict)
    seconds: tuple[float | None, ...] = ()

    def result(self, column: int | None) -> EvalResult:
        """A list's measurements (None: -Oz) as an `EvalResult`, for scoring with an `Objective`."""
        if column is None:
            return EvalResult(EvalStatus.OK, OZ, size_bytes=self.baseline_sizes["Oz"],
                              ir_instruction_count=self.baseline_instructions["Oz"],
                              opt_seconds=self.baseline_seconds.get("Oz", 0.0))  # fmt: skip
        if self.sizes[column] is None:
            return EvalResult(EvalStatus.COMPILE_ERROR, "")
        spent = self.seconds[column] if column < len(self.seconds) else None
        return EvalResult(EvalStatus.OK, "", size_bytes=self.sizes[column],
                          ir_instruction_count=self.instructions[column], opt_seconds=spent or 0.0)  # fmt: skip


@dataclass(frozen=True)
class LabelSet:
    toolchain: str  # `Toolchain.identity` of the LLVM that measured
    catalogue: str  # `Catalogue.identity`: the lists use these spellings
    dataset: str
    lists: tuple[PassNames, ...]
    programs: tuple[LabeledProgram, ...]
    cpu_seconds: float  # opt + llc time of every evaluation behind these labels, search included

    def ratios(self) -> np.ndarray:
        """programs x lists: object size over the -Oz size; infinite where the list failed."""
        matrix = np.full((len(self.programs), len(self.lists)), np.inf)
        for row, program in enumerate(self.programs):
            oz = program.baseline_sizes["Oz"]
            for column, size in enumerate(program.sizes):
                if size is not None:
                    matrix[row, column] = size / oz
        return matrix

    def objective_values(self, objective: Objective) -> np.ndarray:
        """programs x lists: `objective` of each list relative to -Oz (1.0 is -Oz; infinite where it failed)."""
        if objective.needs_runtime:
            raise InputError("labels hold no runtimes: train for size, instructions and compile-time only")
        timed = any(name == "compile-time" and weight > 0 for name, weight in objective.weights)
        if timed and not all(p.seconds and p.baseline_seconds for p in self.programs):
            raise InputError("these labels have no compile times: relabel with this stitchopt (`stitchopt labels`)")
        return np.array([
            [objective.score(p.result(column), p.result(None)) for column in range(len(self.lists))]
            for p in self.programs
        ]).reshape(len(self.programs), len(self.lists))  # fmt: skip

    def subset(self, keep: Callable[[LabeledProgram], bool]) -> LabelSet:
        return LabelSet(
            self.toolchain, self.catalogue, self.dataset, self.lists,
            tuple(p for p in self.programs if keep(p)), self.cpu_seconds,
        )  # fmt: skip

    def save(self, path: Path) -> None:
        data = {"format": LABELS_FORMAT, **asdict(self), "lists": [list(passes) for passes in self.lists]}
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            json.dump(data, handle, separators=(",", ":"))

    @classmethod
    def load(cls, path: Path) -> LabelSet:
        try:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                data: dict[str, Any] = json.load(handle)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a stitchopt labels file ({exc})") from exc
        if data.get("format") != LABELS_FORMAT:
            raise InputError(f"{path}: labels format {data.get('format')}, this stitchopt reads {LABELS_FORMAT}")
        programs = tuple(
            LabeledProgram(**{**p, "sizes": tuple(p["sizes"]), "instructions": tuple(p["instructions"]),
                              "seconds": tuple(p.get("seconds", ()))})  # fmt: skip
            for p in data["programs"]
        )
        lists = tuple(tuple(passes) for passes in data["lists"])
        return cls(data["toolchain"], data["catalogue"], data["dataset"], lists, programs, data["cpu_seconds"])


def broad_lists(catalogue: Catalogue, searched: Sequence[PassNames] = ()) -> tuple[PassNames, ...]:
    """Lists built around -Oz that can help many programs (the -Oz backup keeps the rest safe): -Oz then one
    size pass, one pass then -Oz, -Oz twice and around one pass, and each searched list before and after -Oz.
    Passes this LLVM's catalogue lacks are left out."""
    after = [p for p in AFTER_OZ if catalogue.get(p) is not None]
    before = [p for p in BEFORE_OZ if catalogue.get(p) is not None]
    lists: list[PassNames] = [(OZ, OZ)]
    lists += [(OZ, p) for p in after] + [(p, OZ) for p in before]
    lists += [(OZ, p, OZ) for p in after[:6]]
    lists += [(OZ, *passes) for passes in searched] + [(*passes, OZ) for passes in searched]
    return tuple(dict.fromkeys(lists))


@dataclass(frozen=True)
class Proposal:
    lists: tuple[PassNames, ...]
    cpu_seconds: float  # an upper bound: search wall time times the worker count


def propose_lists(
    evaluator: Evaluator,
    catalogue: Catalogue,
    modules: Sequence[IRModule],
    *,
    strategy: str = "local",
    budget: int = 300,
    seed: int = 0,
    on_program: Callable[[int, IRModule, PassNames | None], None] | None = None,
) -> Proposal:
    """Each program's best list (searched under its IR guards, then minimized), deduplicated, in order."""
    found: dict[PassNames, None] = {}
    seconds = 0.0
    for index, module in enumerate(modules):
        guard = program_guard(evaluator, module)
        searcher = make_strategy(strategy, catalogue, seed, evaluator.baselines["Oz"].pipeline)
        run = tune(evaluator, module, searcher, catalogue, Objective(), Budget(evaluations=budget), guard=guard)
        best = run.best_passes
        if best is not None:
            best = minimize(evaluator, module, best, catalogue, insertion=False, guard=guard).passes
            found.setdefault(best, None)
        seconds += run.seconds
        if on_program is not None:
            on_program(index, module, best)
    return Proposal(tuple(found), seconds * evaluator.jobs)


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

    A program whose -Oz build fails is skipped: it has no reference to be normalized by. A result more than
    10% below -Oz is kept only if the program's IR guards find nothing suspicious; otherwise it is recorded as
    a failure, so that no model learns to predict a miscompile."""
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
    """`results` with the too-good ones (over 10% below -Oz) that fail the program's IR guards turned into
    failures: wins that look too good are usually miscompiles."""
    guard = None
    checked = []
    for result in results:
        if result.ok and result.size_bytes and result.size_bytes < SUSPICIOUS_RATIO * _size(oz):
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



def build_labels(
    evaluator: Evaluator,
    catalogue: Catalogue,
    benchmarks: Sequence[Benchmark],
    *,
    dataset: str,
    pool_programs: int = 40,
    pool_budget: int = 300,
    seed: int = 0,
    extra_lists: Sequence[PassNames] = (),
    broad: bool = True,
    on_stage: Callable[[str, int, int], None] | None = None,
) -> LabelSet:
    """Stage 1 searches the first `pool_programs` benchmarks for the pool (plus `extra_lists` and, with `broad`,
    the `broad_lists` around -Oz); stage 2 labels all of them.

    `on_stage(stage, done, total)` reports progress; give benchmarks in `round_robin` order so that the
    searched sample spans packages."""
    programs = [
        Program(b.uri, b.package, b.split, load_module(evaluator.toolchain, b.path)) for b in benchmarks
    ]
    sample = programs[:pool_programs]

    def searched(index: int, module: IRModule, best: PassNames | None) -> None:
        if on_stage is not None:
            on_stage("search", index + 1, len(sample))

    proposal = propose_lists(
        evaluator, catalogue, [p.module for p in sample], budget=pool_budget, seed=seed, on_program=searched
    )
    pool = tuple(dict.fromkeys([*proposal.lists, *extra_lists]))
    if broad:
        plain = [passes for passes in pool if OZ not in passes]
        pool = tuple(dict.fromkeys([*pool, *broad_lists(catalogue, plain)]))

    def labeled(index: int) -> None:
        if on_stage is not None:
            on_stage("label", index + 1, len(programs))

    rows, cpu = label_programs(evaluator, catalogue, programs, pool, on_program=labeled)
    return LabelSet(evaluator.toolchain.identity, catalogue.identity, dataset, pool, rows, cpu + proposal.cpu_seconds)
