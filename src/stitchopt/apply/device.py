"""The device model applied to a GPU device module: static mode builds its first choice beside clang's -O3 device
compile and keeps it only when no kernel is worse in SASS, registers, spills or stack; jit mode does so with its
first k lists and keeps the smallest. -O3 is always the backup, as -Oz is on the host.

The objective says what else a kept list must not be worse in: "size" nothing more; "time" also each kernel's
loops as its PTX shows them (`toolchain/ptx_code.py`: no more loops, no more loops tested at the top and no
fewer loads and stores in innermost loops than -O3's, counted over the kernel): the signs that most slower
kernels showed on a GPU where SASS alone did not.

With launches (`validate/device_run.py`'s launch file), a list that would be kept is first run on the CPU beside
-O3's build: a list that changes a launch's outputs is refused like a miscompile (a launch that cannot run there
decides nothing)."""

from __future__ import annotations

from dataclasses import dataclass, field

from stitchopt.core import CompileOptions, IRModule
from stitchopt.errors import InputError, StitchoptError
from stitchopt.models.device_model import DeviceModel, kernel_features
from stitchopt.toolchain.device import (
    DeviceBuild,
    KernelMeasure,
    build_device,
    device_baseline,
    kernel_names,
    kernel_unit,
)
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble
from stitchopt.tune.device import Measure
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

    @property
    def kept_list(self) -> bool:
        return self.answer is not self.reference


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


def _worse(name: str, kernel: KernelMeasure, reference: KernelMeasure, objective: str) -> str:
    """What is worse than -O3 in one kernel's build under `objective`, with both numbers ('' when nothing is)."""
    built, o3 = Measure.of(kernel), Measure.of(reference)
    worse = [f"{what} {getattr(o3, what)} -> {getattr(built, what)}" for what in built.worse_in(o3)]
    if objective == "time":
        worse += kernel.loops.slower_signs(reference.loops)
    return f"{name} ({', '.join(worse)})" if worse else ""


def sass_and_registers(build: DeviceBuild) -> tuple[int, int]:
    """SASS bytes of all kernels, then their registers: what decides between lists no worse than -O3."""
    return sum(k.sass_bytes for k in build.kernels.values()), sum(k.resources.registers for k in build.kernels.values())
