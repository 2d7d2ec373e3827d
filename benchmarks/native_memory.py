"""Resident memory of one native worker over many evaluations (it must stay flat, or within the prefix cache's
bound when searches resume from bases).

python benchmarks/native_memory.py [--evaluations 10000] [--prefix-cache-mb 32]

With --prefix-cache-mb, the evaluations are what a local search sends: mutants of a base pipeline, named as their
base, with a new base (one of the mutants) every 10 evaluations, so that the cache fills, evicts and must stay
within its bound.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Iterator
from pathlib import Path

from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.native.pool import NativeBackend
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.strategies import LocalSearch, flatten_pipeline

PIPELINES = ("function(sroa)", "function(instcombine<no-verify-fixpoint>,simplifycfg)", "globaldce", "default<Oz>")
PROGRAM = "ring_buffer"  # the smallest demo program: many evaluations per second
REBASE_EVERY = 10


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


def cycling() -> Iterator[tuple[str, str | None]]:
    while True:
        yield from ((pipeline, None) for pipeline in PIPELINES)


def searching(toolchain: Toolchain) -> Iterator[tuple[str, str | None]]:
    """(pipeline, base) pairs as a local search sends them, its best replaced every REBASE_EVERY evaluations."""
    catalogue = load_catalogue(toolchain)
    seed = flatten_pipeline(load_baselines(toolchain, ("Oz",))["Oz"].pipeline, catalogue)
    search = LocalSearch(catalogue.names(), random.Random(0), [seed], explore=0.0)
    while True:
        mutants = [search._mutate(search.best) for _ in range(REBASE_EVERY)]
        base = tuned_pipeline(search.best, catalogue)
        yield from ((tuned_pipeline(mutant, catalogue), base) for mutant in mutants)
        search.best = mutants[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=10_000)
    parser.add_argument("--prefix-cache-mb", type=int, default=0)
    args = parser.parse_args()
    toolchain = find_toolchain()
    module = load_module(toolchain, next(p for p in demo_programs().values() if p.stem == PROGRAM))
    options = load_baselines(toolchain, ("Oz",))["Oz"].options
    backend = NativeBackend(toolchain, jobs=1, prefix_cache_bytes=args.prefix_cache_mb << 20)
    requests = searching(toolchain) if args.prefix_cache_mb else cycling()
    rows = []
    start = time.perf_counter()
    checkpoints = {100, 1000, args.evaluations // 2, args.evaluations}
    try:
        for done in range(1, args.evaluations + 1):
            pipeline, base = next(requests)
            result = backend.evaluate(module, pipeline, options, None, base=base)
            assert result.status.value in ("ok", "compile-error"), result.stderr_tail
            if done in checkpoints:
                (pid,) = backend.worker_pids()
                reuse = backend.prefix_reuse
                rows.append(
                    [
                        f"{done:,}",
                        f"{rss_kib(pid) / 1024:.1f}",
                        f"{reuse.cache_bytes / 2**20:.1f}",
                        f"{reuse.evictions:,}",
                        f"{time.perf_counter() - start:.0f}",
                    ]
                )
    finally:
        backend.close()
    what = "local-search mutants resumed from their bases" if args.prefix_cache_mb else "pipelines cycling through"
    print(f"{module.name}, {what} {'' if args.prefix_cache_mb else ', '.join(PIPELINES)}".rstrip() + "\n")
    header = ["evaluations", "worker RSS MiB", "prefix cache MiB", "evictions", "elapsed s"]
    print(to_markdown(Rows("memory", header, rows)))


if __name__ == "__main__":
    main()
