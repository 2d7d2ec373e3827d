"""GPU kernels measured without a GPU: device pass lists against clang's -O3 device compile on the project's own
kernels (src/stitchopt/datasets/kernels_v1), per kernel, held-out families by default.

Each kernel is its own unit (the file's other kernels deleted, every other symbol as in the file, so -O3 builds
it exactly as in the whole file). Per kernel of `--split`, a local search (`--budget` evaluations, seeded by
clang's printed -O3 device pipeline: `stitchopt gpu tune`'s search) minimizes the cubin's size, and its
minimized best is kept only when ptxas reports it no worse than -O3 in SASS bytes, registers, spills and stack:
the autotuner. With `--pool-from train`, the same search on every kernel of the train families gives a pool of
lists, and two choices made from the train kernels alone are applied to the held-out ones: `static`, the one
list better than -O3 (and worse nowhere) on the most train kernels, and `jit k`, the best of the k lists that
are so most often; each kept only when no worse than -O3 (else -O3: the backup). A kernel counts as better
when its answer is smaller or uses fewer registers. No run on a GPU checks these lists here: the wins are
static and unverified until the timing script runs them.

    python benchmarks/gpu_static.py [--split test] [--budget 300] [--pool-from train] [--jit-k 3] [--seed 0]
        [--jobs 0] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.core import CompileOptions, IRModule
from stitchopt.datasets.kernels import kernel_sources
from stitchopt.errors import StitchoptError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.cuda import find_cuda
from stitchopt.toolchain.device import (
    KernelMeasure,
    build_device,
    cuda_device_ir,
    device_baseline,
    device_options,
    kernel_names,
    kernel_unit,
    printed_device_pipeline,
)
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import disassemble, module_from_bitcode
from stitchopt.tune.device import no_worse, tune_device
from stitchopt.tune.driver import Budget


@dataclass(frozen=True)
class Unit:
    family: str
    kernel: str
    module: IRModule
    options: CompileOptions
    o3: KernelMeasure


@dataclass(frozen=True)
class Answer:
    """What a method builds for one kernel: SASS bytes and registers, and whether it is a list (not -O3)."""

    sass: int
    registers: int
    pipeline: str | None  # None: -O3

    def better_than(self, o3: KernelMeasure) -> bool:
        return self.pipeline is not None and (self.sass < o3.sass_bytes or self.registers < o3.resources.registers)


def units(toolchain: Toolchain, split: str) -> list[Unit]:
    cuda, found = find_cuda(), []
    for source in kernel_sources(split):
        bitcode = cuda_device_ir(toolchain, cuda, source)
        text = disassemble(toolchain, bitcode, source.name)
        options = device_options(text, cuda)
        for kernel in kernel_names(text):
            unit = kernel_unit(toolchain, bitcode, kernel)
            o3 = build_device(toolchain, unit, device_baseline(options).pipeline, options).kernels[kernel]
            found.append(Unit(source.stem, kernel, module_from_bitcode(toolchain, unit, kernel), options, o3))
    return found


def measure(toolchain: Toolchain, unit: Unit, pipeline: str) -> KernelMeasure | None:
    """The kernel built with `pipeline`, or None when the list cannot build it."""
    try:
        return build_device(toolchain, unit.module.bitcode, pipeline, unit.options).kernels[unit.kernel]
    except StitchoptError:
        return None


def kept(unit: Unit, pipeline: str, built: KernelMeasure | None) -> Answer:
    """The list's build when it is no worse than -O3 anywhere and better somewhere, else -O3."""
    if built is not None and no_worse(built, unit.o3):
        answer = Answer(built.sass_bytes, built.resources.registers, pipeline)
        if answer.better_than(unit.o3):
            return answer
    return Answer(unit.o3.sass_bytes, unit.o3.resources.registers, None)


def search_all(
    evaluator: Evaluator, catalogue: Catalogue, start: str, found: list[Unit], budget: int, seed: int
) -> list[Answer]:
    answers = []
    for unit in found:
        result = tune_device(
            evaluator, unit.module, catalogue, device_baseline(unit.options), start, seed=seed, budget=Budget(budget)
        )
        answers.append(kept(unit, result.pipeline, result.answer.kernels[unit.kernel] if result.passes else None))
        print(f"{unit.family} {unit.kernel}: {unit.o3.sass_bytes} -> {answers[-1].sass} SASS bytes", file=sys.stderr)
    return answers


