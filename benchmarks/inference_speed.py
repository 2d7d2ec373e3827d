"""Inference time of a flag model (features + ranking, what `optimize` spends before its first build) per unit,
with the features from stitchopt's pass plugin and from the Python representations, on a built dataset's units.

The two ways run one after the other on each unit, which of them first alternating, so that a busy machine
slows both alike; each is timed in wall time and in CPU time (this process and its children: `opt`,
`llvm-dis`), which load changes less. The `plugin` rows time inference as it runs (the plugin's features, or
Python's where it declines); `equal rows` counts the units whose features the plugin computed itself, equal to
Python's (a declined unit is not counted).

    python benchmarks/inference_speed.py [--dataset bench://pypi-v1] [--split train,validation,test]
        [--max-ir-kb 200] [--bands 60,200] [--per-package 20] [--model DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from stitchopt.core import IRModule
from stitchopt.datasets.benchmarks import select_benchmarks
from stitchopt.features.native import plugin_features
from stitchopt.learning.kinds import load_model
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module, source_language

Features = Callable[[IRModule], np.ndarray]


def timed(model: FlagModel, features: Features, module: IRModule) -> tuple[float, float, np.ndarray]:
    """(wall ms, CPU ms with children, the feature row) of one inference."""
    wall, cpu = time.perf_counter(), os.times()
    row = features(module)
    model.rank_features(row[None, :], [source_language(module.source_filename)])
    after = os.times()
    spent = sum(after[i] - cpu[i] for i in range(4))  # user, system, children's user and system
    return 1000 * (time.perf_counter() - wall), 1000 * spent, row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="bench://pypi-v1")
    parser.add_argument("--split", default="train,validation,test")
    parser.add_argument("--max-ir-kb", type=float, default=200.0)
    parser.add_argument("--bands", default="60,200", help="upper bounds (KB of IR file) of the table's size bands")
    parser.add_argument("--per-package", type=int, default=20)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args()
    toolchain = find_toolchain()
    model = load_model(args.model, load_catalogue(toolchain))
    if not isinstance(model, FlagModel):
        raise SystemExit(f"{args.model}: not a flag model")
    benchmarks = select_benchmarks(
        args.dataset, args.split.split(","), max_ir_kb=args.max_ir_kb, per_package=args.per_package
    )
    ways: dict[str, Features] = {
        "plugin": lambda m: model.features(toolchain, m)[0],  # what inference does: the plugin, where it can
        "python": lambda m: model.python_features(toolchain, m),
    }
    probe = load_module(toolchain, benchmarks[0].path)
    if plugin_features(toolchain, probe.bitcode, model.representations).values is None:
        raise SystemExit(f"{benchmarks[0].uri}: the plugin gave no features (is it built? `make setup`)")
    measured: list[tuple[float, dict[str, tuple[float, float]], bool]] = []  # (KB, way -> (wall, cpu), equal)
    for index, benchmark in enumerate(benchmarks):
        module = load_module(toolchain, benchmark.path)
        timings, rows = {}, {}
        order = list(ways.items())
        for way, features in order if index % 2 == 0 else reversed(order):  # neither always goes first
            wall, cpu, rows[way] = timed(model, features, module)
            timings[way] = (wall, cpu)
        computed = plugin_features(toolchain, module.bitcode, model.representations).values  # not declined
        equal = computed is not None and bool(np.array_equal(computed, rows["python"]))
        measured.append((benchmark.path.stat().st_size / 1024, timings, equal))

    bands = [float(b) for b in args.bands.split(",")]
    table = []
    for low, high in zip([0.0, *bands], bands, strict=False):
        chosen = [m for m in measured if low < m[0] <= high]
        table += band_rows(f"{low:.0f}-{high:.0f} KB", chosen)
    table += band_rows(f"all up to {bands[-1]:.0f} KB", [m for m in measured if m[0] <= bands[-1]])
    headers = [
        "IR file",
        "units",
        "features",
        "wall median ms",
        "wall max ms",
        "CPU median ms",
        "CPU max ms",
        "equal rows",
    ]
    print(f"{args.dataset} ({args.split}), {args.model.name}, load {os.getloadavg()[0]:.1f}\n")
    print(to_markdown(Rows("inference speed", headers, table)))


def band_rows(label: str, chosen: list[tuple[float, dict[str, tuple[float, float]], bool]]) -> list[list[str]]:
    """The table's two rows (plugin, Python) for the units of one size band."""
    if not chosen:
        return []
    rows = []
    for way in ("plugin", "python"):
        walls = [m[1][way][0] for m in chosen]
        cpus = [m[1][way][1] for m in chosen]
        rows.append(
            [
                label,
                str(len(chosen)),
                way,
                f"{statistics.median(walls):.1f}",
                f"{max(walls):.1f}",
                f"{statistics.median(cpus):.0f}",
                f"{max(cpus):.0f}",
                f"{sum(m[2] for m in chosen)}/{len(chosen)}",
            ]
        )
    return rows


if __name__ == "__main__":
    main()
