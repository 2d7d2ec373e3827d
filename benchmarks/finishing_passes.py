"""Which passes to finish every list with (`stitchopt train --finish`): measured on train units only.

Part 1 runs clang's -Oz pipeline, then `--after` (default none), then each catalogue pass alone, on train units
of the PyPI and Debian datasets, and prints the passes that shrink objects on average. Part 2 builds
each list of a model with and without `--finish` on the same units: how often the finish grows or shrinks what
the list built. docs/flag-tuning.md#finishing-passes has the tables and the command.

    python benchmarks/finishing_passes.py [--units 150] [--after mergefunc] [--finish mergefunc] [--model DIR]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.datasets.benchmarks import select_benchmarks
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import nest, split_top_level, tuned_pipeline
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module

DATASETS = "bench://pypi-v1,bench://debian-v1"


def geomean_change(ratios: np.ndarray) -> float:
    """Geomean size change; a failed build (NaN) counts as doubling."""
    return math.exp(float(np.log(np.where(np.isfinite(ratios), ratios, 2.0)).mean())) - 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=150, help="train units, round-robin over packages")
    parser.add_argument("--per-package", type=int, default=2)
    parser.add_argument("--max-ir-kb", type=float, default=40.0)
    parser.add_argument("--after", default="", help="passes between -Oz and each scanned pass (a greedy round)")
    parser.add_argument("--finish", default="mergefunc", help="the finish part 2 measures after the model's lists")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    args = parser.parse_args()
    start = time.perf_counter()
    toolchain = find_toolchain()
    catalogue = load_catalogue(toolchain)
    model = FlagModel.from_pretrained(args.model, catalogue)
    benchmarks = select_benchmarks(
        DATASETS, ["train"], max_ir_kb=args.max_ir_kb, per_package=args.per_package, limit=args.units
    )
    modules = [load_module(toolchain, b.path) for b in benchmarks]
    after = split_top_level(args.after)
    finish = tuple(split_top_level(args.finish))
    names = catalogue.names()
    with Evaluator(toolchain, EvaluationStore(store_path())) as evaluator:
        oz = evaluator.baselines["Oz"]
        base = ",".join([oz.pipeline, *(nest([n], catalogue) for n in after)])
        scanned = [base, *(f"{base},{nest([n], catalogue)}" for n in names)]
        pairs = [
            (tuned_pipeline(p, catalogue), tuned_pipeline((*p, *finish), catalogue)) for p in model.labelled_lists()
        ]
        requests = [EvalRequest(m, oz.pipeline, oz.options) for m in modules]
        requests += [EvalRequest(m, p, oz.options, base=base) for m in modules for p in scanned]
        requests += [EvalRequest(m, p, oz.options) for m in modules for pair in pairs for p in pair]
        results = evaluator.evaluate_many(requests)
    sizes = np.array([r.size_bytes if r.ok and r.size_bytes else np.nan for r in results], dtype=np.float64)
    units = len(modules)
    oz_sizes, rest = sizes[:units], sizes[units:]
    scan = rest[: units * len(scanned)].reshape(units, len(scanned)) / oz_sizes[:, None]
    built = rest[units * len(scanned) :].reshape(units, len(pairs), 2)
    kept = np.isfinite(oz_sizes)
    scan = scan[kept]
    print(f"Part 1: -Oz{',' + args.after if args.after else ''}, then each pass; {len(scan)} train units\n")
    print("| pass | geomean vs -Oz | grown | shrunk | failed |\n| --- | --- | --- | --- | --- |")
    rows = sorted(zip(["(none)", *names], scan.T, strict=True), key=lambda row: geomean_change(row[1]))
    shown = unchanged = 0
    for name, ratios in rows:
        change, grown, shrunk = 100 * geomean_change(ratios), float((ratios > 1).mean()), float((ratios < 1).mean())
        if change < 0:
            failed = int((~np.isfinite(ratios)).sum())
            print(f"| {name} | {change:+.3f}% | {100 * grown:.1f}% | {100 * shrunk:.1f}% | {failed} |")
            shown += 1
        unchanged += name != "(none)" and bool((ratios == 1).all())
    others = len(names) - shown - unchanged
    print(f"\nOf the {len(names)} passes, {unchanged} change no object and {others} more change some, none for a gain")
    ratio = built[:, :, 1] / built[:, :, 0]
    paired = ratio[np.isfinite(ratio)]
    lost = int((np.isfinite(built[:, :, 0]) & ~np.isfinite(built[:, :, 1])).sum())
    print(
        f"\nPart 2: {len(pairs)} lists of {args.model.name} with and without {','.join(finish)} on {units} units: "
        f"{paired.size} pairs, the finish grew {100 * (paired > 1).mean():.2f}% (worst {paired.max():.4f}x) and "
        f"shrank {100 * (paired < 1).mean():.2f}% (best {paired.min():.4f}x), geomean "
        f"{100 * (math.exp(float(np.log(paired).mean())) - 1):+.3f}%; builds it broke: {lost}"
    )
    print(f"wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
