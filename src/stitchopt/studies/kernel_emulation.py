"""Run evidence for device lists without a GPU: every pool list of the device labels built on each labelled kernel
that has a launch (studies/gpu_launches.py), run on the CPU beside -O3's build (validate/device_run.py), outputs
compared. The record says, per kernel and list, "same", "differs" or why -O3's own build could not run; a
model's choice counts as checked where its list ran the same (benchmarks/gpu_model.py `--evidence`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from stitchopt.errors import InputError, StitchoptError
from stitchopt.labels.device import DeviceLabels, KernelUnit
from stitchopt.studies.gpu_launches import LAUNCHES, Buffer, Launch
from stitchopt.toolchain.device import device_baseline, optimize_device
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.device_run import ArgumentKind, DeviceLaunch, DeviceRunner, LaunchArgument

SEED = 0  # the launches' inputs, as the GPU timing script seeds them
SAME = "same"
UNOPTIMIZED = "verify"  # the kernel's IR as the front end wrote it: a check of the emulator, not of a list


def emulated_launch(launch: Launch) -> DeviceLaunch:
    """A timing launch as the CPU run takes it: buffers by their bytes, scalars by theirs."""
    arguments = tuple(
        LaunchArgument(ArgumentKind.OUTPUT if argument.output else ArgumentKind.INPUT, argument.data.tobytes())
        if isinstance(argument, Buffer)
        else LaunchArgument(ArgumentKind.SCALAR, np.asarray(argument).tobytes())
        for argument in launch.arguments
    )
    return DeviceLaunch(launch.grid, launch.block, launch.shared_bytes, arguments)


def _optimized(toolchain: Toolchain, unit: KernelUnit, pipeline: str) -> bytes | None:
    """The kernel's module after `pipeline`; None when opt fails."""
    try:
        return optimize_device(toolchain, unit.module.bitcode, pipeline, unit.options)
    except InputError:
        return None


def check_kernel(toolchain: Toolchain, runner: DeviceRunner, unit: KernelUnit, pool: Sequence[str]) -> dict[str, Any]:
    """Every list of `pool` on one kernel beside -O3, each distinct optimized module run once; the unoptimized
    IR too (`UNOPTIMIZED`): where it differs from -O3's build, the emulator or the kernel (undefined behaviour) is
    at fault, not a list."""
    launch = emulated_launch(LAUNCHES[unit.kernel](np.random.default_rng(SEED)))
    reference = _optimized(toolchain, unit, device_baseline(unit.options).pipeline)
    record: dict[str, Any] = {"uri": unit.uri, "split": unit.split, "reference": "ran"}
    if reference is None:
        return {**record, "reference": "opt failed on -O3", "lists": {}, "unoptimized": None}
    by_module: dict[str, str] = {hashlib.sha256(reference).hexdigest(): SAME}

    def verdict(pipeline: str) -> str:
        optimized = _optimized(toolchain, unit, pipeline)
        if optimized is None:
            return "opt failed"
        digest = hashlib.sha256(optimized).hexdigest()
        if digest not in by_module:
            try:
                check = runner.check(reference, optimized, unit.kernel, launch)
                by_module[digest] = check.verdict
                record["reference"] = "ran" if check.ran else check.verdict
            except StitchoptError as error:
                by_module[digest] = f"not run: {error}"
        return by_module[digest]

    lists = {pipeline: verdict(pipeline) for pipeline in pool}
    unoptimized = verdict(UNOPTIMIZED)  # never -O3's module: every record holds a run of -O3's build
    return {**record, "lists": lists, "unoptimized": unoptimized}


def check_labelled(
    toolchain: Toolchain,
    labels: DeviceLabels,
    units: Sequence[KernelUnit],
    jobs: int = 1,
    progress: Callable[[str], None] = lambda line: None,
) -> list[dict[str, Any]]:
    """`check_kernel` for each labelled kernel with a launch, `jobs` kernels at a time."""
    launchable = [unit for unit in units if unit.kernel in LAUNCHES and unit.uri in labels.uris]
    runner = DeviceRunner(toolchain)
    try:

        def one(unit: KernelUnit) -> dict[str, Any]:
            record = check_kernel(toolchain, runner, unit, labels.pool)
            progress(f"{unit.uri}: {sum(v == SAME for v in record['lists'].values())} of {len(labels.pool)} same")
            return record

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, launchable))
    finally:
        runner.close()
