"""Kernel time on a GPU: clang's -O3 device build against a pass list's build of each kernel, outputs compared.

Two steps, because the GPU machine has no LLVM:

    python benchmarks/gpu_timing.py prepare --lists gpu_static.json [--method search] -o gpu-run [--kernels K1,K2]
    python benchmarks/gpu_timing.py run gpu-run --json timing.json [--repeats 20] [--seconds 420]

`prepare` (here) builds each kernel's unit twice with ptxas, -O3 and the list a method of
`benchmarks/gpu_static.py --json` answered with (`--method`: search, static or "jit k=N"), into cubins and a
manifest. `run` (on the GPU machine: numpy and CuPy, no LLVM) loads both cubins, launches each with the same
seeded inputs (studies/gpu_launches.py), rejects the list when any output differs from -O3's by one bit (like
a miscompile on the CPU), and times both: 3 warm-up launches, then the median of `--repeats` launches timed
with CUDA events, the two builds interleaved. It writes one JSON document (the device, its clocks, driver,
when) and stops starting kernels after `--seconds`. Without a GPU (no CuPy, or no device) it writes the same
document with `"gpu": null` and the reason, and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.datasets.kernels import KERNEL_DIR
from stitchopt.studies.gpu_launches import LAUNCHES, Buffer, Launch, argument_types, launch, ptx_parameter_types
from stitchopt.toolchain.cuda import find_cuda
from stitchopt.toolchain.device import (
    DEFAULT_ARCH,
    build_device,
    cuda_device_ir,
    device_baseline,
    device_options,
    kernel_unit,
)
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import disassemble

MANIFEST = "manifest.json"


def prepare(lists: Path, method: str, output: Path, kernels: set[str] | None) -> int:
    """Build the -O3 and list cubins of every kernel `method` answered with a list in `lists` (and LAUNCHES can
    run)."""
    toolchain, cuda = find_toolchain(), find_cuda()
    searched = json.loads(lists.read_text())
    methods = {name for result in searched["kernels"] for name, value in result.items() if isinstance(value, dict)}
    if method not in methods:
        raise SystemExit(f"{lists}: no method {method!r}; it has {', '.join(sorted(methods)) or 'none'}")
    output.mkdir(parents=True, exist_ok=True)
    entries = []
    for result in searched["kernels"]:
        kernel = result["kernel"]
        pipeline = result[method]["pipeline"]  # None: the method kept -O3, nothing to time
        if pipeline is None or kernel not in LAUNCHES or (kernels is not None and kernel not in kernels):
            continue
        bitcode = cuda_device_ir(toolchain, cuda, KERNEL_DIR / f"{result['family']}.cu")
        options = device_options(disassemble(toolchain, bitcode, kernel), cuda)
        unit = kernel_unit(toolchain, bitcode, kernel)
        files = {}
        expected = argument_types(launch(kernel))  # draws the launch's inputs (megabytes): once per kernel
        for label, built_with in {"-O3": device_baseline(options).pipeline, "list": pipeline}.items():
            built = build_device(toolchain, unit, built_with, options)
            if ptx_parameter_types(built.ptx, kernel) != expected:
                raise SystemExit(f"{kernel}: its launch passes {expected}, the PTX takes other parameters")
            name = f"{kernel}.{'O3' if label == '-O3' else 'list'}.cubin"
            (output / name).write_bytes(built.cubin)
            files[label] = name
        entries.append({"family": result["family"], "kernel": kernel, "pipeline": pipeline, "cubins": files})
        print(f"prepared {kernel}", file=sys.stderr)
    manifest = {"method": method, "arch": DEFAULT_ARCH, "ptxas": cuda.version, "kernels": entries}
    (output / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


def _gpu() -> tuple[Any, str | None]:
    """CuPy and a device, or None and why not."""
    try:
        import cupy
    except ImportError as exc:
        return None, f"no CuPy here ({exc}): run this on the GPU machine"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return None, "CuPy sees no CUDA device"
    except Exception as exc:  # noqa: BLE001 (any driver error means: no usable GPU here)
        return None, f"no usable CUDA device: {exc}"
    return cupy, None


def _device_arguments(cupy: Any, prepared: Launch) -> tuple[list[Any], list[Any]]:
    arguments, outputs = [], []
    for argument in prepared.arguments:
        if isinstance(argument, Buffer):
            array = cupy.asarray(argument.data)
            arguments.append(array)
            if argument.output:
                outputs.append(array)
        else:
            arguments.append(argument)
    return arguments, outputs


def _run_kernel(cupy: Any, directory: Path, entry: dict[str, Any], repeats: int) -> dict[str, Any]:
    kernel = entry["kernel"]
    functions = {
        label: cupy.RawModule(path=str(directory / name)).get_function(kernel)
        for label, name in entry["cubins"].items()
    }
    outputs = {}
    for label, function in functions.items():  # one launch on fresh inputs: the outputs compared
        prepared = launch(kernel)
        arguments, written = _device_arguments(cupy, prepared)
        function(prepared.grid, prepared.block, tuple(arguments), shared_mem=prepared.shared_bytes)
        cupy.cuda.Device().synchronize()
        outputs[label] = [cupy.asnumpy(array) for array in written]
    identical = all(np.array_equal(a, b) for a, b in zip(outputs["-O3"], outputs["list"], strict=True))
    times: dict[str, list[float]] = {label: [] for label in functions}
    prepared = launch(kernel)
    arguments, _ = _device_arguments(cupy, prepared)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for round_ in range(3 + repeats):
        for label, function in functions.items():  # interleaved, so clock drift hits both builds alike
            start.record()
            function(prepared.grid, prepared.block, tuple(arguments), shared_mem=prepared.shared_bytes)
            end.record()
            end.synchronize()
            if round_ >= 3:
                times[label].append(cupy.cuda.get_elapsed_time(start, end))
    medians = {label: statistics.median(values) for label, values in times.items()}
    return {
        **{k: entry[k] for k in ("family", "kernel", "pipeline")},
        "identical_outputs": identical,
        "o3_ms": medians["-O3"],
        "list_ms": medians["list"],
        "change": medians["list"] / medians["-O3"] - 1 if identical else None,
        "spread_ms": {label: [min(values), max(values)] for label, values in times.items()},
    }


def run(directory: Path, output: Path, repeats: int, seconds: float) -> int:
    manifest = json.loads((directory / MANIFEST).read_text())
    document: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "manifest": manifest}
    cupy, reason = _gpu()
    if cupy is None:
        document |= {"gpu": None, "reason": reason, "kernels": []}
        output.write_text(json.dumps(document, indent=2) + "\n")
        print(f"no timing: {reason}", file=sys.stderr)
        return 0
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    document["gpu"] = {
        "name": properties["name"].decode() if isinstance(properties["name"], bytes) else properties["name"],
        "sm_clock_khz": properties.get("clockRate"),
        "memory_clock_khz": properties.get("memoryClockRate"),
        "driver": cupy.cuda.runtime.driverGetVersion(),
    }
    began, results = time.monotonic(), []
    for entry in manifest["kernels"]:
        if time.monotonic() - began > seconds:
            document["stopped"] = f"time limit after {len(results)} kernels"
            break
        results.append(_run_kernel(cupy, directory, entry, repeats))
        print(f"{entry['kernel']}: {results[-1]}", file=sys.stderr)
    document["kernels"] = results
    changes = [r["change"] for r in results if r["change"] is not None]
    if changes:
        document["geomean_change"] = float(np.exp(np.mean(np.log1p(changes)))) - 1
    output.write_text(json.dumps(document, indent=2) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    made = steps.add_parser("prepare", help="build the cubins (needs LLVM and ptxas)")
    made.add_argument("--lists", type=Path, required=True, help="benchmarks/gpu_static.py --json output")
    made.add_argument("--method", default="search", help="whose lists: search, static or jit k=N")
    made.add_argument("-o", "--output", type=Path, required=True)
    made.add_argument("--kernels", default=None, help="comma-separated mangled kernel names (default: all)")
    timed = steps.add_parser("run", help="time the cubins (needs a GPU and CuPy)")
    timed.add_argument("directory", type=Path)
    timed.add_argument("--json", type=Path, required=True)
    timed.add_argument("--repeats", type=int, default=20)
    timed.add_argument("--seconds", type=float, default=420.0, help="start no kernel after this long")
    args = parser.parse_args()
    if args.step == "prepare":
        return prepare(args.lists, args.method, args.output, set(args.kernels.split(",")) if args.kernels else None)
    return run(args.directory, args.json, args.repeats, args.seconds)


if __name__ == "__main__":
    sys.exit(main())
