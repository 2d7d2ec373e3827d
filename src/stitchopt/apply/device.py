"""The device model applied to a GPU device module: static mode builds its first choice beside clang's -O3 device
compile and keeps it only when no kernel is worse in SASS, registers, spills or stack; jit mode does so with its
first k lists and keeps the smallest. -O3 is always the backup, as -Oz is on the host.

The objective says what else a kept list must not be worse in: "size" nothing more; "time" also each kernel's
loops as its PTX shows them (`toolchain/ptx_code.py`: no more loops, no more loops tested at the top and no
fewer loads and stores in innermost loops than -O3's, counted over the kernel): the signs that most slower
kernels showed on a GPU where SASS alone did not.

With launches (`validate/device_run.py`'s launch file), a list that would be kept is first run on the CPU beside
-O3's build: a list that changes a launch's outputs is refused like a miscompile (a launch that cannot run there
decides nothing). Under "time", launches decide instead of the loop signs: each list, and -O3 with each unroll
count of `TIME_UNROLL_COUNTS` (an opt flag: no pass list says it), runs on the launches' data with its executed
instructions counted, and the build that executes fewest is kept where that is `TIME_MARGIN` fewer than -O3's,
with -O3's outputs and no more spills or stack (local memory, which the CPU run does not see).

How it was chosen: on an H200's times of 35 kernels' builds, the build executing fewest instructions was faster
than -O3 or as fast on every held-out kernel (docs/results.md); a ranking, not a time: it ranks builds of one
kernel on one launch's data, and says nothing of occupancy or memory latency."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from stitchopt.core import CompileOptions, IRModule
from stitchopt.errors import InputError, StitchoptError
from stitchopt.models.device_model import DeviceModel, kernel_features
from stitchopt.toolchain.device import (
    DEVICE_LEVEL,
    DeviceBuild,
    KernelMeasure,
    build_device,
    codegen_ir,
    device_baseline,
    kernel_names,
    kernel_unit,
    ptx_functions,
)
from stitchopt.toolchain.device_time import (
    LOCAL_MEMORY,
    TIME_MARGIN,
    TIME_UNROLL_COUNTS,
    fewest_executed,
    unroll_flags,
)
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble
from stitchopt.tune.device import MEASURES, Measure
from stitchopt.validate.device_run import RunCheck, run_refusal

DEVICE_MODES = ("static", "jit")
DEVICE_OBJECTIVES = ("size", "time")
DEVICE_JIT_K = 10  # builds are cheap (ptxas, seconds); the first 10 lists of the covering order reach most kernels


@dataclass(frozen=True)
class DeviceChoice:
    pipeline: str  # what to build with (-O3's pipeline when -O3 stays)
    reference: DeviceBuild  # -O3's build
    answer: DeviceBuild  # the chosen build (-O3's when -O3 stays)
    tried: dict[str, str | None]  # every list built beside -O3, and why it was not kept (None: kept)
    runs: dict[str, dict[str, str]] = field(default_factory=dict)  # per list run, each launch's verdict
    opt_flags: tuple[str, ...] = ()  # what opt takes beside the pipeline (an unroll count), for the time objective
    executed: dict[str, float] = field(default_factory=dict)  # per build counted: instructions against -O3's

    @property
    def kept_list(self) -> bool:
        return self.answer is not self.reference

    @property
    def label(self) -> str:
        """The chosen build's name in `tried`, `runs` and `executed`."""
        return build_label(self.pipeline, self.opt_flags)


