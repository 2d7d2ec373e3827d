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
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.strategies import PassNames, make_strategy


@dataclass(frozen=True)
class TunedProgram:
    """The answer for one program: `passes` is None when -Oz itself is best (the -Oz backup)."""

    path: Path
    run: TuningRun
    passes: PassNames | None
    pipeline: str
    result: EvalResult


def replay_command(evaluator: Evaluator, pipeline: str) -> str:
    """The plain LLVM commands that reproduce a result from the unoptimized IR (`stitchopt ir`)."""
    options = evaluator.baselines["Oz"].options
    opt = [evaluator.toolchain.tool("opt"), *options.opt_args(), f"-passes={pipeline}", "in.bc", "-o", "out.bc"]
    llc = [evaluator.toolchain.tool("llc"), *options.llc_flags(), "-filetype=obj", "out.bc", "-o", "out.o"]
    return f"{shlex.join(opt)} && {shlex.join(llc)}"


def run_record(
    evaluator: Evaluator, tuned: Sequence[TunedProgram], objective: Objective, strategy: str
) -> RunRecord:
    """What to save: per program the answer, its size against -Oz and the commands that replay it."""
    programs = tuple(
        ProgramRecord(
            program=str(t.path),
            passes=t.passes,
            pipeline=t.pipeline,
            size_bytes=t.result.size_bytes,
            oz_size_bytes=t.run.oz.size_bytes,
            evaluations=t.run.evaluations,
            replay=replay_command(evaluator, t.pipeline),
        )
        for t in tuned
    )
    return RunRecord(evaluator.toolchain.identity, str(objective), strategy, programs)


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
