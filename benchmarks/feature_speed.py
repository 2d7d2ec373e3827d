"""Milliseconds per module for each program representation, on the demo programs or a directory of IR files.

Each module is timed `--repeats` times per representation and its median kept; the table gives the median, p95
and max of those per-module medians. `module.text` (llvm-dis, or llvm-as + llvm-dis for text input) is timed
on its own row and excluded from the others: the text-based representations share it once per module.
`--clock cpu` times in-process CPU (excluding child processes such as `opt`), which stays meaningful on a
busy machine for the pure-Python representations.

    python benchmarks/feature_speed.py [DIR] [--limit 200] [--repeats 5] [--clock wall|cpu]

Without DIR the demo programs are compiled with `clang -Oz -Xclang -disable-llvm-passes -emit-llvm -c`.
With DIR: every *.bc and *.ll below it, a seeded random sample of `--limit` when there are more.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from stitchopt.datasets.demo import demo_programs
from stitchopt.features.autophase import Autophase
from stitchopt.features.base import AnyRepresentation, compute
from stitchopt.features.func_properties import FunctionProperties
from stitchopt.features.histogram import OpcodeTypeHistogram
from stitchopt.features.module import FeatureModule
from stitchopt.features.tokens import IRTokens
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import compile_source


def demo_ir(toolchain: Toolchain, directory: Path) -> list[Path]:
    paths = []
    for source in demo_programs().values():
        path = directory / f"{source.stem}.bc"
        path.write_bytes(compile_source(toolchain, source))
        paths.append(path)
    return paths


def ir_files(directory: Path, limit: int) -> list[Path]:
    files = sorted(p for pattern in ("*.bc", "*.ll") for p in directory.rglob(pattern))
    return sorted(random.Random(0).sample(files, limit)) if len(files) > limit else files


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", nargs="?", type=Path)
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock: Callable[[], float] = time.perf_counter if args.clock == "wall" else time.thread_time
    toolchain = find_toolchain()
    with tempfile.TemporaryDirectory() as scratch:
        paths = ir_files(args.directory, args.limit) if args.directory else demo_ir(toolchain, Path(scratch))
        data = [path.read_bytes() for path in paths]
    representations: list[AnyRepresentation] = [Autophase(), OpcodeTypeHistogram(), FunctionProperties(), IRTokens()]
    times: dict[str, list[float]] = {"module.text (llvm-dis)": []}
    times.update({r.name: [] for r in representations})
    text_kb = []
    for payload in data:
        runs = []
        for _ in range(args.repeats):
            module = FeatureModule.from_bytes(toolchain, payload)
            start = clock()
            text = module.text
            runs.append(clock() - start)
        text_kb.append(len(text) / 1000)
        times["module.text (llvm-dis)"].append(statistics.median(runs))
        for representation in representations:
            runs = []
            for _ in range(args.repeats):
                start = clock()
                compute(representation, module)
                runs.append(clock() - start)
            times[representation.name].append(statistics.median(runs))
    largest = max(range(len(data)), key=lambda i: text_kb[i])
    size = f"{len(data[largest]) / 1000:.0f} KB file, {text_kb[largest]:.0f} KB text"
    rows = [
        [
            name,
            str(len(values)),
            f"{statistics.median(values) * 1000:.1f}",
            f"{percentile(values, 0.95) * 1000:.1f}",
            f"{max(values) * 1000:.1f}",
            f"{sum(values) * 1000 / sum(text_kb) * 100:.1f}",
            size,
        ]
        for name, values in times.items()
    ]
    headers = ["representation", "modules", "median ms", "p95 ms", "max ms", "ms per 100 KB text", "largest module"]
    source = str(args.directory) if args.directory else "demo programs"
    print(f"{source}, {args.clock} clock, median of {args.repeats} runs per module, load {os.getloadavg()[0]:.1f}\n")
    print(to_markdown(Rows("feature speed", headers, rows)))


if __name__ == "__main__":
    main()
