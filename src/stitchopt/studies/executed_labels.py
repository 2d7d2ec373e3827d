"""Time-proxy labels without a GPU: each labelled kernel with a launch built with -O3 and with -O3 and each unroll
count of `TIME_UNROLL_COUNTS`, each build's launch run on the CPU with its instructions counted beside -O3's (what
`gpu optimize --objective time --launch` compares), with its ptxas measures. benchmarks/gpu_time_chooser.py learns
from them which unroll count to build for a kernel whose launch is not known."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

from stitchopt.errors import StitchoptError
from stitchopt.labels.device import KernelUnit
from stitchopt.studies.kernel_emulation import per_kernel, unit_launch
from stitchopt.toolchain.device import build_device, codegen_ir, device_baseline
from stitchopt.toolchain.device_time import TIME_UNROLL_COUNTS, unroll_flags
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.tune.device import Measure
from stitchopt.validate.device_run import DeviceRunner, RunCheck


def unrolled_names() -> list[str]:
    """The builds labelled beside -O3, by the opt flags each adds."""
    return [" ".join(unroll_flags(count)) for count in TIME_UNROLL_COUNTS]


def executed_record(toolchain: Toolchain, runner: DeviceRunner, unit: KernelUnit) -> dict[str, Any]:
    """One kernel's labels: -O3's ptxas measures, and per unrolled build its measures, the verdict of its CPU run
    beside -O3's and the instructions it executed against -O3's ("ratio", None where a run failed or differs);
    "launch" False where the kernel has none, or "error" where -O3's own build fails (no builds then)."""
    record: dict[str, Any] = {"uri": unit.uri, "family": unit.family, "split": unit.split, "kernel": unit.kernel}
    try:
        o3 = build_device(toolchain, unit.module.bitcode, device_baseline(unit.options).pipeline, unit.options)
        launch = unit_launch(toolchain, unit, o3.optimized)
        reference_ir = codegen_ir(toolchain, o3.optimized, unit.options) if launch is not None else ""
    except StitchoptError as exc:  # -O3's own build: nothing to label against
        return {**record, "launch": False, "error": str(exc), "builds": {}}
    record |= {"launch": launch is not None, "reference": asdict(Measure.of(o3.kernels[unit.kernel])), "builds": {}}
    if launch is None:
        return record
    check = RunCheck(runner, [(unit.kernel, launch)])
    for name in unrolled_names():
        options = replace(unit.options, opt_flags=(*unit.options.opt_flags, *name.split()))
        try:
            built = build_device(toolchain, unit.module.bitcode, device_baseline(options).pipeline, options)
            executed = check.executed(reference_ir, codegen_ir(toolchain, built.optimized, options))
        except StitchoptError as exc:
            record["builds"][name] = {"error": str(exc)}
            continue
        (verdict,) = executed.verdicts.values()
        measures = asdict(Measure.of(built.kernels[unit.kernel]))
        record["builds"][name] = {**measures, "verdict": verdict, "ratio": executed.ratio}
    return record


def executed_records(
    toolchain: Toolchain,
    units: Sequence[KernelUnit],
    jobs: int = 1,
    progress: Callable[[str], None] = lambda line: None,
) -> list[dict[str, Any]]:
    """`executed_record` of each unit, `jobs` at a time."""

    def summary(record: dict[str, Any]) -> str:
        ratios = {name: build.get("ratio") for name, build in record["builds"].items()}
        return str(ratios) if record["launch"] else "no launch"

    return per_kernel(
        toolchain, units, lambda runner, unit: executed_record(toolchain, runner, unit), summary, jobs, progress
    )
