"""Security: what the guard costs a size search, and the vulnerability detector against its stitched versions and
the static analyzers.

    python benchmarks/security.py guard [--labels DIR] [--fixtures DIR] [--budget 100]
    python benchmarks/security.py detection --experts DIR [--per-family 2] [--data DIR] [--json F]
        [--save-model DIR] [--no-anchors] [--jobs 2]

`guard`: on the searched units of a label directory (crypto packages apart from the rest) and on fresh local
and random searches of the security fixtures (no guard during the search), how many of the search's best lists
the guard turns away and the size of the best list that passes it (`learning.security_guard`).

`detection`: the detection study on a family split of Juliet (`security.study.juliet_detection_study`): one
detector per representation, the best one with the frozen optimization experts of `--experts` (a stitched
flag-tuning model: `stitchopt stitch train LABELS -o DIR`) stitched in, the control, and clang's static
analyzer and cppcheck on the same test functions; the tables overall, per CWE, and without the test functions
whose IR a function of the other label shares.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.cli.options import open_store
from stitchopt.datasets.benchmarks import program_path
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.security_guard import GuardCost, GuardSummary, guard_cost, searched_candidates
from stitchopt.models.label_shards import load_searches
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.security import comparisons, overall_rows, per_cwe_rows
from stitchopt.reports.tables import to_markdown
from stitchopt.security.analyzers import ANALYZERS
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.driver import Budget
from stitchopt.tune.session import search_and_validate
from stitchopt.tune.strategies import make_strategy

CRYPTO = ("pynacl", "pycryptodome", "argon2-cffi-bindings")
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "security"


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
                    evaluator, catalogue, u.uri, load_module(toolchain, program_path(u.uri)), searched_candidates(u)
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
    from stitchopt.security.study import DetectionConfig, juliet_detection_study

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
        print(to_markdown(overall_rows(shown)))
        for line in comparisons(shown):
            print(f"- {line}")
    print(f"\n{to_markdown(per_cwe_rows(report))}")
    print(f"\nseconds: {', '.join(f'{k} {v:.0f}' for k, v in report.seconds.items())}; winner: {report.winner}")
    if args.json is not None:
        report.write_json(args.json)
    if args.save_model is not None:
        outcome.winner.save_pretrained(args.save_model)
        print(f"winner -> {args.save_model}")


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
    args = parser.parse_args()
    start = time.perf_counter()
    toolchain = find_toolchain()
    with open_store(None) as store:
        if args.command == "guard":
            guard_table(toolchain, store, args.labels, args.fixtures, args.budget)
        else:
            detection_table(toolchain, store, args)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
