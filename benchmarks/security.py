"""Security: what the guard costs a size search, and the vulnerability detector against its stitched versions and
the static analyzers.

    python benchmarks/security.py guard [--labels DIR] [--fixtures DIR] [--budget 100]
    python benchmarks/security.py detection --experts DIR [--per-family 2] [--data DIR] [--json F]
        [--save-model DIR] [--no-anchors] [--jobs 2]
    python benchmarks/security.py calibrate [--model DIR] [--corpus bench://demo-v1 ...] [--target-fp 0.05]
        [--per-family 3] [--data DIR] [--write]

`guard`: on the searched units of a label directory (crypto packages apart from the rest) and on fresh local
and random searches of the security fixtures (no guard during the search), how many of the search's best lists
the guard turns away and the size of the best list that passes it (`studies.guard_cost`).

`detection`: the detection study on a family split of Juliet (`vulnerability.study.juliet_detection_study`): one
detector per representation, the best one with the frozen optimization experts of `--experts` (a stitched
flag-tuning model: `stitchopt stitch train LABELS -o DIR`) stitched in, the control, and clang's static
analyzer and cppcheck on the same test functions; the tables overall, per CWE, and without the test functions
whose IR a function of the other label shares.

`calibrate`: the detector's threshold set on benign real code (`vulnerability.calibration`): the lowest risk that
flags at most `--target-fp` of the functions of the `--corpus` programs (default the demo corpus; add
`'bench://pypi-v1?split=train'` where that dataset is built; never a test split), with what it flags of Juliet's
test split and how well the detector separates the two; `--write` stores it in the model's config.json (the
shipped detector's by default).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from stitchopt.cache.store import EvaluationStore
from stitchopt.cli.options import open_store, target_paths
from stitchopt.datasets.benchmarks import program_path
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.shards import load_searches
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.security import comparisons, overall_rows, per_cwe_rows
from stitchopt.reports.tables import to_markdown
from stitchopt.studies.guard_cost import GuardCost, GuardSummary, guard_cost, searched_candidates
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.driver import Budget
from stitchopt.tune.session import search_and_validate
from stitchopt.tune.strategies import make_strategy
from stitchopt.vulnerability.analyzers import ANALYZERS
from stitchopt.vulnerability.calibration import HELD_OUT_FOLDS, TARGET_FALSE_POSITIVE_RATE
from stitchopt.vulnerability.shipped import DEFAULT_DETECTOR_DIR

CRYPTO = ("pynacl", "pycryptodome", "argon2-cffi-bindings")
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "security"
DEMO = "bench://demo-v1"


def summary_row(name: str, costs: list[GuardCost]) -> str:
    s = GuardSummary.of(costs)
    return (
        f"| {name} | {s.units} | {s.improved} | {s.turned_away} | {100 * (s.geomean_best - 1):+.2f}% | "
        f"{100 * (s.geomean_guarded - 1):+.2f}% |"
    )


def print_turned_away(costs: list[GuardCost]) -> None:
    for cost in costs:
        if cost.turned_away:
            print(f"  turned away: {cost.unit} ({cost.best_ratio - 1:+.2%}): {'; '.join(cost.reasons)}", flush=True)


def guard_table(toolchain: Toolchain, store: EvaluationStore, labels: Path, fixtures: Path, budget: int) -> None:
    catalogue = load_catalogue(toolchain)
    units = sorted(load_searches(labels), key=lambda u: u.uri)
    print("| units | searched | beat -Oz | best turned away | size vs -Oz, search's best | with the guard |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with Evaluator(toolchain, store, jobs=2) as evaluator:
        for name, crypto in (("crypto: " + ", ".join(CRYPTO), True), ("the other searched units", False)):
            costs = [
                guard_cost(
                    evaluator,
                    catalogue,
                    u.uri,
                    load_module(toolchain, program_path(u.uri, toolchain)),
                    searched_candidates(u),
                )
                for u in units
                if (u.package in CRYPTO) == crypto
            ]
            print_turned_away(costs)
            print(summary_row(name, costs), flush=True)
        oz_pipeline = evaluator.baselines["Oz"].pipeline
        costs = []
        for path in sorted(fixtures.glob("*.c")):
            module = load_module(toolchain, path)
            for strategy in ("local", "random"):
                searcher = make_strategy(strategy, catalogue, 0, oz_pipeline)
                run, _, _ = search_and_validate(evaluator, catalogue, module, searcher, budget=Budget(budget))
                costs.append(
                    guard_cost(evaluator, catalogue, f"{path.name} ({strategy})", module, list(reversed(run.bests)))
                )
        print_turned_away(costs)
        print(summary_row(f"security fixtures ({len(costs) // 2} files x local, random)", costs))


def detection_table(toolchain: Toolchain, store: EvaluationStore, args: argparse.Namespace) -> None:
    import torch  # the stitch extra: only this part needs it

    torch.set_num_threads(1)  # repeatable, and 30x faster than two threads on a busy 2-core machine
    from stitchopt.vulnerability.study import DetectionConfig, juliet_detection_study

    anchors = () if args.no_anchors else ANALYZERS
    with tempfile.TemporaryDirectory(prefix="stitchopt-juliet-") as scratch:
        outcome, functions = juliet_detection_study(
            toolchain,
            args.data,
            args.per_family,
            args.experts,
            DetectionConfig(jobs=args.jobs),
            store=store,
            anchors=anchors,
            scratch=Path(scratch),
        )
    report = outcome.report
    splits = ", ".join(f"{split} {n['bad']} bad / {n['good']} good" for split, n in report.functions.items())
    twins = sum(t.twin for t in report.tests)
    print(f"functions: {splits}; {twins} test functions have a twin of the other label in their case")
    for title, shown in (("all test functions", report), ("without twins", report.without_twins())):
        print(f"\n## {title}\n")
        print("\n\n".join(to_markdown(table) for table in overall_rows(shown)))
        for line in comparisons(shown):
            print(f"- {line}")
    print("\n" + "\n\n".join(f"{table.title}\n\n{to_markdown(table)}" for table in per_cwe_rows(report)))
    print(f"\nseconds: {', '.join(f'{k} {v:.0f}' for k, v in report.seconds.items())}; winner: {report.winner}")
    if args.json is not None:
        report.write_json(args.json)
    if args.save_model is not None:
        outcome.winner.save_pretrained(args.save_model)
        print(f"winner -> {args.save_model}")


def corpus_programs(corpus: list[str], toolchain: Toolchain) -> list[Path]:
    """The programs of each corpus entry: the demo corpus by its URI (it ships unbuilt), else as `security check`
    reads its targets."""
    return [
        path
        for entry in corpus
        for path in (demo_programs().values() if entry == DEMO else target_paths([entry], toolchain))
    ]


def calibration_table(toolchain: Toolchain, store: EvaluationStore, args: argparse.Namespace) -> None:
    import torch  # the stitch extra: the detector needs it

    torch.set_num_threads(1)
    from stitchopt.features.base import FeatureCache
    from stitchopt.vulnerability.calibration import calibrate
    from stitchopt.vulnerability.model import DetectorModel
    from stitchopt.vulnerability.risks import juliet_test_risks, program_risks

    if any("split=test" in corpus for corpus in args.corpus):
        raise SystemExit("calibrate on the train split only: the test split is held out")
    detector = DetectorModel.from_pretrained(args.model)
    by_program = program_risks(toolchain, detector, corpus_programs(args.corpus, toolchain), FeatureCache(store))
    benign = np.concatenate(by_program)
    with tempfile.TemporaryDirectory(prefix="stitchopt-juliet-") as scratch:
        bad, good = juliet_test_risks(toolchain, detector, args.data, args.per_family, Path(scratch), store, args.jobs)
    command = shlex.join(["python", "benchmarks/security.py", *sys.argv[1:]])
    found = calibrate(by_program, bad, good, args.corpus, command, args.target_fp)
    print("| threshold | benign functions flagged | Juliet test bad flagged | Juliet test good flagged |")
    print("| --- | ---: | ---: | ---: |")
    for name, threshold in (("in the model", detector.threshold), ("calibrated", found.threshold)):
        shares = (f"{np.mean(risks >= threshold):.1%}" for risks in (benign, bad, good))
        print(f"| {name}: {threshold:.3f} | {' | '.join(shares)} |")
    print(
        f"\nbenign functions flagged by a threshold set without their program ({HELD_OUT_FOLDS}-fold over "
        f"{len(by_program)} programs): {found.benign_held_out_false_positive_rate:.1%}"
    )
    print(
        f"{len(benign)} benign functions ({', '.join(args.corpus)}); Juliet test split: {len(bad)} bad, "
        f"{len(good)} good; separation (AUC, Juliet bad vs benign): {found.separation:.3f}"
    )
    print(found.meaning())
    print(found.caveat() or "no caveat: the detector separates the two")
    if args.write:
        detector.calibrated(found).save_pretrained(args.model)
        print(f"calibration -> {args.model}/config.json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    guard = commands.add_parser("guard")
    guard.add_argument("--labels", type=Path, default=Path("data/labels/pypi-v1-searched"))
    guard.add_argument("--fixtures", type=Path, default=FIXTURES)
    guard.add_argument("--budget", type=int, default=100)
    detection = commands.add_parser("detection")
    detection.add_argument("--experts", type=Path, required=True, help="a stitched flag-tuning model directory")
    detection.add_argument("--per-family", type=int, default=2)
    detection.add_argument("--data", type=Path, help="the directory holding juliet_c.jsonl.gz")
    detection.add_argument("--json", type=Path)
    detection.add_argument("--save-model", type=Path)
    detection.add_argument("--no-anchors", action="store_true")
    detection.add_argument("--jobs", type=int, default=2)
    calibration = commands.add_parser("calibrate")
    calibration.add_argument("--model", type=Path, default=DEFAULT_DETECTOR_DIR, help="a detector model directory")
    calibration.add_argument("--corpus", action="append", help="benign programs (repeatable; bench:// URIs, paths)")
    calibration.add_argument("--target-fp", type=float, default=TARGET_FALSE_POSITIVE_RATE)
    calibration.add_argument("--per-family", type=int, default=3)
    calibration.add_argument("--data", type=Path, help="the directory holding juliet_c.jsonl.gz")
    calibration.add_argument("--jobs", type=int, default=2)
    calibration.add_argument("--write", action="store_true", help="store the calibration in the model directory")
    args = parser.parse_args()
    if args.command == "calibrate":
        args.corpus = args.corpus or [DEMO]
    start = time.perf_counter()
    toolchain = find_toolchain()
    with open_store(None) as store:
        if args.command == "guard":
            guard_table(toolchain, store, args.labels, args.fixtures, args.budget)
        elif args.command == "calibrate":
            calibration_table(toolchain, store, args)
        else:
            detection_table(toolchain, store, args)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
