"""Autotuning quality: geomean object-size change vs -Oz (with the -Oz backup) per strategy and budget,
then with minimization and broadcast at the largest budget. NOT VALIDATED: until the validator exists,
gains on self-checking programs may be miscompiles or whole-program constant folding.

One run per strategy at the largest budget; smaller budgets are read off its best-so-far curve.

    python benchmarks/autotune_quality.py [--corpus demo|DIR] [--programs 10] [--budgets 100,300]
        [--strategies random,local,greedy] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import Objective
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluator import Evaluator
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import nest
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module, supported_suffixes
from stitchopt.tune.broadcast import broadcast
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.session import replay_command
from stitchopt.tune.strategies import make_strategy


def geomean_change(scores: list[float]) -> str:
    """Scores are size ratios to -Oz; the -Oz backup caps each at 1."""
    capped = [min(score, 1.0) for score in scores]
    return f"{100 * (math.exp(sum(map(math.log, capped)) / len(capped)) - 1):+.2f}%"


def corpus(name: str, limit: int) -> list[Path]:
    if name == "demo":
        paths = list(demo_programs().values())
    else:
        paths = sorted(p for p in Path(name).iterdir() if p.suffix in supported_suffixes())
    return paths[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="demo")
    parser.add_argument("--programs", type=int, default=10)
    parser.add_argument("--budgets", default="100,300")
    parser.add_argument("--strategies", default="random,local,greedy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    budgets = sorted(int(b) for b in args.budgets.split(","))
    toolchain = find_toolchain()
    catalogue = load_catalogue(toolchain)
    paths = corpus(args.corpus, args.programs)
    objective = Objective()
    rows = []
    with tempfile.TemporaryDirectory() as scratch, EvaluationStore(Path(scratch) / "c.sqlite") as store:
        evaluator = Evaluator(toolchain, store)
        modules = [load_module(toolchain, p) for p in paths]
        oz = evaluator.baselines["Oz"]
        for strategy in args.strategies.split(","):
            start, evaluated = time.monotonic(), evaluator.counters.evaluated
            runs = [
                tune(evaluator, m, make_strategy(strategy, catalogue, args.seed, oz.pipeline), catalogue, objective,
                     Budget(budgets[-1]))
                for m in modules
            ]
            search_seconds = time.monotonic() - start
            rate = (evaluator.counters.evaluated - evaluated) / search_seconds
            for budget in budgets:
                scores = [run.curve[min(budget, len(run.curve)) - 1] if run.curve else 1.0 for run in runs]
                rows.append([strategy, f"{budget:,}", geomean_change(scores), "", "", "", f"{rate:.1f}"])
            minimized = [
                minimize(evaluator, m, run.best_passes, catalogue, objective, insertion=False)
                if run.best_passes is not None and run.best_score < 1.0 else None
                for m, run in zip(modules, runs, strict=True)
            ]
            after_min = [mz.score if mz else 1.0 for mz in minimized]
            lengths = [len(mz.passes) for mz in minimized if mz]
            record = RunRecord(toolchain.identity, str(objective), strategy, tuple(
                ProgramRecord(str(path), mz.passes if mz else None, nest(mz.passes, catalogue) if mz else oz.pipeline,
                              None, None, budgets[-1], replay_command(evaluator, oz.pipeline))
                for path, mz in zip(paths, minimized, strict=True)
            ))
            outcome = broadcast(evaluator, catalogue, record)
            after_broadcast = [
                objective.score(evaluator.evaluate(m, p.pipeline, oz.options), evaluator.evaluate(m, oz.pipeline,
                                                                                                  oz.options))
                for m, p in zip(modules, outcome.record.programs, strict=True)
            ]
            rows[-1][3:6] = [geomean_change(after_min), geomean_change(after_broadcast),
                             f"{sum(lengths) / len(lengths):.1f}" if lengths else "-"]
            print(f"{strategy}: search {search_seconds:.0f} s, broadcast changed {outcome.changed} of {len(paths)}",
                  flush=True)
        evaluator.close()
    headers = ["strategy", "evaluations/program", "geomean vs -Oz", "+ minimize", "+ broadcast",
               "mean minimized length", "evaluations/s"]
    print(f"\n{args.corpus}: {len(paths)} programs, seed {args.seed}, LLVM {toolchain.version_string}, "
          f"objective {objective}; NOT VALIDATED\n")
    print(to_markdown(Rows("autotune", headers, rows)))


if __name__ == "__main__":
    main()
