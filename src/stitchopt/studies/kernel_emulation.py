"""Run evidence for device lists without a GPU: every pool list of the device labels built on each labelled kernel
that has a launch, run on the CPU beside -O3's build (validate/device_run.py), outputs compared. CUDA kernels
are launched as the GPU timing script launches them (studies/gpu_launches.py); an OpenMP target region as the
OpenMP runtime would, where its -O3 build runs SPMD and its parameters after the launch environment are arrays
of a size the IR states (`openmp_launch`). The record says, per kernel and list, "same", "differs" or why -O3's
own build could not run; a model's choice counts as checked where its list ran the same (benchmarks/
gpu_model.py `--evidence`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from stitchopt.datasets.kernels import OPENMP_PREFIX
from stitchopt.errors import InputError
from stitchopt.labels.device import DeviceLabels, KernelUnit
from stitchopt.studies.gpu_launches import LAUNCHES, Buffer, Launch
from stitchopt.toolchain.device import device_baseline, optimize_device
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble
from stitchopt.toolchain.simt import is_spmd, kernel_parameters, openmp_configuration
from stitchopt.validate.device_run import ArgumentKind, DeviceLaunch, DeviceRunner, LaunchArgument

SEED = 0  # the launches' inputs, as the GPU timing script seeds them
OPENMP_TEAMS = 64  # blocks of an OpenMP launch: any count computes the same, a distribute loop spreads over them
_DEREFERENCEABLE_RE = re.compile(r"^ptr\b.*\bdereferenceable\((\d+)\)")
SAME = "same"
NO_LAUNCH = "no launch: an OpenMP region not built SPMD, or with a scalar or an array of unknown size"
UNOPTIMIZED = "verify"  # the kernel's IR as the front end wrote it: a check of the emulator, not of a list


def emulated_launch(launch: Launch) -> DeviceLaunch:
    """A timing launch as the CPU run takes it: buffers by their bytes, scalars by theirs."""
    arguments = tuple(
        LaunchArgument(
            ArgumentKind.OUTPUT if argument.output else ArgumentKind.INPUT,
            argument.data.tobytes(),
            argument.data.dtype.name,
        )
        if isinstance(argument, Buffer)
        else LaunchArgument(ArgumentKind.SCALAR, np.asarray(argument).tobytes())
        for argument in launch.arguments
    )
    return DeviceLaunch(launch.grid, launch.block, launch.shared_bytes, arguments)


def openmp_launch(optimized_ir: str, kernel: str, seed: int = SEED) -> DeviceLaunch | None:
    """A launch of an OpenMP target region built SPMD whose every parameter but the first (the runtime's launch
    environment, zeroed) is an array the IR sizes (`dereferenceable(N)`, the program's static arrays): each filled
    with floats from [-1, 1), all compared; the block as the kernel environment's thread count. None otherwise
    (a scalar parameter or an array of unknown size needs the program's own values)."""
    configuration = openmp_configuration(optimized_ir, kernel)
    if configuration is None or not is_spmd(configuration[0]):
        return None
    sizes = [_DEREFERENCEABLE_RE.match(p) for p in kernel_parameters(optimized_ir, kernel)[1:]]
    if not sizes or not all(size and int(size.group(1)) % 4 == 0 for size in sizes):
        return None
    rng = np.random.default_rng(seed)
    arrays = tuple(
        LaunchArgument(
            ArgumentKind.OUTPUT,
            rng.uniform(-1.0, 1.0, int(size.group(1)) // 4).astype(np.float32).tobytes(),
            "float32",
        )
        for size in sizes
        if size
    )
    threads = configuration[1] if configuration[1] > 0 else 128  # unspecified (-1): a block of 128
    return DeviceLaunch(
        (OPENMP_TEAMS, 1, 1), (threads, 1, 1), 0, (LaunchArgument(ArgumentKind.INPUT, bytes(64)), *arrays)
    )


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
    reference = _optimized(toolchain, unit, device_baseline(unit.options).pipeline)
    record: dict[str, Any] = {"uri": unit.uri, "split": unit.split, "reference": "ran"}
    if reference is None:
        return {**record, "reference": "opt failed on -O3", "lists": {}, "unoptimized": None}
    if unit.kernel in LAUNCHES:
        launch: DeviceLaunch | None = emulated_launch(LAUNCHES[unit.kernel](np.random.default_rng(SEED)))
    else:
        launch = openmp_launch(disassemble(toolchain, reference, unit.uri), unit.kernel)
    if launch is None:
        return {**record, "reference": NO_LAUNCH, "lists": {}, "unoptimized": None}
    record["reference"] = runner.reference_status(reference, unit.kernel, launch)
    if record["reference"] != "ran":
        return {**record, "lists": {}, "unoptimized": None}
    by_module: dict[str, str] = {hashlib.sha256(reference).hexdigest(): SAME}

    def verdict(pipeline: str) -> str:
        optimized = _optimized(toolchain, unit, pipeline)
        if optimized is None:
            return "opt failed"
        digest = hashlib.sha256(optimized).hexdigest()
        if digest not in by_module:
            by_module[digest] = runner.verdict(reference, optimized, unit.kernel, launch)
        return by_module[digest]

    lists = {pipeline: verdict(pipeline) for pipeline in pool}
    unoptimized = verdict(UNOPTIMIZED)
    return {**record, "lists": lists, "unoptimized": unoptimized}


def check_labelled(
    toolchain: Toolchain,
    labels: DeviceLabels,
    units: Sequence[KernelUnit],
    jobs: int = 1,
    progress: Callable[[str], None] = lambda line: None,
) -> list[dict[str, Any]]:
    """`check_kernel` for each labelled kernel with a launch or an OpenMP region, `jobs` kernels at a time."""
    launchable = [u for u in units if (u.kernel in LAUNCHES or OPENMP_PREFIX in u.uri) and u.uri in labels.uris]
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
