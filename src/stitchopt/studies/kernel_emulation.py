"""Run evidence for device lists without a GPU: every pool list of the device labels built on each labelled kernel
that has a launch, run on the CPU beside -O3's build (validate/device_run.py), outputs compared. CUDA kernels
are launched as the GPU timing script launches them (studies/gpu_launches.py); an OpenMP target region as the
OpenMP runtime would, where its -O3 build runs SPMD, with the values its program gives it where
`OPENMP_ARGUMENTS` names them (scalars, array sections, index arrays), else where its parameters after the
launch environment are all arrays of a size the IR states (`openmp_launch`). The record says, per kernel and
list, "same", "differs" or why -O3's own build could not run; a model's choice counts as checked where its list
ran the same (benchmarks/gpu_model.py `--evidence`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from stitchopt.datasets.kernels import OPENMP_PREFIX, offload_sources
from stitchopt.errors import InputError
from stitchopt.labels.device import DeviceLabels, KernelUnit
from stitchopt.studies.gpu_launches import LAUNCHES, OPENMP_ARGUMENTS, Argument, Buffer, Launch
from stitchopt.toolchain.device import DEFAULT_ARCH, device_baseline, optimize_device, without_file_ids
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble
from stitchopt.toolchain.offload import openmp_host_ir, region_parameters
from stitchopt.toolchain.simt import kernel_parameters, openmp_configuration
from stitchopt.validate.device_run import (
    ArgumentKind,
    DeviceLaunch,
    DeviceRunner,
    LaunchArgument,
    as_the_runtime_launches,
    dereferenceable_bytes,
)

SEED = 0  # the launches' inputs, as the GPU timing script seeds them
OPENMP_TEAMS = 64  # blocks of an OpenMP launch: any count computes the same, a distribute loop spreads over them
SAME = "same"
NO_LAUNCH = (
    "no launch: an OpenMP region not built SPMD, or with a scalar or an array of unknown size and no OPENMP_ARGUMENTS"
)
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


def openmp_launch(optimized_ir: str, kernel: str, arguments: Sequence[Argument] | None = None) -> DeviceLaunch | None:
    """A launch of an OpenMP target region built SPMD: its parameters after the first (the runtime's launch
    environment, as `as_the_runtime_launches` makes it) are `arguments` (scalars passed as a 64-bit parameter
    holds them, arrays no smaller than the IR's `dereferenceable(N)` says), or without them, where each is an
    array the IR sizes (the program's static arrays), each filled with floats from [-1, 1); all arrays are
    compared; the block as the kernel environment's thread count, `OPENMP_TEAMS` teams (fewer for a cross-team
    reduction). None otherwise (a scalar parameter or an array of unknown size needs the program's own values:
    `OPENMP_ARGUMENTS`; a kernel environment in a form not read here)."""
    try:
        configuration = openmp_configuration(optimized_ir, kernel)
    except InputError:  # a kernel environment not read here: no launch
        return None
    if configuration is None or not configuration.spmd:
        return None
    parameters = kernel_parameters(optimized_ir, kernel)[1:]
    if arguments is None:
        arguments = _float_arrays(parameters)
    if arguments is None or not _fit(parameters, arguments):
        return None
    passed = tuple(
        LaunchArgument(ArgumentKind.OUTPUT, a.data.tobytes(), a.data.dtype.name)
        if isinstance(a, Buffer)
        else LaunchArgument(ArgumentKind.SCALAR, np.asarray(a).tobytes().ljust(8, b"\0"))
        for a in arguments
    )
    threads = configuration.max_threads if configuration.max_threads > 0 else 128  # unspecified (-1): 128
    unset = LaunchArgument(ArgumentKind.INPUT, b"")  # the launch environment, which the runtime's launch sets
    launch = DeviceLaunch((OPENMP_TEAMS, 1, 1), (threads, 1, 1), 0, (unset, *passed))
    return as_the_runtime_launches(launch, configuration)


def _float_arrays(parameters: Sequence[str]) -> list[Argument] | None:
    sizes = [dereferenceable_bytes(p) for p in parameters]
    if not sizes or not all(size and size % 4 == 0 for size in sizes):
        return None
    rng = np.random.default_rng(SEED)
    return [Buffer(rng.uniform(-1.0, 1.0, size // 4).astype(np.float32)) for size in sizes if size]


def _fit(parameters: Sequence[str], arguments: Sequence[Argument]) -> bool:
    """Whether each argument can be its parameter: an array for a pointer, of at least the bytes the IR says the
    kernel may read; a scalar of at most 8 bytes for an integer (how the runtime passes a captured value)."""
    if len(parameters) != len(arguments):
        return False
    for parameter, argument in zip(parameters, arguments, strict=True):
        if isinstance(argument, Buffer):
            size = dereferenceable_bytes(parameter)
            if not parameter.startswith("ptr") or (size is not None and argument.data.nbytes < size):
                return False
        elif not parameter.startswith("i64") or np.asarray(argument).nbytes > 8:
            return False
    return True


def named_arguments(toolchain: Toolchain, unit: KernelUnit) -> list[Argument] | None:
    """`OPENMP_ARGUMENTS`' values for an OpenMP region of the project's programs, in its parameters' order (read
    from its program's host IR); None for a region the table does not name or names other parameters of."""
    make = OPENMP_ARGUMENTS.get(unit.uri.rsplit("/", 1)[-1])
    if make is None:
        return None
    names = _region_parameters(toolchain, unit.family).get(without_file_ids(unit.kernel), [])
    values = make(np.random.default_rng(SEED))
    return [values[name] for name in names] if names and set(names) <= set(values) else None


def _region_parameters(toolchain: Toolchain, family: str) -> dict[str, list[str]]:
    """The parameters' names of each region of a family's OpenMP program, by region name without file IDs."""
    source = next(p for p in offload_sources() if p.stem == family)
    host = disassemble(toolchain, openmp_host_ir(toolchain, source, DEFAULT_ARCH, ["-gline-tables-only"]), source.name)
    return {without_file_ids(region): names for region, names in region_parameters(host).items()}


def _optimized(toolchain: Toolchain, unit: KernelUnit, pipeline: str) -> bytes | None:
    """The kernel's module after `pipeline`; None when opt fails."""
    try:
        return optimize_device(toolchain, unit.module.bitcode, pipeline, unit.options)
    except InputError:
        return None


def unit_launch(toolchain: Toolchain, unit: KernelUnit, reference: bytes) -> DeviceLaunch | None:
    """How a labelled kernel is launched on the CPU: a CUDA kernel as the GPU timing script launches it, an
    OpenMP region as `openmp_launch` makes it from its -O3 build (`reference`); None where it has no launch."""
    if unit.kernel in LAUNCHES:
        return emulated_launch(LAUNCHES[unit.kernel](np.random.default_rng(SEED)))
    return openmp_launch(disassemble(toolchain, reference, unit.uri), unit.kernel, named_arguments(toolchain, unit))


def check_kernel(toolchain: Toolchain, runner: DeviceRunner, unit: KernelUnit, pool: Sequence[str]) -> dict[str, Any]:
    """Every list of `pool` on one kernel beside -O3, each distinct optimized module run once; the unoptimized
    IR too (`UNOPTIMIZED`): where it differs from -O3's build, the emulator or the kernel (undefined behaviour) is
    at fault, not a list."""
    reference = _optimized(toolchain, unit, device_baseline(unit.options).pipeline)
    record: dict[str, Any] = {"uri": unit.uri, "split": unit.split, "reference": "ran"}
    if reference is None:
        return {**record, "reference": "opt failed on -O3", "lists": {}, "unoptimized": None}
    launch = unit_launch(toolchain, unit, reference)
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


def launchable(labels: DeviceLabels, units: Sequence[KernelUnit]) -> list[KernelUnit]:
    """The labelled kernels that may have a launch: the CUDA kernels studies/gpu_launches.py launches, and the
    OpenMP regions (`openmp_launch` decides)."""
    return [u for u in units if (u.kernel in LAUNCHES or OPENMP_PREFIX in u.uri) and u.uri in labels.uris]


def per_kernel(
    toolchain: Toolchain,
    units: Sequence[KernelUnit],
    record: Callable[[DeviceRunner, KernelUnit], dict[str, Any]],
    summary: Callable[[dict[str, Any]], str],
    jobs: int = 1,
    progress: Callable[[str], None] = lambda line: None,
) -> list[dict[str, Any]]:
    """`record` of each unit with one runner, `jobs` units at a time, a progress line for each (its uri and
    `summary` of its record)."""
    runner = DeviceRunner(toolchain)
    try:

        def one(unit: KernelUnit) -> dict[str, Any]:
            made = record(runner, unit)
            progress(f"{unit.uri}: {summary(made)}")
            return made

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(one, units))
    finally:
        runner.close()


def check_labelled(
    toolchain: Toolchain,
    labels: DeviceLabels,
    units: Sequence[KernelUnit],
    jobs: int = 1,
    progress: Callable[[str], None] = lambda line: None,
) -> list[dict[str, Any]]:
    """`check_kernel` for each labelled kernel with a launch or an OpenMP region, `jobs` kernels at a time."""
    return per_kernel(
        toolchain,
        launchable(labels, units),
        lambda runner, unit: check_kernel(toolchain, runner, unit, labels.pool),
        lambda record: f"{sum(v == SAME for v in record['lists'].values())} of {len(labels.pool)} same",
        jobs,
        progress,
    )
