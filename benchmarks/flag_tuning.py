"""Learned flag tuning on held-out programs: the method table for the README, plus inference time and the size
model's MAPE, from the same measurements as `stitchopt evaluate`.

    python benchmarks/flag_tuning.py [--dataset bench://pypi-v1] [--split test] [--model DIR] [--programs N]
        [--max-ir-kb 100] [--per-package 40] [--ks 5,10,50] [--search-ks 40] [--autotuner RECORD.json]
        [--verified EVIDENCE.jsonl]
        [--exclude-package P ...] [--curve [--curve-ks 1,5,10,50] [--curve-budgets 0,10,25,50,100,300]]
        [--csv F] [--json F]

Besides the table over all programs (seeded search: one row per `--search-ks` k, 50 evaluations) it prints the
same table per package, without the `--exclude-package` packages, and over the programs the autotuner ran on;
each is followed by its wins of 10% or more without run evidence (`--verified`), which the table counts as -Oz.
With `--curve` it also prints seeded search's gain against compilations (by default k = 1, 5, 10, 50: one search
of 300 evaluations per program and k, read at 0, 10, 25, 50, 100 and 300) beside the autotuner's, read off the
curves of its run record at the same numbers.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.datasets.benchmarks import select_benchmarks
from stitchopt.errors import DatasetError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.heldout import SEARCH_KS, Evaluation, evaluate_dataset, restricted, without_packages
from stitchopt.learning.kinds import load_model
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.flag_tuning import method_tables, tables_markdown, write_csv, write_json
from stitchopt.studies.search_curve import GainCurve, curve_rows, seeded_search_curve
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.tune.record import RunRecord


def print_tables(evaluation: Evaluation, title: str) -> None:
    print(tables_markdown(method_tables(evaluation, title)), end="")


def search_curve(evaluator: Evaluator, args: argparse.Namespace, evaluation: Evaluation) -> GainCurve:
    """Seeded search's curve over the programs evaluated (those -Oz builds), with the autotuner's when given."""
    evaluated = {o.uri for o in evaluation.programs}
    chosen = select_benchmarks(
        args.dataset,
        [args.split],
        max_ir_kb=args.max_ir_kb,
        per_package=args.per_package or None,
        limit=args.programs or None,
    )
    catalogue = load_catalogue(evaluator.toolchain)
    record = RunRecord.load(args.autotuner) if args.autotuner else None
    model = load_model(args.model, catalogue)
    return seeded_search_curve(
        evaluator,
        catalogue,
        model,
        [b for b in chosen if b.uri in evaluated],
        ks=_numbers(args.curve_ks),
        budgets=_numbers(args.curve_budgets),
        autotuner=record,
    )


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(",") if n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bench://pypi-v1")
    parser.add_argument("--split", default="test")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--programs", type=int, default=0)
    parser.add_argument("--max-ir-kb", type=float, default=100.0)
    parser.add_argument("--per-package", type=int, default=40)
    parser.add_argument("--ks", default="5,10,50")
    parser.add_argument(
        "--search-ks", default=",".join(map(str, SEARCH_KS)), help="seeded search's seeds, one row each"
    )
    parser.add_argument("--autotuner", type=Path)
    parser.add_argument("--verified", type=Path, help="run evidence (JSON lines): wins of 10%% or more that count")
    parser.add_argument(
        "--exclude-package", action="append", default=[], help="also print the table without this package (repeatable)"
    )
    parser.add_argument(
        "--package", action="append", default=[], help="evaluate only this package's units (repeatable)"
    )
    parser.add_argument("--curve", action="store_true", help="also seeded search's gain against compilations")
    parser.add_argument("--curve-ks", default="1,5,10,50", help="seeded search's k values on the curve")
    parser.add_argument("--curve-budgets", default="0,10,25,50,100,300", help="evaluations the curve is read at")
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    toolchain = find_toolchain()
    with Evaluator(toolchain, EvaluationStore(store_path())) as evaluator:
        try:
            evaluation, title = evaluate_dataset(
                evaluator,
                args.dataset,
                args.model,
                split=args.split,
                programs=args.programs,
                max_ir_kb=args.max_ir_kb,
                per_package=args.per_package or None,
                ks=tuple(int(k) for k in args.ks.split(",") if k),
                search_ks=_numbers(args.search_ks),
                autotuner=args.autotuner,
                verified=args.verified,
                packages=args.package,
            )
        except DatasetError as exc:  # e.g. a --package with no units in the split
            parser.error(str(exc))
        curve = search_curve(evaluator, args, evaluation) if args.curve else None
    print_tables(evaluation, title)
    packages = sorted({o.package for o in evaluation.programs})
    subsets = {f"package {p}": restricted(evaluation, lambda o, p=p: o.package == p) for p in packages}
    if args.exclude_package:
        subsets[f"without {', '.join(args.exclude_package)}"] = without_packages(evaluation, args.exclude_package)
    subsets["programs the autotuner ran on"] = restricted(evaluation, lambda o: "autotuner" in o.ratios)
    for name, subset in subsets.items():
        if subset.programs:
            print_tables(subset, f"{name} ({len(subset.programs)} programs)")
    print(
        f"inference (features + prediction, one process): median {evaluation.inference_ms_median:.1f} ms, "
        f"max {evaluation.inference_ms_max:.1f} ms"
    )
    print("size model MAPE (held-out): " + ", ".join(f"{k} {v:.3f}" for k, v in evaluation.size_mape.items()))
    if curve is not None:
        print(tables_markdown([curve_rows(curve, f"seeded search ({len(evaluation.programs)} programs)")]), end="")
    print(f"{len(evaluation.skipped)} programs skipped; wall time {time.perf_counter() - start:.0f} s")
    if args.csv:
        write_csv(evaluation, args.csv)
    if args.json:
        write_json(evaluation, args.json)


if __name__ == "__main__":
    main()