def ranked_pool(toolchain: Toolchain, train: list[Unit], lists: list[str]) -> list[str]:
    """The pool's lists, those better than -O3 (and worse nowhere) on the most train kernels first; ties by
    the geomean SASS they give the train kernels (with -O3 as backup)."""

    def score(pipeline: str) -> tuple[int, float]:
        answers = [kept(unit, pipeline, measure(toolchain, unit, pipeline)) for unit in train]
        wins = sum(a.better_than(u.o3) for a, u in zip(answers, train, strict=True))
        return -wins, sum(math.log(a.sass / u.o3.sass_bytes) for a, u in zip(answers, train, strict=True))

    scores = {pipeline: score(pipeline) for pipeline in lists}
    return sorted(lists, key=scores.__getitem__)


def chosen(toolchain: Toolchain, unit: Unit, candidates: list[str]) -> Answer:
    """The smallest kept answer among `candidates` (-O3 when none is kept)."""
    answers = [kept(unit, p, measure(toolchain, unit, p)) for p in candidates]
    return min(answers, key=lambda a: (a.pipeline is None, a.sass, a.registers))


def summary(name: str, held_out: list[Unit], answers: list[Answer]) -> str:
    better = sum(a.better_than(u.o3) for a, u in zip(answers, held_out, strict=True))
    logs = [math.log(a.sass / u.o3.sass_bytes) for a, u in zip(answers, held_out, strict=True)]
    return (
        f"{name}: {better} of {len(held_out)} kernels better ({100 * better / len(held_out):.0f}%), none worse; "
        f"geomean SASS {100 * (math.exp(sum(logs) / len(logs)) - 1):+.2f}%"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--pool-from", default=None, choices=("train",), help="search these kernels for a list pool")
    parser.add_argument("--jit-k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=0, help="concurrent evaluations (0: all cores)")
    parser.add_argument("--json", type=str, default=None, help="write the per-kernel results here")
    args = parser.parse_args()
    toolchain = find_toolchain()
    catalogue = load_catalogue(toolchain, device=True)
    start = printed_device_pipeline(toolchain)
    began = time.monotonic()
    held_out = units(toolchain, args.split)
    methods: dict[str, list[Answer]] = {}
    with Evaluator(toolchain, EvaluationStore(store_path()), jobs=args.jobs or None) as evaluator:
        methods["search"] = search_all(evaluator, catalogue, start, held_out, args.budget, args.seed)
        if args.pool_from:
            train = units(toolchain, args.pool_from)
            pool = search_all(evaluator, catalogue, start, train, args.budget, args.seed)
            lists = sorted({a.pipeline for a in pool if a.pipeline is not None})
            ranked = ranked_pool(toolchain, train, lists)
            pick: Callable[[Unit, int], Answer] = lambda unit, k: chosen(toolchain, unit, ranked[:k])  # noqa: E731
            methods["static"] = [pick(unit, 1) for unit in held_out]
            methods[f"jit k={args.jit_k}"] = [pick(unit, args.jit_k) for unit in held_out]
            print(f"pool: {len(lists)} lists from {len(train)} train kernels", file=sys.stderr)
    seconds = time.monotonic() - began
    rows = [
        [unit.family, unit.kernel, f"{unit.o3.sass_bytes} / {unit.o3.resources.registers}"]
        + [
            f"{100 * (a.sass / unit.o3.sass_bytes - 1):+.1f}% / {a.registers}" if a.pipeline else "-O3"
            for a in (answers[i] for answers in methods.values())
        ]
        for i, unit in enumerate(held_out)
    ]
    title = f"{args.split} kernels: SASS change and registers vs clang -O3 (static measures, unverified on a GPU)"
    print(to_markdown(Rows(title, ["family", "kernel", "-O3 SASS / registers", *methods], rows)))
    print()
    for name, answers in methods.items():
        print(summary(name, held_out, answers))
    print(f"{seconds / 60:.1f} min")
    if args.json:
        document = {
            "split": args.split,
            "budget": args.budget,
            "seconds": seconds,
            "kernels": [
                {"family": u.family, "kernel": u.kernel, **{m: asdict(a[i]) for m, a in methods.items()}}
                for i, u in enumerate(held_out)
            ],
        }
        with open(args.json, "w") as out:
            json.dump(document, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
