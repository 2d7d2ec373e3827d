"""GPU kernels measured without a GPU: how a device pass-list search does against clang's -O3 device compile on
the project's own kernels (src/stitchopt/datasets/kernels_v1, held-out families by default), per kernel.

Each kernel is its own unit (the file's other kernels deleted, every other symbol as in the file, so -O3 builds
it exactly as in the whole file). A local search (`--budget` evaluations, seeded by clang's printed -O3 device
pipeline) minimizes the kernel's cubin size (`stitchopt gpu tune`'s search); its minimized best is kept only
when ptxas reports it no worse than -O3 in SASS bytes, registers, spills and stack (else -O3 is the answer). A
kernel counts as better when it is kept and smaller or uses fewer registers. No run on a GPU checks these lists
here: the wins are static and unverified until the timing script runs them.

    python benchmarks/gpu_static.py [--split test] [--budget 300] [--seed 0] [--jobs 0] [--json F]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.datasets.kernels import kernel_sources
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.cuda import find_cuda
from stitchopt.toolchain.device import (
    cuda_device_ir,
    device_baseline,
    device_options,
    kernel_names,
    kernel_unit,
    printed_device_pipeline,
)
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import disassemble, module_from_bitcode
from stitchopt.tune.device import tune_device
from stitchopt.tune.driver import Budget


@dataclass(frozen=True)
class KernelResult:
    family: str
    kernel: str
    o3_sass: int
    o3_registers: int
    best_sass: int
    best_registers: int
    kept: bool  # the search's list is the answer (no measure worse than -O3)
    evaluations: int
    pipeline: str

    @property
    def better(self) -> bool:
        return self.kept and (self.best_sass < self.o3_sass or self.best_registers < self.o3_registers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=0, help="concurrent evaluations (0: all cores)")
    parser.add_argument("--json", type=str, default=None, help="write the per-kernel results here")
    args = parser.parse_args()
    toolchain, cuda = find_toolchain(), find_cuda()
    catalogue = load_catalogue(toolchain, device=True)
    start = printed_device_pipeline(toolchain)
    results: list[KernelResult] = []
    began = time.monotonic()
    with Evaluator(toolchain, EvaluationStore(store_path()), jobs=args.jobs or None) as evaluator:
        for source in kernel_sources(args.split):
            bitcode = cuda_device_ir(toolchain, cuda, source)
            text = disassemble(toolchain, bitcode, source.name)
            options = device_options(text, cuda)
            reference = device_baseline(options)
            for kernel in kernel_names(text):
                unit = kernel_unit(toolchain, bitcode, kernel)
                module = module_from_bitcode(toolchain, unit, f"{source.stem}:{kernel}")
                found = tune_device(
                    evaluator, module, catalogue, reference, start, seed=args.seed, budget=Budget(args.budget)
                )
                o3, answer = found.reference.kernels[kernel], found.answer.kernels[kernel]
                results.append(
                    KernelResult(
                        source.stem,
                        kernel,
                        o3.sass_bytes,
                        o3.resources.registers,
                        answer.sass_bytes,
                        answer.resources.registers,
                        found.passes is not None,
                        found.run.evaluations,
                        found.pipeline,
                    )
                )
                print(f"{source.stem} {kernel}: {o3.sass_bytes} -> {answer.sass_bytes} SASS bytes", file=sys.stderr)
    seconds = time.monotonic() - began
    geomean = math.exp(sum(math.log(r.best_sass / r.o3_sass) for r in results) / len(results)) - 1
    better = sum(r.better for r in results)
    rows = [
        [
            r.family,
            r.kernel,
            str(r.o3_sass),
            str(r.best_sass),
            f"{100 * (r.best_sass / r.o3_sass - 1):+.1f}%",
            f"{r.o3_registers} -> {r.best_registers}",
            "better" if r.better else "same (-O3)" if not r.kept else "same",
        ]
        for r in results
    ]
    table = Rows(
        f"{args.split} families, local search {args.budget} evaluations per kernel (static, unverified on a GPU)",
        ["family", "kernel", "-O3 SASS bytes", "best", "change", "registers", "verdict"],
        rows,
    )
    print(to_markdown(table))
    print(
        f"\n{better} of {len(results)} kernels better ({100 * better / len(results):.0f}%), none worse (backup); "
        f"geomean SASS {100 * geomean:+.2f}%; {seconds / 60:.1f} min"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {
                    "split": args.split,
                    "budget": args.budget,
                    "seconds": seconds,
                    "kernels": [asdict(r) for r in results],
                },
                out,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
