"""PassListEval: judge one pass list on every program of a suite, in parallel, with verdicts cached.

A verdict is cached per (toolchain, pipeline, compile options, program), so a list validated once is known
on the next run without building anything, and suites that share programs share verdicts.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import CompileOptions
from stitchopt.passes.pipeline import check_pipeline
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.builder import JUDGING, ProgramBuilder
from stitchopt.validate.sandbox import Limits
from stitchopt.validate.suites import Suite, SuiteProgram
from stitchopt.validate.verdicts import ValidationReport, Verdict

Progress = Callable[[Verdict], None]


def tuning_options(toolchain: Toolchain) -> CompileOptions:
    """The options the autotuner measures lists with (clang's -Oz thresholds): validate what was measured."""
    return load_baselines(toolchain, ("Oz",))["Oz"].options


class Validator:
    """Runs pass lists over suites. One per process; `jobs` programs are built and run at once."""

    def __init__(
        self,
        toolchain: Toolchain,
        store: EvaluationStore | None = None,
        *,
        options: CompileOptions | None = None,
        jobs: int | None = None,
        limits: Limits = Limits(),
    ) -> None:
        self.toolchain = toolchain
        self.store = store
        self.options = options if options is not None else tuning_options(toolchain)
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.builder = ProgramBuilder(toolchain, store, limits=limits)

    def validate(
        self, suite: Suite, pipeline: str, *, fail_fast: bool = False, progress: Progress | None = None
    ) -> ValidationReport:
        """Judge `pipeline` on every program. With `fail_fast`, stop at the first failure (report incomplete)."""
        check_pipeline(self.toolchain, pipeline)
        start = time.perf_counter()
        verdicts: dict[str, Verdict] = {}
        stopped = False
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            pending: set[Future[Verdict]] = {pool.submit(self.judge, p, pipeline) for p in suite.programs}
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        verdict = future.result()
                        verdicts[verdict.program] = verdict
                        if progress is not None:
                            progress(verdict)
                        stopped = stopped or (fail_fast and verdict.status.counts_against)
                    if stopped:
                        break
            except BaseException:  # Ctrl-C, say: end the programs running now rather than wait for their limits
                self.builder.sandbox.stop()
                raise
            finally:
                for future in pending:
                    future.cancel()
        ordered = tuple(verdicts[p.name] for p in suite.programs if p.name in verdicts)
        return ValidationReport(
            suite=suite.name,
            pipeline=pipeline,
            toolchain=self.toolchain.version_string,
            verdicts=ordered,
            seconds=time.perf_counter() - start,
            complete=len(ordered) == len(suite.programs),
        )

    def prepare(self, suite: Suite) -> None:
        """Build every program's IR and reference runs now (cached), e.g. before timing lists."""

        def build(program: SuiteProgram) -> None:
            if self.builder.references(program).excluded is None:
                self.builder.ir(program)

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            try:
                list(pool.map(build, suite.programs))
            except KeyboardInterrupt:  # end the reference runs now rather than wait for their limits
                self.builder.sandbox.stop()
                raise

    def judge(self, program: SuiteProgram, pipeline: str) -> Verdict:
        """One program's verdict on one list, from the cache when this exact question was answered before."""
        key = (self.toolchain.identity, pipeline, self.options.key(), program.digest, JUDGING)
        if self.store is not None:
            cached = self.store.get_artifact("verdict", *key)
            if cached is not None:
                return Verdict.from_dict(json.loads(cached), cached=True)
        verdict = self.builder.judge(program, pipeline, self.options)
        if self.store is not None and verdict.status.repeatable:
            self.store.put_artifact("verdict", json.dumps(verdict.to_dict()).encode(), *key)
        return verdict
