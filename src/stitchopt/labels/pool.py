"""Pool labels, the older single-file labels (`stitchopt labels pool`): what a pool of pass lists does to every
training program.

Labels are the expensive part, so they are made in two plannable stages: a deep search on a sample of programs
proposes the pool (each program's minimized best list), then every list of the pool is evaluated on every
program, with -O0, -Oz and -O3 as baselines. All evaluations go through the evaluation cache, so an interrupted
run resumes. The result is a small gzip'd JSON file that lives in the repository, keyed by benchmark URI and IR
hash and stamped with the toolchain and pass catalogue, so that a new machine retrains without re-tuning (the IR
itself is rebuilt from the dataset's pinned manifest).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stitchopt.core import IRModule, Objective
from stitchopt.datasets.benchmarks import Benchmark
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.labelset import OZ, LabelSet
from stitchopt.labels.measure import Program, label_programs
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import program_guard
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.strategies import make_strategy

# Passes that can shrink code after -Oz has run (merging, outlining, interprocedural clean-up, inlining with the
# size-tuned inliner) or prepare it for -Oz when run before: the building blocks of lists that help many programs.
AFTER_OZ = (
    "mergefunc",
    "iroutliner",
    "hotcoldsplit",
    "partial-inliner",
    "constmerge",
    "globalopt",
    "globaldce",
    "deadargelim",
    "ipsccp",
    "function-attrs",
    "attributor",
    "argpromotion",
    "scc-oz-module-inliner",
    "inline",
    "simplifycfg",
    "instcombine",
    "aggressive-instcombine",
    "newgvn",
    "gvn",
    "gvn-hoist",
    "dse",
    "bdce",
    "adce",
    "sink",
    "jump-threading",
    "early-cse",
    "tailcallelim",
    "lower-switch",
    "loop-deletion",
    "elim-avail-extern",
)
BEFORE_OZ = (
    "mergefunc",
    "attributor",
    "function-attrs",
    "ipsccp",
    "globalopt",
    "deadargelim",
    "argpromotion",
    "scc-oz-module-inliner",
    "partial-inliner",
    "inline",
    "sroa",
    "mem2reg",
    "simplifycfg",
    "instcombine",
)


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
    programs = [Program(b.uri, b.package, b.split, load_module(evaluator.toolchain, b.path)) for b in benchmarks]
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
