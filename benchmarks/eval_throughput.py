"""Evaluations per second on a random-search workload over the demo corpus, per backend and worker count.

For each backend (subprocess = opt | llc processes, native = in-process workers) and 1 or 2 workers: a cold
run (empty cache), then the same requests again (warm cache). "LLVM" is LLVM's own work: for the native
backend the parse + passes + bitcode writing and codegen it times in-process; for subprocesses the tools'
wall time minus their start-up on an empty module. "Overhead" is the rest of the workers' wall time
(process start-up, the extra instruction-counting opt run, Python, pipes, the cache).

    python benchmarks/eval_throughput.py [--lists-per-program 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import EvalResult
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import nest
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.toolchain.process import run_tool


def startup_seconds(toolchain: Toolchain, empty: bytes, repeats: int = 15) -> tuple[float, float]:
    """Median wall time of `opt` and `llc` on an empty module: the fixed cost of one process each."""

    def median(argv: list[str]) -> float:
        return statistics.median(run_tool(argv, stdin=empty).seconds for _ in range(repeats))

    return (
        median([toolchain.tool("opt"), "-passes=", "-", "-o", "-"]),
        median([toolchain.tool("llc"), "-filetype=obj", "-", "-o", "-"]),
    )


def random_search_requests(toolchain: Toolchain, lists_per_program: int, seed: int) -> list[EvalRequest]:
    catalogue = load_catalogue(toolchain)
    options = load_baselines(toolchain, ("Oz",))["Oz"].options  # pass lists run as they do in `eval`
    rng = random.Random(seed)
    batch = []
    for path in demo_programs().values():
        module = load_module(toolchain, path)
        for _ in range(lists_per_program):
            pipeline = nest(rng.choices(catalogue.passes, k=rng.randint(1, 50)))
            batch.append(EvalRequest(module, pipeline, options))
    return batch


def llvm_seconds(result: EvalResult, backend: str, startup: tuple[float, float]) -> float:
    if backend == "native":
        return result.opt_seconds + result.codegen_seconds
    ran_llc = result.ok and not result.codegen_cached
    return max(0.0, result.opt_seconds - startup[0]) + (max(0.0, result.codegen_seconds - startup[1]) if ran_llc else 0)


def measure(
    toolchain: Toolchain, batch: list[EvalRequest], backend: str, jobs: int, startup: tuple[float, float]
) -> dict[str, float]:
    with (
        tempfile.TemporaryDirectory() as scratch,
        EvaluationStore(Path(scratch) / "cache.sqlite") as store,
        Evaluator(toolchain, store, jobs=jobs, backend=backend) as evaluator,
    ):
        start = time.perf_counter()
        results = evaluator.evaluate_many(batch)
        cold = time.perf_counter() - start
        skipped = evaluator.counters.codegen_skipped
        start = time.perf_counter()
        evaluator.evaluate_many(batch)
        warm = time.perf_counter() - start
    llvm = sum(llvm_seconds(r, backend, startup) for r in results)
    ok = sum(r.ok for r in results)
    return {
        "cold_rate": len(batch) / cold,
        "warm_rate": len(batch) / warm,
        "skip_rate": skipped / ok if ok else 0.0,
        "overhead": 1 - llvm / (cold * jobs),
        "cold": cold,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists-per-program", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    toolchain = find_toolchain()
    batch = random_search_requests(toolchain, args.lists_per_program, args.seed)
    startup = startup_seconds(toolchain, _empty_module(toolchain))
    runs = {
        (backend, jobs): measure(toolchain, batch, backend, jobs, startup)
        for backend in ("subprocess", "native")
        for jobs in (1, 2)
    }
    rows = [
        [
            backend,
            str(jobs),
            f"{r['cold']:.1f}",
            f"{r['cold_rate']:.1f}",
            f"{r['warm_rate']:,.0f}",
            f"{r['skip_rate']:.1%}",
            f"{r['overhead']:.1%}",
        ]
        for (backend, jobs), r in runs.items()
    ]
    headers = [
        "backend",
        "workers",
        "cold wall s",
        "cold evals/s",
        "warm evals/s",
        "codegen skipped",
        "overhead vs LLVM time",
    ]
    print(
        f"LLVM {toolchain.version_string}; {len(demo_programs())} demo programs x {args.lists_per_program} random "
        f"lists of 1-50 passes (seed {args.seed}) = {len(batch)} evaluations; process start-up: opt "
        f"{startup[0] * 1000:.0f} ms, llc {startup[1] * 1000:.0f} ms\n"
    )
    print(to_markdown(Rows("throughput", headers, rows)))
    native_vs_subprocess = [runs["native", j]["cold_rate"] / runs["subprocess", j]["cold_rate"] for j in (1, 2)]
    scaling = runs["native", 2]["cold_rate"] / runs["native", 1]["cold_rate"]
    print(
        f"\nnative / subprocess: {native_vs_subprocess[0]:.2f}x (1 worker), {native_vs_subprocess[1]:.2f}x "
        f"(2 workers); native 2 workers / 1 worker: {scaling:.2f}x"
    )


def _empty_module(toolchain: Toolchain) -> bytes:
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "empty.c"
        source.write_text("int stitchopt_empty;\n")
        return load_module(toolchain, source).bitcode


if __name__ == "__main__":
    main()
