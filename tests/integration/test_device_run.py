"""Device kernels run on the CPU (toolchain/simt.py, validate/device_run.py) with the real clang and opt: the
emulator computes what the kernels compute, -O3's build and the unoptimized IR agree, a broken build differs,
and what the emulator cannot run is said, not guessed."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stitchopt.apply.device import choose_device_list
from stitchopt.core import CompileOptions
from stitchopt.datasets.kernels import KERNELS_URI, OPENMP_PREFIX, kernel_sources
from stitchopt.errors import InputError
from stitchopt.labels.device import KernelUnit, kernel_units
from stitchopt.models.device_model import load_device_model
from stitchopt.studies.executed_labels import executed_record, unrolled_names
from stitchopt.studies.gpu_launches import OPENMP_ARGUMENTS, Buffer, launch
from stitchopt.studies.kernel_emulation import (
    OPENMP_TEAMS,
    SAME,
    check_kernel,
    emulated_launch,
    named_arguments,
    openmp_launch,
)
from stitchopt.toolchain.cuda import CudaToolkit
from stitchopt.toolchain.device import (
    cuda_device_ir,
    device_baseline,
    device_options,
    kernel_names,
    kernel_unit,
    openmp_device_ir,
    optimize_device,
    without_file_ids,
)
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble, module_from_bitcode
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.offload import openmp_host_ir, region_parameters
from stitchopt.toolchain.process import run_tool
from stitchopt.validate.device_run import (
    SAMPLED_BLOCKS,
    ArgumentKind,
    DeviceLaunch,
    DeviceRunner,
    LaunchArgument,
    RunCheck,
    executed_instructions,
    read_launches,
    sampled_blocks,
)

KERNELS = {source.stem: source for source in kernel_sources()}
NBODY_KERNELS = ("_Z12nbody_forcesPK6float4P6float3if", "_Z8leapfrogP6float4P6float3PKS1_if")
# A kernel that writes its thread's index times two; `slow` calls an intrinsic the emulator lacks (the clock)
# only when its flag is set, `never_called` always but is never called.
HANDWRITTEN = """target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

define void @twice(ptr %out, i32 %flag) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %b = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %n = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %b, %n
  %i = add i32 %base, %t
  %v = mul i32 %i, 2
  %set = icmp ne i32 %flag, 0
  br i1 %set, label %clocked, label %store
clocked:
  %c = call i32 @llvm.nvvm.read.ptx.sreg.clock()
  br label %store
store:
  %at = getelementptr i32, ptr %out, i32 %i
  store i32 %v, ptr %at
  ret void
}