def choose_device_list(
    toolchain: Toolchain,
    model: DeviceModel,
    module: IRModule,
    options: CompileOptions,
    mode: str,
    k: int = DEVICE_JIT_K,
    objective: str = "size",
    run_check: RunCheck | None = None,
) -> DeviceChoice:
    """The model's choice for `module` (all its kernels: one list builds them all); with `run_check`, a list that
    would be kept is run first, and refused where a launch's outputs differ from -O3's."""
    if mode not in DEVICE_MODES:
        raise ValueError(f"unknown device mode {mode!r}")
    if objective not in DEVICE_OBJECTIVES:
        raise ValueError(f"unknown device objective {objective!r}")
    text = disassemble(toolchain, module.bitcode, module.name)
    kernels = kernel_names(text)
    if not kernels:
        raise InputError(f"{module.name}: no kernel in this device code: nothing to choose a list for")
    if run_check:
        run_check = run_check.fitted(text, kernels, module.name)
    units = [(kernel, kernel_unit(toolchain, module.bitcode, kernel, text)) for kernel in kernels]
    features = [
        kernel_features(
            toolchain, IRModule(f"{module.name}#{kernel}", unit, module.triple, module.source_filename), model.features
        )
        for kernel, unit in units
    ]
    order = model.order_module(features)
    lists = [p for p in order if p is not None]
    candidates = order[:1] if mode == "static" else lists[:k]
    reference = device_baseline(options).pipeline
    o3 = build_device(toolchain, module.bitcode, reference, options)
    if objective == "time" and run_check:
        lists = [p for p in candidates if p is not None]
        return _fewest_executed(toolchain, module.bitcode, options, lists, o3, run_check)
    best, best_pipeline = o3, reference
    tried: dict[str, str | None] = {}
    runs: dict[str, dict[str, str]] = {}
    for pipeline in (p for p in candidates if p is not None):
        try:
            built = build_device(toolchain, module.bitcode, pipeline, options)
        except StitchoptError as exc:
            tried[pipeline] = str(exc)
            continue
        worse = [_worse(name, kernel, o3.kernels[name], objective) for name, kernel in built.kernels.items()]
        worse = [line for line in worse if line]
        if worse:
            more = f" and {len(worse) - 3} more kernels" if len(worse) > 3 else ""
            tried[pipeline] = f"worse than -O3: {'; '.join(worse[:3])}{more}"
        elif sass_and_registers(built) >= sass_and_registers(best):
            tried[pipeline] = "no smaller than -O3" if best is o3 else f"no smaller than {best_pipeline}"
        else:
            if run_check:
                runs[pipeline] = run_check.verdicts(toolchain, module.bitcode, (reference, pipeline), options)
            refusal = run_refusal(runs.get(pipeline, {}))
            if refusal:
                tried[pipeline] = refusal
                continue
            tried[pipeline] = None
            if best is not o3:
                tried[best_pipeline] = "a later list was smaller"
            best, best_pipeline = built, pipeline
    return DeviceChoice(best_pipeline, o3, best, tried, runs)


def build_label(pipeline: str, opt_flags: tuple[str, ...]) -> str:
    """How a build is named in `DeviceChoice.tried`: its pipeline, and the opt flags it adds."""
    return " ".join([pipeline, *opt_flags])


