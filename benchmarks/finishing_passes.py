"""Which passes to finish every list with (`stitchopt train --finish`): measured on train units only.

Part 1 runs clang's -Oz pipeline, then `--after` (default none), then each catalogue pass alone, on train units
of the PyPI and Debian datasets, and prints the passes that shrink objects against that base. Part 2 builds each
list of a model with and without `--finish` on the same units: how often the finish grows or shrinks what the
list built. docs/flag-tuning.md#finishing-passes has the tables and the command.

    python benchmarks/finishing_passes.py [--units 150] [--after mergefunc] [--finish mergefunc] [--model DIR] [--cxx]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.core import IRModule
from stitchopt.datasets.benchmarks import Benchmark, round_robin, select_benchmarks, unit_language
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import PassNames, nest, split_top_level, tuned_pipeline
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module

DATASETS = "bench://pypi-v1,bench://debian-v1"


def train_units(max_ir_kb: float, per_package: int, limit: int, cxx: bool) -> list[Benchmark]:
    """Train units of the datasets, IR up to `max_ir_kb`, round-robin over packages; with `cxx`, only units
    compiled from C++ sources (by the source suffix in the URI)."""
    if not cxx:
        return select_benchmarks(DATASETS, ["train"], max_ir_kb=max_ir_kb, per_package=per_package, limit=limit)
    every = select_benchmarks(DATASETS, ["train"], max_ir_kb=max_ir_kb)
    sources_in_cxx = [b for b in every if unit_language(b.uri) == "c++"]
    return round_robin(sources_in_cxx, per_package)[:limit]


def geomean_change(ratios: np.ndarray) -> float:
    """Geomean size change; a failed build (NaN) counts as doubling."""
    return math.exp(float(np.log(np.where(np.isfinite(ratios), ratios, 2.0)).mean())) - 1.0


def sizes(evaluator: Evaluator, requests: list[EvalRequest], columns: int) -> np.ndarray:
    """Object bytes of `requests` (NaN where a build failed), one row per module of `columns` requests."""
    results = evaluator.evaluate_many(requests)
    built = [r.size_bytes if r.ok and r.size_bytes else np.nan for r in results]
    return np.array(built, dtype=np.float64).reshape(-1, columns)


def scan_passes(evaluator: Evaluator, catalogue: Catalogue, modules: Sequence[IRModule], after: list[str]) -> str:
    """Part 1: each catalogue pass after -Oz and `after`, as a Markdown table against that base."""
    oz = evaluator.baselines["Oz"]
    base = ",".join([oz.pipeline, *(nest([name], catalogue) for name in after)])
    names = catalogue.names()
    pipelines = [base, *(f"{base},{nest([name], catalogue)}" for name in names)]
    built = sizes(
        evaluator, [EvalRequest(m, p, oz.options, base=base) for m in modules for p in pipelines], len(pipelines)
    )
    built = built[np.isfinite(built[:, 0])]
    ratios = built[:, 1:] / built[:, :1]
    named = "".join(f",{name}" for name in after)
    lines = [
        f"Part 1: -Oz{named} then each pass, against that base; {len(built)} train units",
        "",
        "| pass | geomean | grown | shrunk | failed |",
        "| --- | --- | --- | --- | --- |",
    ]
    gaining = unchanged = 0
    for name, column in sorted(zip(names, ratios.T, strict=True), key=lambda row: geomean_change(row[1])):
        change = 100 * geomean_change(column)
        unchanged += bool((column == 1).all())
        if change < 0:
            gaining += 1
            grown, shrunk, failed = (column > 1).mean(), (column < 1).mean(), int((~np.isfinite(column)).sum())
            lines.append(f"| {name} | {change:+.3f}% | {100 * grown:.1f}% | {100 * shrunk:.1f}% | {failed} |")
    lines.append(
        f"\n{gaining} of the {len(names)} passes gain; {unchanged} change no object; "
        f"{len(names) - gaining - unchanged} change some for no gain"
    )
    return "\n".join(lines)


def finish_after_lists(
    evaluator: Evaluator, catalogue: Catalogue, modules: Sequence[IRModule], model: FlagModel, finish: PassNames
) -> str:
    """Part 2: each of the model's lists (as labelled) with and without `finish`, on every module."""
    options = evaluator.baselines["Oz"].options
    lists = model.labelled_lists()
    pipelines = [tuned_pipeline(p, catalogue) for passes in lists for p in (passes, (*passes, *finish))]
    built = sizes(evaluator, [EvalRequest(m, p, options) for m in modules for p in pipelines], len(pipelines))
    before, after = built[:, 0::2], built[:, 1::2]
    ratio = (after / before)[np.isfinite(after / before)]
    broken = int((np.isfinite(before) & ~np.isfinite(after)).sum())
    return (
        f"Part 2: {len(lists)} lists of {model.identity} with and without {','.join(finish)} on {len(modules)} "
        f"units: {ratio.size} pairs built both ways; the finish grew {100 * (ratio > 1).mean():.2f}% (worst "
        f"{ratio.max():.4f}x) and shrank {100 * (ratio < 1).mean():.2f}% (best {ratio.min():.4f}x), geomean "
        f"{100 * (math.exp(float(np.log(ratio).mean())) - 1):+.3f}%; builds it broke: {broken}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=150, help="train units, round-robin over packages")
    parser.add_argument("--per-package", type=int, default=2)
    parser.add_argument("--max-ir-kb", type=float, default=40.0)
    parser.add_argument("--cxx", action="store_true", help="only units compiled from C++ sources")
    parser.add_argument("--after", default="", help="passes between -Oz and each scanned pass (a greedy round)")
    parser.add_argument("--finish", default="mergefunc", help="the finish part 2 measures after the model's lists")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args()
    start = time.perf_counter()
    toolchain = find_toolchain()
    catalogue = load_catalogue(toolchain)
    model = FlagModel.from_pretrained(args.model, catalogue)
    benchmarks = train_units(args.max_ir_kb, args.per_package, args.units, args.cxx)
    modules = [load_module(toolchain, b.path) for b in benchmarks]
    with Evaluator(toolchain, EvaluationStore(store_path())) as evaluator:
        print(scan_passes(evaluator, catalogue, modules, split_top_level(args.after)))
        print(finish_after_lists(evaluator, catalogue, modules, model, tuple(split_top_level(args.finish))))
    print(f"wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
