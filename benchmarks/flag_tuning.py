"""Learned flag tuning on held-out programs: the method table for the README, plus inference time and the size
model's MAPE, from the same measurements as `stitchopt evaluate`.

    python benchmarks/flag_tuning.py [--dataset bench://pypi-v1] [--split test] [--model DIR] [--programs N]
        [--max-ir-kb 100] [--per-package 40] [--ks 5,10,50] [--autotuner RECORD.json] [--exclude-package P]
        [--csv F] [--json F]

Besides the table over all programs it prints the same table per package, without `--exclude-package`, and
over the programs the autotuner ran on.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.evaluation import Evaluation, ProgramOutcome, evaluate_dataset, summarize
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.reports.flag_tuning import method_rows, write_csv, write_json
from stitchopt.reports.tables import to_markdown
from stitchopt.toolchain.discovery import find_toolchain


def package_of(outcome: ProgramOutcome) -> str:
    """The package a `bench://<dataset>/<package>/...` URI belongs to."""
    return outcome.uri.split("/")[3]


def by_package(evaluation: Evaluation, package: str) -> list[ProgramOutcome]:
    return [o for o in evaluation.programs if package_of(o) == package]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bench://pypi-v1")
    parser.add_argument("--split", default="test")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--programs", type=int, default=0)
    parser.add_argument("--max-ir-kb", type=float, default=100.0)
    parser.add_argument("--per-package", type=int, default=40)
    parser.add_argument("--ks", default="5,10,50")
    parser.add_argument("--autotuner", type=Path)
    parser.add_argument("--exclude-package", help="also print the table without this package's programs")
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    toolchain = find_toolchain()
    with Evaluator(toolchain, EvaluationStore(store_path())) as evaluator:
        evaluation, title = evaluate_dataset(
            evaluator,
            args.dataset,
            args.model,
            split=args.split,
            programs=args.programs,
            max_ir_kb=args.max_ir_kb,
            per_package=args.per_package or None,
            ks=tuple(int(k) for k in args.ks.split(",") if k),
            autotuner=args.autotuner,
        )
    print(to_markdown(method_rows(evaluation, title)))
    print()
    subsets = {f"package {p}": by_package(evaluation, p) for p in sorted({package_of(o) for o in evaluation.programs})}
    if args.exclude_package:
        subsets[f"without {args.exclude_package}"] = [
            o for o in evaluation.programs if package_of(o) != args.exclude_package
        ]
    subsets["programs the autotuner ran on"] = [o for o in evaluation.programs if "autotuner" in o.ratios]
    for name, outcomes in subsets.items():
        if outcomes:
            subset = replace(evaluation, programs=tuple(outcomes), methods=summarize(outcomes))
            print(to_markdown(method_rows(subset, f"{name} ({len(outcomes)} programs)")))
            print()
    print(
        f"inference (features + prediction, one process): median {evaluation.inference_ms_median:.1f} ms, "
        f"max {evaluation.inference_ms_max:.1f} ms"
    )
    print("size model MAPE (held-out): " + ", ".join(f"{k} {v:.3f}" for k, v in evaluation.size_mape.items()))
    print(f"{len(evaluation.skipped)} programs skipped; wall time {time.perf_counter() - start:.0f} s")
    if args.csv:
        write_csv(evaluation, args.csv)
    if args.json:
        write_json(evaluation, args.json)


if __name__ == "__main__":
    main()