def _fewest_executed(
    toolchain: Toolchain,
    bitcode: bytes,
    options: CompileOptions,
    lists: list[str],
    o3: DeviceBuild,
    run_check: RunCheck,
) -> DeviceChoice:
    """The time objective with launches: of `lists` and -O3 with each unroll count, the build whose launches
    execute fewest instructions on the CPU (`fewest_executed`); -O3 where none executes `TIME_MARGIN` fewer. A
    build that changes a kernel no launch runs is refused: nothing measured that kernel. InputError where -O3's
    own build does not run with the launches (nothing to count against: mostly a launch that is wrong)."""
    reference = device_baseline(options).pipeline
    builds = [(p, ()) for p in lists if p != reference] + [(reference, unroll_flags(n)) for n in TIME_UNROLL_COUNTS]
    labels = [build_label(pipeline, flags) for pipeline, flags in builds]
    reference_ir = codegen_ir(toolchain, o3.optimized, options)
    if (baseline := run_check.executed(reference_ir, reference_ir)).ratio is None:
        failed = "; ".join(f"{launch}: {verdict}" for launch, verdict in baseline.verdicts.items() if verdict != "same")
        crashed = "SIGSEGV" in failed or "SIGBUS" in failed
        hint = (
            " (a buffer smaller than the kernel reads, or a scalar it takes otherwise, crashes it)" if crashed else ""
        )
        raise InputError(
            f"the time objective counts nothing: -{DEVICE_LEVEL}'s own build did not run on the CPU: {failed}{hint}"
        )
    launched = {kernel for kernel, _ in run_check.launches}
    o3_code = ptx_functions(o3.ptx)
    tried: dict[str, str | None] = {}
    runs: dict[str, dict[str, str]] = {}
    executed: dict[str, float] = {}
    built: dict[str, DeviceBuild] = {}
    for label, (pipeline, flags) in zip(labels, builds, strict=True):
        with_flags = replace(options, opt_flags=(*options.opt_flags, *flags))
        try:
            build = build_device(toolchain, bitcode, pipeline, with_flags)
            code = ptx_functions(build.ptx)
            worse = [
                _worse(name, kernel, o3.kernels[name], "size", LOCAL_MEMORY) for name, kernel in build.kernels.items()
            ]
            refused = [f"worse than -{DEVICE_LEVEL}: {line}" for line in worse if line]
            unmeasured = [
                name for name in sorted(build.kernels) if name not in launched and code[name] != o3_code[name]
            ]
            refused += [f"changes {name}, which no launch runs (give it one to count it)" for name in unmeasured]
            if refused:
                tried[label] = "; ".join(refused)
                continue
            check = run_check.executed(reference_ir, codegen_ir(toolchain, build.optimized, with_flags))
        except StitchoptError as exc:
            tried[label] = str(exc)
            continue
        runs[label] = check.verdicts
        tried[label] = run_refusal(check.verdicts) or (
            "" if check.ratio is not None else "its launches did not all run on the CPU: no count to compare"
        )
        if not tried[label] and check.ratio is not None:
            executed[label], built[label] = check.ratio, build
    counted = [label for label in labels if label in executed]
    chosen = fewest_executed([executed[label] for label in counted])
    for label in counted:
        change = f"executes {100 * (executed[label] - 1):+.1f}% instructions"
        best = None if chosen is None else counted[chosen]
        if executed[label] > 1 - TIME_MARGIN:
            tried[label] = f"{change}: not {TIME_MARGIN:.0%} fewer than -{DEVICE_LEVEL}'s"
        elif best is not None and label != best:
            than = "fewer" if executed[best] < executed[label] else "as many, tried first"
            tried[label] = f"{change}: {best} executes {than} ({100 * (executed[best] - 1):+.1f}%)"
        else:
            tried[label] = None
    if chosen is None:
        return DeviceChoice(reference, o3, o3, tried, runs, (), executed)
    pipeline, flags = builds[labels.index(counted[chosen])]
    return DeviceChoice(pipeline, o3, built[counted[chosen]], tried, runs, flags, executed)


def _worse(
    name: str, kernel: KernelMeasure, reference: KernelMeasure, objective: str, measures: tuple[str, ...] = MEASURES
) -> str:
    """What is worse than -O3 in one kernel's build under `objective`, of ptxas's `measures`, with both numbers
    ('' when nothing is)."""
    built, o3 = Measure.of(kernel), Measure.of(reference)
    worse = [f"{what} {getattr(o3, what)} -> {getattr(built, what)}" for what in built.worse_in(o3) if what in measures]
    if objective == "time":
        worse += kernel.loops.slower_signs(reference.loops)
    return f"{name} ({', '.join(worse)})" if worse else ""


def sass_and_registers(build: DeviceBuild) -> tuple[int, int]:
    """SASS bytes of all kernels, then their registers: what decides between lists no worse than -O3."""
    return sum(k.sass_bytes for k in build.kernels.values()), sum(k.resources.registers for k in build.kernels.values())
