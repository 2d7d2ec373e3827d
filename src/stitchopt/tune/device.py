"""Search pass lists for GPU device code: the CPU's search (strategies, driver, minimization) with clang's -O3
device compile as the reference and backup, and ptxas's cubin as the measured object.

The search minimizes the cubin's size (SASS without padding). Smaller code is not always better code on a GPU:
a list that unrolls less has fewer instructions but may run slower, and one that saves instructions may use
more registers. So the answer is kept only when ptxas reports every kernel no worse than -O3 in SASS bytes,
registers, spills and stack; else -O3 stays the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from stitchopt.core import IRModule, Objective
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import Baseline
from stitchopt.toolchain.device import DeviceBuild, KernelMeasure, build_device
from stitchopt.toolchain.frontend import disassemble
from stitchopt.tune.driver import Budget, TuningRun, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.strategies import make_strategy
from stitchopt.validate.device_run import RunCheck, run_refusal


@dataclass(frozen=True)
class DeviceTuning:
    """The answer (None: -O3, when nothing beat it or what did was worse on another measure), its pipeline,
    the builds of -O3 and of the answer, and what the search found before that check."""

    run: TuningRun
    passes: PassNames | None
    pipeline: str
    score: float  # the answer's cubin bytes relative to -O3's (1.0: -O3)
    reference: DeviceBuild
    answer: DeviceBuild
    rejected: str | None = None  # why the search's best was not kept
    runs: dict[str, str] = field(default_factory=dict)  # with a run check: each launch's verdict for the best


MEASURES = ("sass", "registers", "spilled", "stack")  # a Measure's fields, in the order results name them


@dataclass(frozen=True)
class Measure:
    """A kernel as one list builds it: what the search, the labels and the device model compare."""

    sass: int
    registers: int
    spilled: int  # bytes stored and loaded
    stack: int

    @classmethod
    def of(cls, kernel: KernelMeasure) -> Measure:
        r = kernel.resources
        return cls(kernel.sass_bytes, r.registers, r.spill_store_bytes + r.spill_load_bytes, r.stack_bytes)

    def worse_in(self, reference: Measure) -> list[str]:
        """The measures (of MEASURES) this build is worse in than `reference`."""
        return [what for what in MEASURES if getattr(self, what) > getattr(reference, what)]

    def no_worse_than(self, reference: Measure) -> bool:
        return not self.worse_in(reference)

    def better_than(self, reference: Measure) -> bool:
        """No worse anywhere and smaller or with fewer registers: a kernel the list improves."""
        return self.no_worse_than(reference) and (self.sass < reference.sass or self.registers < reference.registers)


def no_worse(candidate: KernelMeasure, reference: KernelMeasure) -> bool:
    """No more SASS, registers, spilled bytes or stack than `reference`."""
    return Measure.of(candidate).no_worse_than(Measure.of(reference))


def tune_device(
    evaluator: Evaluator,
    module: IRModule,
    catalogue: Catalogue,
    reference: Baseline,
    start: str,
    *,
    strategy: str = "local",
    seed: int = 0,
    budget: Budget = Budget(200),
    minimize_best: bool = True,
    on_progress: Callable[[TuningRun], None] | None = None,
    run_check: RunCheck | None = None,
) -> DeviceTuning:
    """`start`: clang's printed device pipeline, whose passes local search starts from. With `run_check`, the best
    is refused where a launch run on the CPU writes other outputs than -O3's build (one that cannot run there
    decides nothing)."""
    assert catalogue.device, "GPU code is searched with the device catalogue (load_catalogue(device=True))"
    toolchain, options = evaluator.toolchain, reference.options
    built = build_device(toolchain, module.bitcode, reference.pipeline, options)
    if run_check:
        run_check = run_check.fitted(
            disassemble(toolchain, module.bitcode, module.name), list(built.kernels), module.name
        )
    searched = make_strategy(strategy, catalogue, seed, start)
    run = tune(
        evaluator, module, searched, catalogue, Objective(), budget, on_progress=on_progress, reference=reference
    )
    if run.best_passes is None:
        return DeviceTuning(run, None, reference.pipeline, 1.0, built, built)
    passes, score = run.best_passes, run.best_score
    if minimize_best:
        shortened = minimize(evaluator, module, passes, catalogue, insertion=False, reference=reference)
        passes, score = shortened.passes, shortened.score
    pipeline = tuned_pipeline(passes, catalogue)
    answer = build_device(toolchain, module.bitcode, pipeline, options)
    worse = [name for name, kernel in answer.kernels.items() if not no_worse(kernel, built.kernels[name])]
    if worse:
        reason = f"{pipeline} is worse than -O3 in registers, spills, stack or SASS for {', '.join(worse)}"
        return DeviceTuning(run, None, reference.pipeline, 1.0, built, built, reason)
    runs = run_check.verdicts(toolchain, module.bitcode, (reference.pipeline, pipeline), options) if run_check else {}
    if refusal := run_refusal(runs):
        return DeviceTuning(run, None, reference.pipeline, 1.0, built, built, f"{pipeline} {refusal}", runs)
    return DeviceTuning(run, passes, pipeline, score, built, answer, runs=runs)
