"""Evaluations per second on the demo corpus, cold and warm cache, and where the wall time goes.

"Outside LLVM" is everything but LLVM's own work: process start-up of `opt` and `llc` (measured on an empty
module), Python, pipes and the cache. LLVM's work per evaluation = tool wall time minus that start-up.

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
from stitchopt.evaluator import EvalRequest, Evaluator
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import nest
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import compile_source, load_module
from stitchopt.toolchain.process import run_tool


def startup_seconds(toolchain: Toolchain, repeats: int = 15) -> tuple[float, float]:
    """Median wall time of `opt` and `llc` on an empty module: the fixed cost of one process each."""
    empty = empty_module(toolchain)
    opt = [run_tool([toolchain.tool("opt"), "-passes=", "-", "-o", "-"], stdin=empty).seconds for _ in range(repeats)]
    llc = [
        run_tool([toolchain.tool("llc"), "-filetype=obj", "-", "-o", "-"], stdin=empty).seconds for _ in range(repeats)
    ]
    return statistics.median(opt), statistics.median(llc)


def empty_module(toolchain: Toolchain) -> bytes:
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "empty.c"
        source.write_text("int stitchopt_empty;\n")
        return compile_source(toolchain, source)


def requests(toolchain: Toolchain, lists_per_program: int, seed: int) -> list[EvalRequest]:
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


def run(toolchain: Toolchain, batch: list[EvalRequest], jobs: int, cache: Path) -> tuple[float, list[EvalResult]]:
    with EvaluationStore(cache) as store:
        evaluator = Evaluator(toolchain, store, jobs=jobs)
        start = time.perf_counter()
        results = evaluator.evaluate_many(batch)
        return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lists-per-program", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    toolchain = find_toolchain()
    opt_start, llc_start = startup_seconds(toolchain)
    batch = requests(toolchain, args.lists_per_program, args.seed)
    rows = []
    for jobs in (1, 2):
        with tempfile.TemporaryDirectory() as scratch:
            cache = Path(scratch) / "cache.sqlite"
            cold_wall, results = run(toolchain, batch, jobs, cache)
            warm_wall, _ = run(toolchain, batch, jobs, cache)
        llvm = sum(
            max(0.0, r.opt_seconds - opt_start) + (max(0.0, r.codegen_seconds - llc_start) if r.ok else 0.0)
            for r in results
        )
        outside = 1 - llvm / (cold_wall * jobs)
        rows.append([f"cold cache, {jobs} job(s)", str(len(batch)), f"{cold_wall:.1f}", f"{len(batch) / cold_wall:.1f}",
                     f"{outside:.0%}"])
        rows.append([f"warm cache, {jobs} job(s)", str(len(batch)), f"{warm_wall:.2f}",
                     f"{len(batch) / warm_wall:,.0f}", "-"])
    print(f"LLVM {toolchain.version_string}; {len(demo_programs())} demo programs x {args.lists_per_program} random "
          f"lists of 1-50 passes (seed {args.seed}); start-up: opt {opt_start * 1000:.0f} ms, llc "
          f"{llc_start * 1000:.0f} ms per process\n")
    headers = ["run", "evaluations", "wall s", "evaluations/s", "wall time outside LLVM"]
    print(to_markdown(Rows("throughput", headers, rows)))


if __name__ == "__main__":
    main()
