"""`stitchopt tune`: search, minimize, validate and fall back to -Oz for each program, with a replayable answer.

The answer for a program is the best list that passes its guards and (when a validation is given) the full
validation; lists are tried best first: the minimized best, then each earlier best of the search, then -Oz.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TypeVar

from stitchopt.core import EvalResult, IRModule, Objective
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.frontend import load_module
from stitchopt.toolchain.llvm import llc_command, opt_command
from stitchopt.tune.acceptance import (
    GuardCheck,
    ListValidation,
    ProgramRun,
    program_guard,
    self_check_for,
    validation_for,
)
from stitchopt.tune.driver import Budget, TuningRun, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.runtime import attach_probes
from stitchopt.tune.strategies import Strategy, make_strategy


@dataclass(frozen=True)
class TunedProgram:
    """The answer for one program: `passes` is None when -Oz itself is best (the -Oz backup)."""

    path: Path
    run: TuningRun
    passes: PassNames | None
    pipeline: str
    result: EvalResult
    validated: bool = False
    validation: str = ""  # what validation said, including lists it rejected
    runtime_unit: str = ""  # what `result.runtime` counts, when the objective has a perf term


def replay_command(evaluator: Evaluator, pipeline: str) -> str:
    """The plain LLVM commands that reproduce a result from the unoptimized IR (`stitchopt ir`). The -Oz backup
    is clang's own -Oz (what the baseline is defined as), not its expanded pipeline of thousands of characters."""
    oz = evaluator.baselines["Oz"]
    if pipeline == oz.pipeline:
        return shlex.join([evaluator.toolchain.tool("clang"), "-Oz", "-c", "in.bc", "-o", "out.o"])
    options = oz.options
    opt = opt_command(
        evaluator.toolchain.tool("opt"), pipeline, flags=options.opt_args(), args=["in.bc", "-o", "out.bc"]
    )
    llc = llc_command(evaluator.toolchain.tool("llc"), flags=options.llc_flags(), args=["out.bc", "-o", "out.o"])
    return f"{shlex.join(opt)} && {shlex.join(llc)}"


def run_record(
    evaluator: Evaluator,
    tuned: Sequence[TunedProgram],
    objective: Objective,
    strategy: str,
    catalogue: Catalogue,
    run_id: str | None = None,
) -> RunRecord:
    """What to save: per program the answer, its size against -Oz and the commands that replay it, stamped with
    `run_id` (the one in the run's trial log)."""
    programs = tuple(
        ProgramRecord(
            program=str(t.path),
            passes=t.passes,
            pipeline=t.pipeline,
            size_bytes=t.result.size_bytes,
            oz_size_bytes=t.run.oz.size_bytes,
            evaluations=t.run.evaluations,
            replay=replay_command(evaluator, t.pipeline),
            validated=t.validated,
            validation=t.validation,
            runtime=t.result.runtime,
            oz_runtime=t.run.oz.runtime,
            runtime_unit=t.runtime_unit,
            curve=improvements(t.run.curve),
        )
        for t in tuned
    )
    return RunRecord(evaluator.toolchain.identity, str(objective), strategy, programs, catalogue.identity, run_id)


def improvements(curve: Sequence[float]) -> tuple[tuple[int, float], ...]:
    """A best-so-far curve (one score per evaluation) kept only where it changes, and at its end: enough to
    redraw it, a few points instead of thousands."""
    points = [(i + 1, score) for i, score in enumerate(curve) if i == 0 or score != curve[i - 1]]
    if curve and points[-1][0] != len(curve):
        points.append((len(curve), curve[-1]))
    return tuple(points)


