"""The program's runtime under a pass list: the objective's `perf` term, for programs that can be run.

Instructions executed, counted by valgrind's callgrind, are the default when valgrind is installed: they are
deterministic, so a search is reproducible and two workers do not disturb each other's measurements. Without
valgrind (or with `counter="seconds"`), the median wall time of repeated runs is used, measured one at a time.
Hardware counters (`perf stat`) are not used: containers and VMs often do not expose them.

A run that fails, or prints or exits differently from the -Oz build, has no runtime (the list scores as a
failure): the meter doubles as a differential test of the program itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import statistics
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import CompileOptions, EvalResult, IRModule, Objective
from stitchopt.errors import InputError, ToolchainError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import is_source
from stitchopt.tune.acceptance import ProgramRun
from stitchopt.validate.builder import ProgramBuilder
from stitchopt.validate.sandbox import Limits, RunOutcome, scratch_directory
from stitchopt.validate.security_guard import SecurityMeter
from stitchopt.validate.selection import differential_suite
from stitchopt.validate.suites import SuiteProgram

COUNTERS = ("auto", "instructions", "seconds")
DEFAULT_REPEATS = 5
PERF_LIMITS = Limits(wall_seconds=120, cpu_seconds=120, address_space_bytes=16 << 30)
_COLLECTED_RE = re.compile(rb"Collected : (\d+)")


class RuntimeMeter:
    """Measures one program (run on each of its inputs, costs summed) built from `module` with a pipeline."""

    def __init__(
        self,
        toolchain: Toolchain,
        store: EvaluationStore | None,
        module: IRModule,
        runs: Sequence[SuiteProgram],
        options: CompileOptions,
        *,
        counter: str = "auto",
        repeats: int = DEFAULT_REPEATS,
        limits: Limits = PERF_LIMITS,
    ) -> None:
        if counter not in COUNTERS:
            raise ValueError(f"unknown runtime counter {counter!r}: use {', '.join(COUNTERS)}")
        valgrind = shutil.which("valgrind")
        if counter == "instructions" and valgrind is None:
            raise ToolchainError("valgrind not found: install Debian's valgrind, or measure seconds instead")
        self.wrapper: tuple[str, ...] = ()
        if valgrind is not None and counter != "seconds":
            self.wrapper = (valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null")
        self.unit = "instructions (valgrind)" if self.wrapper else f"seconds (median of {repeats} runs)"
        self.builder = ProgramBuilder(toolchain, store, limits=limits)
        self.store = store
        self.module, self.runs, self.options, self.repeats = module, tuple(runs), options, repeats
        self._one_at_a_time = threading.Lock()  # wall times measured alone are less noisy
        self._expected: list[RunOutcome] | None = None
        self._key = hashlib.sha256(
            json.dumps([module.sha256, [r.digest for r in self.runs], self.unit]).encode()
        ).hexdigest()

    def expect(self, pipeline: str) -> None:
        """Take the behaviour under `pipeline` (normally -Oz) as what every other list must reproduce."""
        outcomes = self._build_and_run(pipeline, check=False)
        if outcomes is None:
            raise ToolchainError(f"{self.module.name} does not build or run under -Oz: cannot measure its runtime")
        self._expected = outcomes

    def measure(self, pipeline: str, result: EvalResult) -> float | None:
        """The program's cost under `pipeline` (cached by optimized module), or None when it misbehaves."""
        cache_key = (self._key, result.ir_hash or pipeline, self.options.codegen_key())
        if self.store is not None:
            cached = self.store.get_artifact("runtime", *cache_key)
            if cached is not None:
                value = json.loads(cached)
                return None if value is None else float(value)
        outcomes = self._build_and_run(pipeline, check=True)
        cost = None if outcomes is None else sum(self._cost(runs) for runs in outcomes)
        if self.store is not None and (outcomes is not None or self.wrapper):
            self.store.put_artifact("runtime", json.dumps(cost).encode(), *cache_key)
        return cost

    def _build_and_run(self, pipeline: str, check: bool) -> list[RunOutcome] | None:
        with scratch_directory("perf") as scratch:
            work = Path(scratch)
            program = self.runs[0]
            if isinstance(self.builder.optimize(program, self.module.bitcode, pipeline, self.options, work), str):
                exe = self.builder.link(program, work, self.options)
                if isinstance(exe, Path):
                    return self._run_all(exe, check)
        return None

    def _run_all(self, exe: Path, check: bool) -> list[RunOutcome] | None:
        """Each input's runs (the last one kept per input), None on any misbehaviour."""
        kept: list[RunOutcome] = []
        for index, program in enumerate(self.runs):
            repeats = 1 if self.wrapper else self.repeats
            with self._one_at_a_time if not self.wrapper else contextlib.nullcontext():
                outcomes = [self.builder.run(program, exe, self.wrapper) for _ in range(repeats)]
            if any(o.timed_out or o.returncode < 0 for o in outcomes):
                return None
            expected = self._expected[index] if check and self._expected is not None else None
            if expected is not None and not all(o.behaves_like(expected) for o in outcomes):
                return None
            kept.append(_summarize(outcomes))
        return kept

    def _cost(self, outcome: RunOutcome) -> float:
        if self.wrapper:
            match = _COLLECTED_RE.search(outcome.stderr)
            if match is None:
                raise ToolchainError(f"valgrind printed no instruction count: {outcome.stderr[-300:]!r}")
            return float(match.group(1))
        return outcome.seconds


def _summarize(outcomes: list[RunOutcome]) -> RunOutcome:
    """One outcome standing for repeated runs: the median wall time."""
    seconds = statistics.median(o.seconds for o in outcomes)
    return replace(outcomes[0], seconds=seconds)


def attach_runtime_meter(evaluator: Evaluator, module: IRModule, path: Path, program_run: ProgramRun) -> RuntimeMeter:
    """Make every evaluation of `module` carry the program's runtime, relative to -Oz's behaviour and cost."""
    if not is_source(path):
        raise InputError(f"{path}: the perf objective needs a C/C++ source to build and run, not IR")
    runs = differential_suite(path, program_run.args, program_run.inputs).programs
    oz = evaluator.baselines["Oz"]
    meter = RuntimeMeter(evaluator.toolchain, evaluator.store, module, runs, oz.options, counter=program_run.counter)
    meter.expect(oz.pipeline)
    evaluator.attach_probe(module, "perf", meter)
    return meter


def attach_probes(
    evaluator: Evaluator, module: IRModule, objective: Objective, path: Path, program_run: ProgramRun | None
) -> str:
    """Attach the probes `objective` weighs: the runtime meter (`perf`, when the program can be run) and the
    security meter (`security`). Returns the runtime's unit ("" without a runtime meter)."""
    unit = ""
    if objective.needs_runtime and program_run is not None:
        unit = attach_runtime_meter(evaluator, module, path, program_run).unit
    if objective.weighs("security"):
        oz = evaluator.baselines["Oz"]
        meter = SecurityMeter(evaluator.toolchain, evaluator.store, module, oz.options, evaluator.timeout)
        evaluator.attach_probe(module, "security", meter)
    return unit
