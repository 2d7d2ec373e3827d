"""Autotuning quality: geomean object-size change vs -Oz (with the -Oz backup) per strategy and budget, with
guards on every would-be best, then minimization, full validation of each program's answer and broadcast of
the validated answers. Validation = the suites plus each program itself, run and compared with its -O0
and -O2 builds (the demo programs check themselves and print a summary).

One search per strategy and program at the largest budget; smaller budgets are read off its best-so-far curve
(guarded, not yet validated). The "validated" columns count only lists that passed the validation suites; a
program whose lists all fail keeps -Oz.

    python benchmarks/autotune_quality.py [--corpus demo|DIR|bench://pypi-v1?split=test] [--programs 10]
        [--budgets 100,300] [--strategies random,local,greedy] [--seed 0] [--validate humaneval]
        [--validate-limit N] [--cache FILE]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import dataset_benchmarks, is_dataset_uri, round_robin
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module, supported_suffixes
from stitchopt.tune.acceptance import ProgramRun, list_validation, program_guard, self_check_for, validation_for
from stitchopt.tune.broadcast import broadcast
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.session import first_valid, replay_command
from stitchopt.tune.strategies import make_strategy


def geomean_change(scores: list[float]) -> str:
    """Scores are size ratios to -Oz; the -Oz backup caps each at 1."""
    capped = [min(score, 1.0) for score in scores]
    return f"{100 * (math.exp(sum(map(math.log, capped)) / len(capped)) - 1):+.2f}%"


def corpus(name: str, limit: int, max_ir_kb: float | None = None, packages: list[str] | None = None) -> list[Path]:
    """`demo`, a built dataset or one split of it (`bench://pypi-v1?split=test`, optionally only some of its
    packages, so that a table stays reproducible when a split grows), or a directory."""
    if name == "demo":
        paths = list(demo_programs().values())
    elif is_dataset_uri(name):
        uri, _, split = name.partition("?split=")
        benchmarks = dataset_benchmarks(uri, split=split or None)
        if packages:
            benchmarks = [b for b in benchmarks if b.package in packages]
        paths = [b.path for b in round_robin(benchmarks)]
    else:
        paths = sorted(p for p in Path(name).iterdir() if p.suffix in supported_suffixes())
    if max_ir_kb is not None:
        paths = [p for p in paths if p.stat().st_size <= max_ir_kb * 1024]
    return paths[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="demo")
    parser.add_argument("--programs", type=int, default=10)
    parser.add_argument("--budgets", default="100,300")
    parser.add_argument("--strategies", default="random,local,greedy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--validate", action="append", help="suite (repeatable; default humaneval or csmith)")
    parser.add_argument("--validate-limit", type=int)
    parser.add_argument("--cache", type=Path, help="evaluation cache to use (default: a fresh temporary one)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per opt/llc run")
    parser.add_argument("--max-ir-kb", type=float, help="skip programs whose IR file is larger")
    parser.add_argument("--packages", help="comma-separated: only these packages of a dataset corpus")
    args = parser.parse_args()
    budgets = sorted(int(b) for b in args.budgets.split(","))
    toolchain = find_toolchain()
    catalogue = load_catalogue(toolchain)
    paths = corpus(args.corpus, args.programs, args.max_ir_kb, args.packages.split(",") if args.packages else None)
    objective = Objective()
    rows = []
    with tempfile.TemporaryDirectory() as scratch, EvaluationStore(args.cache or Path(scratch) / "c.sqlite") as store:
        evaluator = Evaluator(toolchain, store, timeout=args.timeout)
        validation = list_validation(evaluator, args.validate, limit=args.validate_limit)
        modules = [load_module(toolchain, p) for p in paths]
        guards = [  # the IR guards, and each program itself run (a C source with a main) as a self-check
            program_guard(evaluator, m, self_check_for(evaluator, path, ProgramRun(), validation))
            for path, m in zip(paths, modules, strict=True)
        ]
        oz = evaluator.baselines["Oz"]
        references = [evaluator.evaluate(m, oz.pipeline, oz.options) for m in modules]
        for strategy in args.strategies.split(","):
            start, evaluated = time.monotonic(), evaluator.counters.evaluated
            runs = [
                tune(
                    evaluator,
                    m,
                    make_strategy(strategy, catalogue, args.seed, oz.pipeline),
                    catalogue,
                    objective,
                    Budget(budgets[-1]),
                    guard=guard,
                )
                for m, guard in zip(modules, guards, strict=True)
            ]
            search_seconds = time.monotonic() - start
            rate = (evaluator.counters.evaluated - evaluated) / search_seconds
            for budget in budgets:
                scores = [run.curve[min(budget, len(run.curve)) - 1] if run.curve else 1.0 for run in runs]
                rows.append([strategy, f"{budget:,}", geomean_change(scores), "", "", "", "", "", f"{rate:.1f}"])
            answers, after_min, lengths, rejected = [], [], [], 0
            for path, module, run, guard in zip(paths, modules, runs, guards, strict=True):
                candidates = list(reversed(run.bests))
                if run.best_passes is not None:
                    mz = minimize(
                        evaluator, module, run.best_passes, catalogue, objective, insertion=False, guard=guard
                    )
                    if mz.score <= run.best_score:
                        candidates.insert(0, (mz.passes, mz.score))
                after_min.append(candidates[0][1] if candidates else 1.0)
                chosen, notes = first_valid(candidates, catalogue, validation_for(validation, path, ProgramRun()))
                rejected += sum("failed" in note for note in notes)
                answers.append(chosen)
                if chosen is not None:
                    lengths.append(len(chosen))
            record = RunRecord(
                toolchain.identity,
                str(objective),
                strategy,
                tuple(
                    ProgramRecord(
                        str(path),
                        chosen,
                        tuned_pipeline(chosen, catalogue) if chosen else oz.pipeline,
                        None,
                        None,
                        budgets[-1],
                        replay_command(evaluator, oz.pipeline),
                        validated=True,
                    )
                    for path, chosen in zip(paths, answers, strict=True)
                ),
            )
            validated = [
                objective.score(evaluator.evaluate(m, p.pipeline, oz.options), ref)
                for m, p, ref in zip(modules, record.programs, references, strict=True)
            ]
            outcome = broadcast(evaluator, catalogue, record, validation=validation, program_run=ProgramRun())
            after_broadcast = [
                objective.score(evaluator.evaluate(m, p.pipeline, oz.options), ref)
                for m, p, ref in zip(modules, outcome.record.programs, references, strict=True)
            ]
            rows[-1][3:8] = [
                geomean_change(after_min),
                geomean_change(validated),
                geomean_change(after_broadcast),
                str(rejected),
                f"{sum(lengths) / len(lengths):.1f}" if lengths else "-",
            ]
            suspicious = sum(run.suspicious for run in runs)
            print(
                f"{strategy}: search {search_seconds:.0f} s, {suspicious} suspicious candidates, {rejected} "
                f"lists rejected by validation, broadcast changed {outcome.changed} of {len(paths)}",
                flush=True,
            )
        evaluator.close()
    headers = [
        "strategy",
        "evaluations/program",
        "guarded search",
        "+ minimize",
        "validated",
        "+ broadcast (validated)",
        "lists rejected",
        "mean answer length",
        "evaluations/s",
    ]
    print(
        f"\n{args.corpus}: {len(paths)} programs, seed {args.seed}, LLVM {toolchain.version_string}, "
        f"objective {objective}, validation: {validation.describe()}\n"
    )
    print(to_markdown(Rows("autotune", headers, rows)))


if __name__ == "__main__":
    main()