MAX_VALIDATED_CANDIDATES = 5  # lists tried per program before settling for -Oz
Candidate = TypeVar("Candidate", bound=Hashable)


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
    run_id: str | None = None,
    on_progress: Callable[[TuningRun], None] | None = None,
    on_answer: Callable[[TunedProgram], None] | None = None,
    guards: bool = True,
    validation: ListValidation | None = None,
    program_run: ProgramRun | None = None,
) -> list[TunedProgram]:
    """Tune each program. With `program_run`, validation also runs each C/C++ program itself and compares its
    behaviour with its -O0 and -O2 builds (for programs with a `main`); an objective with a `perf` term needs
    it to measure runtimes. Trials in `trial_log` are stamped with `run_id`; `on_answer` hears each program's
    answer as it is made. Every program is read first, so that a bad one costs no finished search."""
    if objective.needs_runtime and program_run is None:
        raise InputError("the perf objective needs programs to run: pass --run '{exe} ARGS' (and --inputs DIR)")
    oz = evaluator.baselines["Oz"]
    modules = [load_module(evaluator.toolchain, path) for path in paths]  # a bad input stops the run before work
    tuned = []
    for path, module in zip(paths, modules, strict=True):
        self_check = self_check_for(evaluator, path, program_run, validation)
        guard = program_guard(evaluator, module, self_check) if guards else None
        unit = attach_probes(evaluator, module, objective, path, program_run)
        searcher = make_strategy(strategy, catalogue, seed, oz.pipeline)
        run, chosen, notes = search_and_validate(
            evaluator,
            catalogue,
            module,
            searcher,
            objective=objective,
            budget=budget,
            minimize_best=minimize_best,
            insertion=insertion,
            trial_log=trial_log,
            run_id=run_id,
            on_progress=on_progress,
            guard=guard,
            validation=validation_for(validation, path, program_run),
        )
        if chosen is None:  # -Oz backup: never report anything worse than -Oz, nor anything that failed validation
            note = "; ".join([*notes, "-Oz kept"]) if notes else ""
            answer = TunedProgram(path, run, None, oz.pipeline, run.oz, validation is not None, note, unit)
        else:
            pipeline = tuned_pipeline(chosen, catalogue)
            result = evaluator.evaluate(module, pipeline, oz.options)
            answer = TunedProgram(path, run, chosen, pipeline, result, validation is not None, "; ".join(notes), unit)
        tuned.append(answer)
        if on_answer is not None:
            on_answer(answer)
    return tuned


def search_and_validate(
    evaluator: Evaluator,
    catalogue: Catalogue,
    module: IRModule,
    searcher: Strategy,
    *,
    objective: Objective = Objective(),
    budget: Budget = Budget(),
    minimize_best: bool = True,
    insertion: bool = False,
    trial_log: IO[str] | None = None,
    run_id: str | None = None,
    on_progress: Callable[[TuningRun], None] | None = None,
    guard: GuardCheck | None = None,
    validation: ListValidation | None = None,
) -> tuple[TuningRun, PassNames | None, list[str]]:
    """Search one module, minimize its best, and return the run, the best list that passed validation (None:
    -Oz is the answer) and what validation said."""
    run = tune(evaluator, module, searcher, catalogue, objective, budget, trial_log, on_progress, guard, run_id)
    candidates = list(reversed(run.bests))
    if run.best_passes is not None and minimize_best:
        minimized = minimize(evaluator, module, run.best_passes, catalogue, objective, insertion=insertion, guard=guard)
        if minimized.score <= run.best_score:
            candidates.insert(0, (minimized.passes, minimized.score))
    chosen, notes = first_valid(candidates, catalogue, validation, guard)  # guard answers are remembered
    return run, chosen, notes


def first_valid(
    candidates: list[tuple[PassNames, float]],
    catalogue: Catalogue,
    validation: ListValidation | None,
    guard: GuardCheck | None = None,
) -> tuple[PassNames | None, list[str]]:
    """The best candidate list that beats -Oz, passes the program's guards (when given: for answers that did not
    come from a guarded search) and validation, and what they said on the way; at most
    MAX_VALIDATED_CANDIDATES are tried."""
    return first_passing(
        candidates,
        lambda passes: tuned_pipeline(passes, catalogue),
        guard,
        validation,
        label=lambda passes: f"{len(passes)}-pass list",
    )


def first_passing(
    candidates: Iterable[tuple[Candidate, float]],
    pipeline: Callable[[Candidate], str],
    guard: GuardCheck | None,
    validation: ListValidation | None = None,
    *,
    limit: int | None = MAX_VALIDATED_CANDIDATES,
    label: Callable[[Candidate], str],
) -> tuple[Candidate | None, list[str]]:
    """The first of `candidates` (best first, each with its score relative to -Oz) that beats -Oz and passes
    `guard` and `validation`, and what they said on the way: the one rule that picks an answer, whether the
    candidates are lists (optimize, search, tune) or built objects (`stitchopt-cc`). `limit` bounds the distinct
    candidates tried (None: all)."""
    notes: list[str] = []
    tried: set[Candidate] = set()
    for candidate, score in candidates:
        if score >= 1.0 or candidate in tried or (limit is not None and len(tried) >= limit):
            continue
        tried.add(candidate)
        reasons = guard(pipeline(candidate)) if guard is not None else []
        if reasons:
            notes.append(f"{label(candidate)} failed the guards: {'; '.join(reasons)}")
            continue
        if validation is None:
            return candidate, notes
        verified = validation.check(pipeline(candidate))
        notes.append(f"{label(candidate)} {verified.note}")
        if verified.passed:
            return candidate, notes
    return None, notes
