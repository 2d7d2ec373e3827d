"""`stitchopt tune`: search, minimize and fall back to -Oz for each program, with a replayable answer."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from stitchopt.core import EvalResult, Objective
from stitchopt.evaluator import Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import nest
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.driver import Budget, TuningRun, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.strategies import PassNames, make_strategy


@dataclass(frozen=True)
class TunedProgram:
    """The answer for one program: `passes` is None when -Oz itself is best (the -Oz backup)."""

    path: Path
    run: TuningRun
    passes: PassNames | None
    pipeline: str
    result: EvalResult

    @property
    def size_change_vs_oz(self) -> float | None:
        oz, best = self.run.oz.size_bytes, self.result.size_bytes
        return None if oz is None or best is None or oz == 0 else 100.0 * (best - oz) / oz


def replay_command(evaluator: Evaluator, pipeline: str) -> str:
    """The plain LLVM commands that reproduce a result from the unoptimized IR (`stitchopt ir`)."""
    options = evaluator.baselines["Oz"].options
    opt = [evaluator.toolchain.tool("opt"), *options.opt_args(), f"-passes={pipeline}", "in.bc", "-o", "out.bc"]
    llc = [evaluator.toolchain.tool("llc"), *options.llc_flags(), "-filetype=obj", "out.bc", "-o", "out.o"]
    return f"{shlex.join(opt)} && {shlex.join(llc)}"


def tune_programs(
    evaluator: Evaluator,
    catalogue: Catalogue,
    paths: Sequence[Path],
    *,
    strategy: str = "local",
    objective: Objective = Objective(),
    budget: Budget = Budget(),
    seed: int = 0,
    minimize_best: bool = True,
    insertion: bool = False,
    trial_log: IO[str] | None = None,
    on_progress: Callable[[TuningRun], None] | None = None,
) -> list[TunedProgram]:
    oz = evaluator.baselines["Oz"]
    tuned = []
    for path in paths:
        module = load_module(evaluator.toolchain, path)
        searcher = make_strategy(strategy, catalogue, seed, oz.pipeline)
        run = tune(evaluator, module, searcher, catalogue, objective, budget, trial_log, on_progress)
        passes, score = run.best_passes, run.best_score
        if passes is not None and minimize_best:
            minimized = minimize(evaluator, module, passes, catalogue, objective, insertion=insertion)
            if minimized.score <= score:
                passes, score = minimized.passes, minimized.score
        if passes is None or score >= 1.0:  # -Oz backup: never report anything worse than -Oz
            tuned.append(TunedProgram(path, run, None, oz.pipeline, run.oz))
            continue
        pipeline = nest(passes, catalogue)
        tuned.append(TunedProgram(path, run, passes, pipeline, evaluator.evaluate(module, pipeline, oz.options)))
    return tuned