define internal i32 @never_called() {
  %c = call i32 @llvm.nvvm.read.ptx.sreg.clock64()
  ret i32 %c
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.clock()
declare i32 @llvm.nvvm.read.ptx.sreg.clock64()

!nvvm.annotations = !{!0}
!0 = !{ptr @twice, !"kernel", i32 1}
"""


# Inline PTX as CUDA's headers and CUB write it: thread 0 writes a reciprocal, the others their lane index
# (CUB's LaneId); with the flag set, a read of the clock, which the CPU run does not know.
INLINE_PTX = """target triple = "nvptx64-nvidia-cuda"

define void @reciprocal(ptr %out, i32 %flag) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %first = icmp eq i32 %t, 0
  %r = call float asm "rcp.approx.ftz.f32 $0,$1;", "=f,f"(float 4.0)
  %rbits = bitcast float %r to i32
  %l = call i32 asm "mov.u32 $0, %laneid;", "=r"()
  %v = select i1 %first, i32 %rbits, i32 %l
  %at = getelementptr i32, ptr %out, i32 %t
  store i32 %v, ptr %at
  %set = icmp ne i32 %flag, 0
  br i1 %set, label %clock, label %done
clock:
  %c = call i32 asm "mov.u32 $0, %clock;", "=r"()
  br label %done
done:
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
"""


TINY, SMALL, ONE = float(np.float32(1e-8)), float(np.float32(1e-20)), np.float32(1)
# Float sums and products rounded toward zero, down and up (libdevice's expf and log1pf use add.rz), with and
# without flushing subnormals: (intrinsic, x, y, result) where rounding to nearest, the sign of an exact zero or
# a missed flush would give another result.
DIRECTED_ROUNDINGS = [
    ("add.rz.f", 1.0, -TINY, np.nextafter(ONE, np.float32(0))),
    ("add.rp.ftz.f", 1.0, TINY, np.nextafter(ONE, np.float32(2))),
    ("mul.rm.f", 1.0, 0.0, 0.0),
    ("mul.rz.f", -1.0, 0.0, -0.0),
    ("add.rm.f", 1.0, -1.0, -0.0),
    ("add.rz.f", 1.0, -1.0, 0.0),
    ("mul.rp.f", SMALL, SMALL, np.nextafter(np.float32(SMALL * SMALL), ONE)),  # the exact product is above it
    ("mul.rp.ftz.f", SMALL, SMALL, 0.0),
    ("add.rz.ftz.f", 2.0**-149, 0.0, 0.0),
]


def directed_module() -> str:
    """A kernel that writes each of DIRECTED_ROUNDINGS' operations to out[i]."""

    def constant(value: float) -> str:  # a float constant as LLVM's text writes it: its double's bits
        return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"

    body, declared = [], set()
    for i, (name, x, y, _) in enumerate(DIRECTED_ROUNDINGS):
        body += [
            f"  %v{i} = call float @llvm.nvvm.{name}(float {constant(x)}, float {constant(y)})",
            f"  %p{i} = getelementptr float, ptr %out, i32 {i}",
            f"  store float %v{i}, ptr %p{i}",
        ]
        declared.add(f"declare float @llvm.nvvm.{name}(float, float)")
    lines = ['target triple = "nvptx64-nvidia-cuda"', "define void @directed(ptr %in, ptr %out) {", *body]
    return "\n".join([*lines, "  ret void", "}", *sorted(declared), ""])


SUM_TREE_LAUNCH = """{"kernel": "_Z8sum_treePKfPfi", "grid": [64], "block": [256], "shared_bytes": 1024,
  "arguments": [{"buffer": "float32", "count": 65536},
                {"buffer": "float32", "count": 64, "fill": "zeros", "output": true},
                {"scalar": "int32", "value": 65536}]}"""


@pytest.fixture(scope="module")
def runner(toolchain: Toolchain) -> Iterator[DeviceRunner]:
    made = DeviceRunner(toolchain)
    yield made
    made.close()


def outputs(stdout: bytes) -> list[bytes]:
    """The output buffers a run wrote (each its size, then its bytes)."""
    found, at = [], 0
    while at < len(stdout):
        (size,) = struct.unpack_from("<Q", stdout, at)
        found.append(stdout[at + 8 : at + 8 + size])
        at += 8 + size
    return found


def optimized(toolchain: Toolchain, cuda: CudaToolkit, family: str, kernel: str, pipeline: str | None = None) -> str:
    """One kernel of a kernels-v1 file alone, after `pipeline` (-O3's by default), as text."""
    bitcode = cuda_device_ir(toolchain, cuda, KERNELS[family])
    text = disassemble(toolchain, bitcode, family)
    options = device_options(text, cuda)
    unit = kernel_unit(toolchain, bitcode, kernel, text)
    run = run_tool(
        opt_command(toolchain.tool("opt"), pipeline or device_baseline(options).pipeline, flags=options.opt_args()),
        stdin=unit,
    )
    return disassemble(toolchain, run.stdout, kernel)


def twice_launch(flag: int, blocks: int = 3) -> DeviceLaunch:
    return DeviceLaunch(
        (blocks, 1, 1),
        (64, 1, 1),
        0,
        (
            LaunchArgument(ArgumentKind.OUTPUT, bytes(4 * 64 * blocks)),
            LaunchArgument(ArgumentKind.SCALAR, struct.pack("<i", flag)),
        ),
    )


def test_a_kernel_runs_on_the_blocks_sampled_and_an_unreached_missing_intrinsic_is_harmless(
    runner: DeviceRunner,
) -> None:
    run = runner.run(HANDWRITTEN.encode(), "twice", twice_launch(0), [0, 2])
    assert run.returncode == 0, run.stderr
    written = np.frombuffer(outputs(run.stdout)[0], np.int32)
    expected = np.arange(192, dtype=np.int32) * 2
    expected[64:128] = 0  # block 1 did not run
    assert np.array_equal(written, expected)


def test_an_intrinsic_the_emulator_lacks_is_named_and_nothing_is_known(runner: DeviceRunner) -> None:
    check = runner.check(HANDWRITTEN.encode(), HANDWRITTEN.encode(), "twice", twice_launch(1))
    assert not check.ran and not check.same_outputs
    assert (
        check.verdict == "not run: simt: the kernel reached what the emulator cannot run: llvm.nvvm.read.ptx.sreg.clock"
    )


def test_inline_ptx_and_directed_roundings_run_and_unknown_inline_ptx_is_named(runner: DeviceRunner) -> None:
    written = runner.run(INLINE_PTX.encode(), "reciprocal", twice_launch(0, blocks=1), [0])
    assert written.returncode == 0, written.stderr
    values = np.frombuffer(outputs(written.stdout)[0], np.int32)
    assert values[:1].view(np.float32)[0] == 0.25 and list(values[1:]) == [t % 32 for t in range(1, 64)]
    stopped = runner.check(INLINE_PTX.encode(), INLINE_PTX.encode(), "reciprocal", twice_launch(1, blocks=1))
    assert (
        stopped.verdict
        == "not run: simt: the kernel reached what the emulator cannot run: inline PTX mov.u32 $0, %clock;"
    )
    count = len(DIRECTED_ROUNDINGS)
    rounded = runner.run(directed_module().encode(), "directed", warp_launch(np.zeros(count, np.float32)), [0])
    assert rounded.returncode == 0, rounded.stderr
    expected = np.array([result for *_, result in DIRECTED_ROUNDINGS], np.float32)
    assert outputs(rounded.stdout)[0] == expected.tobytes()  # bytes: the signs of the zeros count


# Two correct builds of out[t] = -sqrt(in[t]) that write NaNs of other signs for negative inputs; a warp shuffle
# from lane t + 1 (lane 31 reads lane 0: PTX takes the lane modulo 32); a 1.2 MB local array (beyond a fiber's
# stack); and a conversion that only an unoptimized build keeps as an intrinsic the emulator lacks.
DIFFERENT_BUT_CORRECT = """target triple = "nvptx64-nvidia-cuda"

define void @negroot(ptr %in, ptr %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %at = getelementptr float, ptr %in, i32 %t
  %x = load float, ptr %at
  %root = call float @llvm.sqrt.f32(float %x)
  %y = NEGATE
  %to = getelementptr float, ptr %out, i32 %t
  store float %y, ptr %to
  ret void
}

define void @rotate(ptr %in, ptr %out) {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %next = add i32 %t, 1
  %v = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %t, i32 %next, i32 31)
  %to = getelementptr i32, ptr %out, i32 %t
  store i32 %v, ptr %to
  ret void
}

define void @deep(ptr %in, ptr %out) {
  %local = alloca [1200000 x i8]
  store volatile i8 1, ptr %local
  ret void
}

define void @convert(ptr %in, ptr %out) {
  %x = load float, ptr %in
  %y = CONVERT
  store i32 %y, ptr %out
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare float @llvm.sqrt.f32(float)
declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.f2ui.rz(float)
"""


def warp_launch(values: np.ndarray) -> DeviceLaunch:
    element = values.dtype.name
    output = LaunchArgument(ArgumentKind.OUTPUT, bytes(values.nbytes), element)
    return DeviceLaunch(
        (1, 1, 1), (len(values), 1, 1), 0, (LaunchArgument(ArgumentKind.INPUT, values.tobytes()), output)
    )


def test_correct_builds_that_write_other_nans_or_keep_an_intrinsic_the_emulator_lacks_are_not_called_different(
    runner: DeviceRunner,
) -> None:
    def module(negate: str, convert: str) -> bytes:
        return DIFFERENT_BUT_CORRECT.replace("NEGATE", negate).replace("CONVERT", convert).encode()

    by_fmul = module("fmul float -1.0, %root", "fptoui float %x to i32")
    by_fneg = module("fneg float %root", "call i32 @llvm.nvvm.f2ui.rz(float %x)")
    negative = warp_launch(-np.arange(1, 33, dtype=np.float32))
    assert runner.verdict(by_fmul, by_fneg, "negroot", negative) == SAME
    kept = runner.verdict(by_fmul, by_fneg, "convert", warp_launch(np.full(1, 2.5, np.float32)))
    assert kept == "not run: simt: the kernel reached what the emulator cannot run: llvm.nvvm.f2ui.rz"
    overflowed = runner.verdict(by_fmul, by_fmul, "deep", warp_launch(np.zeros(1, np.float32)))
    assert overflowed == "not run: simt: a thread overflowed its stack (1 MiB)"
    lanes = runner.run(by_fmul, "rotate", warp_launch(np.zeros(32, np.int32)), [0])
    assert list(np.frombuffer(outputs(lanes.stdout)[0], np.int32)) == [*range(1, 32), 0]


def test_kernels_compute_on_the_cpu_what_they_compute_on_a_gpu(
    toolchain: Toolchain, cuda: CudaToolkit, runner: DeviceRunner
) -> None:
    """A shared-memory tree reduction (barriers) and a warp-shuffle softmax, against NumPy."""
    sum_tree = launch("_Z8sum_treePKfPfi")
    blocks = sampled_blocks(sum_tree.grid)
    text = optimized(toolchain, cuda, "reduction", "_Z8sum_treePKfPfi")
    run = runner.run(text.encode(), "_Z8sum_treePKfPfi", emulated_launch(sum_tree), blocks)
    partial = np.frombuffer(outputs(run.stdout)[0], np.float32)
    values = sum_tree.arguments[0].data  # type: ignore[union-attr]
    stride = 2 * sum_tree.block[0] * sum_tree.grid[0]
    for block in blocks[:2]:
        mine = [values[start::stride] for start in range(2 * 256 * block, 2 * 256 * (block + 1))]
        assert partial[block] == pytest.approx(sum(float(part.sum()) for part in mine), rel=1e-5)
    assert np.count_nonzero(partial) == len(blocks)

    softmax = launch("_Z16log_softmax_warpPKfPfii")
    text = optimized(toolchain, cuda, "softmax", "_Z16log_softmax_warpPKfPfii")
    run = runner.run(text.encode(), "_Z16log_softmax_warpPKfPfii", emulated_launch(softmax), [0])
    rows = np.frombuffer(run.stdout[8 : 8 + 8 * 1024 * 4], np.float32).reshape(8, 1024)  # block 0: 8 warps, 8 rows
    logits = softmax.arguments[0].data.reshape(-1, 1024)[:8]  # type: ignore[union-attr]
    peak = logits.max(axis=1, keepdims=True)
    expected = logits - (peak + np.log(np.exp(logits - peak).sum(axis=1, keepdims=True)))
    assert np.abs(rows - expected).max() < 1e-5


def test_a_build_without_its_barriers_differs_and_unoptimized_ir_runs_the_same(
    toolchain: Toolchain, cuda: CudaToolkit, runner: DeviceRunner
) -> None:
    kernel = "_Z10gemm_tilediiiPKfS0_Pf"
    o3 = optimized(toolchain, cuda, "gemm", kernel)
    unoptimized = optimized(toolchain, cuda, "gemm", kernel, "verify")
    racy = re.sub(r"^\s*(tail )?call void @llvm\.nvvm\.barrier0\(\)\n", "", o3, flags=re.MULTILINE)
    assert racy != o3
    gemm = emulated_launch(launch(kernel))
    assert runner.check(o3.encode(), unoptimized.encode(), kernel, gemm).verdict == SAME
    assert runner.check(o3.encode(), racy.encode(), kernel, gemm).verdict == "differs: other outputs"


def test_every_pool_list_is_checked_once_per_distinct_build(
    toolchain: Toolchain, cuda: CudaToolkit, runner: DeviceRunner
) -> None:
    """What benchmarks/gpu_emulation.py records for a kernel: a verdict per list, lists that give the same module
    as -O3 are the same without a run, and a list opt rejects is named."""
    bitcode = cuda_device_ir(toolchain, cuda, KERNELS["scan"])
    text = disassemble(toolchain, bitcode, "scan")
    kernel = "_Z10block_scanPKiPiS1_i"
    module = module_from_bitcode(toolchain, kernel_unit(toolchain, bitcode, kernel, text), kernel)
    unit = KernelUnit(
        "bench://kernels-v1/scan#" + kernel, "scan", "train", kernel, module, device_options(text, cuda), ""
    )
    pool = ["default<O3>", "function(sroa,instcombine<no-verify-fixpoint>)", "no-such-pass"]
    record = check_kernel(toolchain, runner, unit, pool)
    assert record["reference"] == "ran"
    assert record["lists"] == {pool[0]: SAME, pool[1]: SAME, pool[2]: "opt failed"}
    assert record["unoptimized"] == SAME


def test_the_sampled_blocks_reach_the_first_and_the_last() -> None:
    assert sampled_blocks((3, 1, 1)) == [0, 1, 2]
    assert sampled_blocks((1024, 1, 1)) == [0, 146, 292, 438, 585, 731, 877, 1023]
    assert sampled_blocks((64, 64, 1))[-1] == 64 * 64 - 1


def test_a_launch_the_emulator_cannot_hold_is_refused() -> None:
    with pytest.raises(InputError, match="1 to 1024 threads"):
        DeviceLaunch((1, 1, 1), (2048, 1, 1), 0, ())
    with pytest.raises(InputError, match="at most 8 bytes"):
        DeviceLaunch((1, 1, 1), (32, 1, 1), 0, (LaunchArgument(ArgumentKind.SCALAR, bytes(16)),))


def test_retargeted_text_keeps_the_parameters_gives_extern_shared_memory_and_aligns_arrays(tmp_path: Path) -> None:
    from stitchopt.toolchain.simt import DYNAMIC_SHARED_BYTES, host_module

    device = (
        HANDWRITTEN.replace(
            "define void @twice(ptr %out, i32 %flag)",
            "define void @twice(ptr noundef align 4 %out, i32 noundef range(i32 0, 2) %flag)",
        )
        + "@window = external addrspace(3) global [0 x float], align 4\n"
        + "@tile = internal addrspace(3) global [64 x float] undef, align 4\n"
    )
    host = host_module(device.replace("  %t = call", "  %local = alloca [8 x float], align 4\n  %t = call"), "twice")
    # llc's load-store vectorizer may read them 16 bytes at a time: an unaligned vector load faults on the host
    assert "%local = alloca [8 x float], align 16" in host and "[64 x float] undef, align 16" in host
    assert "call void @twice(ptr %arg0, i32 %arg1)" in host
    assert f"@window = internal addrspace(3) global [{DYNAMIC_SHARED_BYTES} x i8] zeroinitializer" in host
    assert "@llvm.nvvm" not in host and "nvptx" not in host
    assert "define weak i32 @__simt_nvvm_read_ptx_sreg_clock()" in host
    with pytest.raises(InputError, match="struct passed by value"):
        host_module(HANDWRITTEN.replace("ptr %out,", "ptr byval(%struct.s) align 8 %out,"), "twice")
    with pytest.raises(InputError, match="no kernel 'thrice'"):
        host_module(HANDWRITTEN, "thrice")


# Per thread: entry 2, each of n iterations 4 (the phis are not counted), the switch 1 (not its case lines), the
# store block 3; thread 0 also passes `first` (1). `wasteful` adds one instruction to each iteration.
COUNTED = """target triple = "nvptx64-nvidia-cuda"

define void @triangle(ptr %out, i32 %n) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  br label %loop

loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %sum = phi i32 [ 0, %entry ], [ %added, %loop ]
  %added = add i32 %sum, %i
  %next = add i32 %i, 1
  %done = icmp sge i32 %next, %n
  br i1 %done, label %exit, label %loop

exit:
  switch i32 %t, label %store [
    i32 0, label %first
  ]

first:
  br label %store

store:
  %p = getelementptr i32, ptr %out, i32 %t
  store i32 %added, ptr %p
  ret void
}

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
"""


def test_a_counted_run_counts_each_instruction_its_threads_execute(runner: DeviceRunner) -> None:
    wasteful = COUNTED.replace("  %next = add i32 %i, 1\n", "  %next = add i32 %i, 1\n  %waste = mul i32 %i, 3\n")
    n, threads = 10, 64
    triangle = DeviceLaunch(
        (2, 1, 1),
        (threads, 1, 1),
        0,
        (
            LaunchArgument(ArgumentKind.OUTPUT, bytes(4 * threads)),
            LaunchArgument(ArgumentKind.SCALAR, struct.pack("<i", n)),
        ),
    )
    run = runner.run(COUNTED.encode(), "triangle", triangle, [0], counted=True)
    assert executed_instructions(run) == threads * (6 + 4 * n) + 1, run.stderr
    assert np.array_equal(np.frombuffer(outputs(run.stdout)[0], np.int32), np.full(threads, n * (n - 1) // 2))
    assert executed_instructions(runner.run(COUNTED.encode(), "triangle", triangle, [0])) is None  # not counted
    check = RunCheck(runner, [("triangle", triangle)]).executed(COUNTED, wasteful)  # both sampled blocks
    assert check.verdicts == {"triangle #1": SAME}
    assert check.ratio == (threads * (6 + 5 * n) + 1) / (threads * (6 + 4 * n) + 1)


def test_gpu_optimize_for_time_keeps_the_build_whose_launch_executes_fewest_instructions(tmp_path: Path) -> None:
    forces = "_Z12nbody_forcesPK6float4P6float3if"
    bodies = {"buffer": "float32", "count": 4 * 512}
    written = {"buffer": "float32", "count": 3 * 512, "fill": "zeros", "output": True}
    scalars = [{"scalar": "int32", "value": 512}, {"scalar": "float32", "value": 1e-3}]
    nbody = {"kernel": forces, "grid": [4], "block": [128], "shared_bytes": 16 * 128}
    launches = tmp_path / "launch.json"
    launches.write_text(json.dumps({"launches": [{**nbody, "arguments": [bodies, written, *scalars]}]}))
    argv = [sys.executable, "-m", "stitchopt", "gpu", "optimize", str(KERNELS["nbody"]), "--objective", "time"]
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "400"}
    run = subprocess.run([*argv, "--launch", str(launches), "--json"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    document = json.loads(run.stdout)
    device = document["device"]
    # -O3 leaves the inner loop (two exits) hardly unrolled; an unroll count executes a fifth fewer instructions.
    assert device["kept_list"] and device["pipeline"] == "default<O3>", device["tried"]
    assert device["opt_flags"][0].startswith("-unroll-count=") and [row["opt_flags"] for row in document["builds"]] == [
        [],
        device["opt_flags"],
    ]
    chosen = " ".join([device["pipeline"], *device["opt_flags"]])
    assert device["runs"][chosen] == {f"{forces} #1": SAME} and device["executed"][chosen] < 0.9
    assert all(ratio >= device["executed"][chosen] for ratio in device["executed"].values())
    said = subprocess.run([*argv, "--launch", str(launches)], capture_output=True, text=True, env=env).stdout
    assert f"'-passes=default<O3>' {device['opt_flags'][0]}" in said and "fewer instructions executed" in said
    assert "static measures" not in said and "without --launch" not in said  # the launch's count, nothing else
    far = [bodies, written, {"scalar": "int32", "value": 1 << 24}, scalars[1]]  # n beyond the buffers: a crash
    launches.write_text(json.dumps({"launches": [{**nbody, "arguments": far}]}))
    crashed = subprocess.run([*argv, "--launch", str(launches)], capture_output=True, text=True, env=env)
    assert crashed.returncode == 2 and crashed.stderr.count("\n") == 1 and "counts nothing" in crashed.stderr


def test_an_openmp_launch_with_its_arrays_out_of_the_regions_order_is_one_line(tmp_path: Path) -> None:
    """The histogram region's parameters come as its body first uses them (bins, then samples), not as its map
    clauses list them: a launch in the clauses' order passes 1 KiB where the region may read 1 MiB."""
    histogram = KERNELS["reduction"].parent / "omp" / "histogram.c"
    samples, bins = {"buffer": "uint8", "count": 1 << 20}, {"buffer": "uint32", "count": 256, "output": True}
    region = {"kernel": "__omp_offloading_histogram_l11", "grid": [64], "block": [128]}
    launches = tmp_path / "launch.json"
    launches.write_text(
        json.dumps({"launches": [{**region, "arguments": [{"buffer": "uint8", "count": 8}, samples, bins]}]})
    )
    argv = [sys.executable, "-m", "stitchopt", "gpu", "optimize", str(histogram), "--launch", str(launches)]
    refused = subprocess.run(argv, capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert (
        "argument 3: __omp_offloading_" in refused.stderr
        and "may read 1048576 bytes there, the buffer holds 1024" in refused.stderr
    )


def test_gpu_optimize_keeps_a_list_whose_launch_ran_the_same_and_says_what_did_not_run(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "400"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env)

    sum_tree = json.loads(SUM_TREE_LAUNCH)
    launches = tmp_path / "launch.json"
    launches.write_text(json.dumps({"launches": [sum_tree]}))
    reduction = str(KERNELS["reduction"])
    chosen = cli("gpu", "optimize", reduction, "--mode", "jit", "--launch", str(launches), "--json")
    assert chosen.returncode == 0, chosen.stderr
    device = json.loads(chosen.stdout)["device"]
    assert device["kept_list"] and device["runs"][device["pipeline"]] == {"_Z8sum_treePKfPfi #1": SAME}
    said = cli("gpu", "optimize", reduction, "--mode", "jit", "--launch", str(launches))
    assert "kernels without a launch did not run: _Z11sum_shufflePKfPfi, _Z6argmaxPKfiPfPi" in said.stdout
    one = "bench://kernels-v1/reduction#_Z8sum_treePKfPfi"
    tuned = cli("gpu", "tune", one, "--budget", "12", "--launch", str(launches), "--json")
    assert tuned.returncode == 0, tuned.stderr
    search = json.loads(tuned.stdout)["search"]
    assert search["passes"] and search["runs"] == {"_Z8sum_treePKfPfi #1": SAME}
    elsewhere = cli("gpu", "tune", "bench://kernels-v1/reduction#_Z6argmaxPKfiPfPi", "--launch", str(launches))
    named = "launch.json: launch 1 names kernel '_Z8sum_treePKfPfi', which"  # the file named, as its own errors
    assert elsewhere.returncode == 2 and named in elsewhere.stderr

    for document, message in bad_launch_files(sum_tree)[:3:2]:  # the CLI's side: one line, exit 2
        launches.write_text(document)
        refused = cli("gpu", "optimize", reduction, "--launch", str(launches))
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and message in refused.stderr, refused.stderr


def bad_launch_files(sum_tree: dict[str, Any]) -> list[tuple[str, str]]:
    """Launch files with one mistake each (sum_tree's launch changed), and what the one-line error says."""
    arguments = sum_tree["arguments"]
    scalar = arguments[2]
    cases = [
        ({"kernel": "_Z4nonev"}, "launch 1 names kernel '_Z4nonev', which"),
        ({"block": [0]}, 'launch 1: "block" is a list of 1 to 3 positive'),
        ({"block": [32, 32, 2]}, "launch.json: launch 1: a launch needs 1 to 1024 threads a block"),
        ({"arguments": [*arguments[:2], {"scalar": "int8", "value": 300}]}, "300 is not an int8"),
        ({"arguments": [*arguments[:2], {"scalar": "float32", "value": 1.0}]}, "takes i32 there, the launch gives"),
        ({"grid": [1, 1 << 20]}, '"grid" is at most'),
        ({"grid": [1 << 30, 65535]}, "blocks"),
        ({"speed": "fast"}, "unknown key 'speed'"),
        ({"arguments": [{"buffer": "half", "count": 4}]}, "argument 1: element"),
        ({"arguments": [*arguments[:2], {"scalar": "float32", "value": 1e39}]}, "1e+39 is not a float32"),
        ({"arguments": [arguments[0], {**arguments[1], "outptu": True}, scalar]}, "unknown key 'outptu'"),
        ({"arguments": [arguments[0], {**arguments[1], "output": False}, scalar]}, "no buffer is an output"),
        ({"arguments": arguments[:2]}, "takes 3 arguments, it gives 2"),
        ({"arguments": [*arguments[:2], arguments[0]]}, "argument 3: _Z8sum_treePKfPfi takes a scalar of 4 bytes"),
        ({"arguments": [{**arguments[0], "count": 1 << 40}, *arguments[1:]]}, 'whole "count"'),
    ]
    files = [(json.dumps({"launches": [{**sum_tree, **change}]}), message) for change, message in cases]
    deep = '{"launches": [' + "[" * 100000 + "]" * 100000 + "]}"
    return [*files, ("{", "not a readable JSON"), ('{"launches": []}', "at least one launch"), (deep, "not a readable")]


def test_eighteen_bad_launch_files_are_each_one_line_naming_the_mistake(
    toolchain: Toolchain, cuda: CudaToolkit, runner: DeviceRunner, tmp_path: Path
) -> None:
    """What `gpu optimize/tune --launch` check before anything runs (the CLI test above shows two of them as the
    command's one line, exit 2): the file itself, then its launches against the module's kernels."""
    text = disassemble(toolchain, cuda_device_ir(toolchain, cuda, KERNELS["reduction"]), "reduction")
    sum_tree = json.loads(SUM_TREE_LAUNCH)
    path = tmp_path / "launch.json"
    cases = bad_launch_files(sum_tree)
    assert len(cases) == 18
    for document, message in cases:
        path.write_text(document)
        with pytest.raises(InputError) as refused:
            RunCheck(runner, read_launches(path)).fitted(text, kernel_names(text), "reduction.cu")
        assert message in str(refused.value) and "\n" not in str(refused.value), (message, str(refused.value))


class _Changes(RunCheck):
    """A run check whose every list changes the kernel's outputs: the refusal path, which no real list here takes."""

    def verdicts(
        self, toolchain: Toolchain, bitcode: bytes, pipelines: tuple[str, str], options: CompileOptions
    ) -> dict[str, str]:
        return {"_Z8sum_treePKfPfi #1": "differs: other outputs"}


def test_a_list_whose_run_differs_is_refused_like_a_miscompile(
    toolchain: Toolchain, cuda: CudaToolkit, runner: DeviceRunner
) -> None:
    bitcode = cuda_device_ir(toolchain, cuda, KERNELS["reduction"])
    options = device_options(disassemble(toolchain, bitcode, "reduction"), cuda)
    module = module_from_bitcode(toolchain, bitcode, "reduction")
    model = load_device_model(None)
    unchecked = choose_device_list(toolchain, model, module, options, "jit")
    assert unchecked.kept_list and not unchecked.runs
    launches = [("_Z8sum_treePKfPfi", emulated_launch(launch("_Z8sum_treePKfPfi")))]
    refused = choose_device_list(toolchain, model, module, options, "jit", run_check=_Changes(runner, launches))
    assert not refused.kept_list and refused.pipeline == device_baseline(options).pipeline
    assert (
        refused.tried[unchecked.pipeline]
        == "changes outputs when run on the CPU (_Z8sum_treePKfPfi #1: differs: other outputs)"
    )


def test_an_spmd_openmp_region_runs_with_the_device_runtime_and_a_generic_one_is_not_run(
    toolchain: Toolchain, cuda: CudaToolkit, openmp_runtime: Path, runner: DeviceRunner
) -> None:
    """conv1d's target region (its arrays static, so the IR sizes them) runs as the OpenMP runtime would launch
    it, the front end's IR (the runtime not yet optimized away) as -O3's build; a region in generic mode (a main
    thread and the runtime's state machine) is not run, not guessed at."""
    source = Path(kernel_sources()[0]).parent / "omp" / "convolution.c"
    linked = openmp_device_ir(toolchain, cuda, source, runtime=openmp_runtime)
    text = disassemble(toolchain, linked, "convolution")
    options = device_options(text, cuda)
    region = next(name for name in kernel_names(text) if "conv1d" in name)
    o3 = optimize_device(toolchain, linked, device_baseline(options).pipeline, options)
    o3_text = disassemble(toolchain, o3, region)
    conv1d = openmp_launch(o3_text, region)
    assert conv1d is not None and conv1d.block == (128, 1, 1)
    assert [len(a.data) for a in conv1d.arguments] == [0, 17 * 4, 4 << 16, 4 << 16]  # no reduction buffer; arrays
    assert conv1d.arguments[0].kind is ArgumentKind.LAUNCH_ENVIRONMENT and conv1d.grid == (OPENMP_TEAMS, 1, 1)
    assert runner.verdict(o3, linked, region, conv1d) == SAME
    spmd = re.compile(rf"(@{region}_kernel_environment = .*?\{{ i8 \d+, i8 \d+, i8 )2,")
    generic = spmd.sub(r"\g<1>1,", o3_text)
    assert generic != o3_text
    refused = runner.verdict(o3, generic.encode(), region, conv1d)
    assert refused.startswith("not run: ") and "generic mode" in refused
    smoothed = np.frombuffer(outputs(runner.run(o3, region, conv1d, [0]).stdout)[2], np.float32)
    taps, signal = (np.frombuffer(conv1d.arguments[i].data, np.float32) for i in (1, 2))
    padded = np.concatenate([np.zeros(8, np.float32), signal, np.zeros(8, np.float32)])
    expected = np.array([np.dot(taps, padded[i : i + 17]) for i in range(128)], np.float32)
    assert np.abs(smoothed[:128] - expected).max() < 1e-5  # team 0's first 128 points
    as_a_file_gives_it = replace(
        conv1d, arguments=(LaunchArgument(ArgumentKind.INPUT, bytes(64)), *conv1d.arguments[1:])
    )
    portable = RunCheck(runner, [(without_file_ids(region), as_a_file_gives_it)]).fitted(
        o3_text, [region], "convolution.c"
    )
    assert portable.launches[0][0] == region != without_file_ids(region)  # a launch file survives a moved source
    assert portable.launches[0][1] == conv1d  # the runtime's launch environment, whatever buffer the file gave
    square = RunCheck(runner, [(region, replace(conv1d, grid=(8, 8, 1)))]).fitted(o3_text, [region], "c.c")
    assert square.launches[0][1].grid == (OPENMP_TEAMS, 1, 1)  # the runtime numbers its teams along x
    inputs_only = tuple(replace(a, kind=ArgumentKind.INPUT) for a in conv1d.arguments[1:])
    environment_only = replace(conv1d, arguments=(LaunchArgument(ArgumentKind.OUTPUT, bytes(64)), *inputs_only))
    with pytest.raises(InputError, match="argument 1 of an OpenMP region is the runtime's launch environment"):
        RunCheck(runner, [(region, environment_only)]).fitted(o3_text, [region], "convolution.c")
    twin = re.sub(r"_offloading_\w+?_", "_offloading_ffff_", region, count=1)  # the same region of another file
    with pytest.raises(InputError, match="name one of them"):
        RunCheck(runner, [(without_file_ids(region), conv1d)]).fitted(o3_text, [region, twin], "linked.bc")


def test_openmp_regions_with_scalars_and_sections_run_with_their_programs_values(
    toolchain: Toolchain, cuda: CudaToolkit, openmp_runtime: Path, runner: DeviceRunner
) -> None:
    """Each region OPENMP_ARGUMENTS names gets a launch, the values matched to its parameters by the names its
    map items have in the program's host IR (spmv's: by-value `rows`, then its array sections in the order the
    region first uses them, not the clause's); nbody's force region, run as -O3 builds it, writes the forces
    NumPy computes with the `soft2` it was given; a launch one argument short, or with an array smaller than the
    IR says the kernel reads, a scalar for a pointer or an array for a scalar, is none; each region's -O3 build
    runs with its values, reduction's cross-team sum writing the samples' sum."""
    named = {f"{KERNELS_URI}{OPENMP_PREFIX}{key}" for key in OPENMP_ARGUMENTS}
    units = kernel_units(toolchain, cuda, ["bench://kernels-v1"], only=named)
    assert {unit.uri for unit in units} == named
    spmv_host = disassemble(
        toolchain, openmp_host_ir(toolchain, KERNELS["spmv"].parent / "omp" / "spmv.c", "sm_90", ["-g"]), "spmv"
    )
    assert list(region_parameters(spmv_host).values()) == [
        ["rows", "row_ptr[0:rows + 1]", "vals[0:nnz]", "x[0:rows]", "cols[0:nnz]", "y[0:rows]"]
    ]
    for unit in units:
        o3 = optimize_device(toolchain, unit.module.bitcode, device_baseline(unit.options).pipeline, unit.options)
        text = disassemble(toolchain, o3, unit.uri)
        arguments = named_arguments(toolchain, unit)
        launched = openmp_launch(text, unit.kernel, arguments)
        assert launched is not None and runner.reference_status(o3, unit.kernel, launched) == "ran", unit.uri
        if unit.uri.endswith("step_l10"):
            forces, forces_arguments, o3_forces, o3_text = unit, arguments, o3, text
        if unit.uri.endswith("center_l13"):  # every team runs, and the last one adds up their records
            _, samples = arguments or []
            assert isinstance(samples, Buffer) and launched.grid == (SAMPLED_BLOCKS, 1, 1)
            (summed, _) = outputs(runner.run(o3, unit.kernel, launched, sampled_blocks(launched.grid)).stdout)
            assert np.frombuffer(summed, np.int64)[0] == samples.data.astype(np.int64).sum() > 0
            as_a_file_gives_it = replace(launched, grid=(64, 1, 1))  # 8 of 64 teams run: the last would not
            fitted = RunCheck(runner, [(unit.kernel, as_a_file_gives_it)]).fitted(text, [unit.kernel], "reduction.c")
            assert fitted.launches[0][1] == launched
    pos, soft2, acc = forces_arguments or []
    assert isinstance(pos, Buffer) and isinstance(acc, Buffer) and soft2 == np.float32(1e-3)
    assert openmp_launch(o3_text, forces.kernel, [pos, soft2]) is None
    assert openmp_launch(o3_text, forces.kernel, [soft2, soft2, acc]) is None  # a scalar for a pointer
    assert openmp_launch(o3_text, forces.kernel, [pos, acc, acc]) is None  # an array for a scalar
    assert openmp_launch(o3_text, forces.kernel, [Buffer(pos.data[:-4]), soft2, acc]) is None
    launched = openmp_launch(o3_text, forces.kernel, [pos, soft2, acc])
    assert launched is not None
    written = np.frombuffer(outputs(runner.run(o3_forces, forces.kernel, launched, [0]).stdout)[1], np.float32)
    bodies = pos.data.reshape(-1, 4).astype(np.float64)
    done = np.flatnonzero(written.reshape(-1, 3).any(axis=1))
    assert list(done) == list(range(128))  # team 0's chunk: a body for each of its threads
    delta = bodies[None, :, :3] - bodies[done, None, :3]
    inverse = 1 / np.sqrt((delta**2).sum(axis=2) + 1e-3)
    expected = (delta * (bodies[None, :, 3] * inverse**3)[:, :, None]).sum(axis=1)
    assert np.allclose(written.reshape(-1, 3)[done], expected, rtol=1e-3, atol=1e-3)


def test_time_labels_count_each_unroll_count_of_a_kernel_against_o3(
    toolchain: Toolchain, cuda: CudaToolkit, runner: DeviceRunner
) -> None:
    """nbody_forces's inner loop, which -O3 leaves hardly unrolled, executes fewer instructions at every unroll
    count, with -O3's outputs; leapfrog has no loop: every count builds -O3's code."""
    forces, leapfrog = (f"{KERNELS_URI}nbody#{kernel}" for kernel in NBODY_KERNELS)
    units = {unit.uri: unit for unit in kernel_units(toolchain, cuda, [KERNELS_URI], only={forces, leapfrog})}
    unrolled = executed_record(toolchain, runner, units[forces])
    assert unrolled["launch"] and set(unrolled["builds"]) == set(unrolled_names())
    assert all(build["verdict"] == SAME and build["ratio"] < 0.9 for build in unrolled["builds"].values())
    assert all(
        build["ratio"] == 1.0 for build in executed_record(toolchain, runner, units[leapfrog])["builds"].values()
    )
