"""Resident memory of one native worker over many evaluations (it must stay flat).

python benchmarks/native_memory.py [--evaluations 10000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.native.pool import NativeBackend
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module

PIPELINES = ("function(sroa)", "function(instcombine<no-verify-fixpoint>,simplifycfg)", "globaldce", "default<Oz>")
PROGRAM = "ring_buffer"  # the smallest demo program: many evaluations per second


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=10_000)
    args = parser.parse_args()
    toolchain = find_toolchain()
    module = load_module(toolchain, next(p for p in demo_programs().values() if p.stem == PROGRAM))
    backend = NativeBackend(toolchain, jobs=1)
    rows = []
    start = time.perf_counter()
    checkpoints = {100, 1000, args.evaluations // 2, args.evaluations}
    try:
        for done in range(1, args.evaluations + 1):
            assert backend.evaluate(module, PIPELINES[done % len(PIPELINES)]).ok
            if done in checkpoints:
                (pid,) = backend.worker_pids()
                rows.append([f"{done:,}", f"{rss_kib(pid) / 1024:.1f}", f"{time.perf_counter() - start:.0f}"])
    finally:
        backend.close()
    print(f"{module.name}, pipelines cycling through {', '.join(PIPELINES)}\n")
    print(to_markdown(Rows("memory", ["evaluations", "worker RSS MiB", "elapsed s"], rows)))


if __name__ == "__main__":
    main()
