"""GPU device code with the real clang, opt, llc and ptxas (the gpu extra's CUDA toolkit): clang's -O3 device
compile reproduced byte for byte, kernels kept, ptxas's report read, and the `stitchopt gpu` commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stitchopt.cache.store import EvaluationStore
from stitchopt.cli import gpu as gpu_cli
from stitchopt.cli.main import command_app
from stitchopt.core import EvalStatus, IRModule
from stitchopt.datasets.kernels import FAMILY_SPLITS, kernel_sources, offload_sources
from stitchopt.datasets.normalize import normalized_sha256
from stitchopt.errors import ToolchainError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.studies.gpu_launches import LAUNCHES, argument_types, launch, ptx_parameter_types
from stitchopt.toolchain import cuda as cuda_module
from stitchopt.toolchain.cuda import STANDIN_DIR, CudaToolkit, find_cuda
from stitchopt.toolchain.device import (
    DEVICE_TRIPLE,
    build_device,
    cuda_device_ir,
    device_baseline,
    device_options,
    kernel_names,
    kernel_unit,
    openmp_device_ir,
    printed_device_pipeline,
    without_file_ids,
)
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import SASS_WORD, object_sizes, read_sections
from stitchopt.toolchain.frontend import disassemble, module_from_bitcode
from stitchopt.toolchain.offload import offload_constructs, openmp_host_ir, region_parameters
from stitchopt.toolchain.ptx import KernelResources
from stitchopt.toolchain.ptx_code import LoopShape
from stitchopt.tune.device import tune_device
from stitchopt.tune.driver import Budget

KERNELS = {source.stem: source for source in kernel_sources()}
OMP_PROGRAMS = {source.stem: source for source in offload_sources()}
DATA = Path(__file__).parents[1] / "data"
DROPS_KERNELS = "module(internalize),globaldce"


@pytest.fixture(scope="module")
def scan(toolchain: Toolchain, cuda: CudaToolkit) -> IRModule:
    return module_from_bitcode(toolchain, cuda_device_ir(toolchain, cuda, KERNELS["scan"]), "scan")


def clang_ptx(toolchain: Toolchain, cuda: CudaToolkit, source: Path) -> str:
    """What `clang -O3 --cuda-device-only -S` writes: the PTX every device list is compared with."""
    argv = [toolchain.tool("clang"), "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90"]
    argv += [f"--cuda-path={cuda.root}", "-idirafter", str(STANDIN_DIR), "-Wno-unknown-cuda-version"]
    return subprocess.run([*argv, "-O3", "-S", str(source), "-o", "-"], capture_output=True, check=True).stdout.decode()


# spmv: its loops get names that only a context discarding them (clang's, and llc's with -discard-value-names)
# keeps out of the PTX comments; gemm: unrolled shared-memory tiles.
@pytest.mark.parametrize("family", ["spmv", "gemm"])
def test_opt_llc_reproduce_clangs_o3_device_compile_byte_for_byte(
    toolchain: Toolchain, cuda: CudaToolkit, family: str
) -> None:
    bitcode = cuda_device_ir(toolchain, cuda, KERNELS[family])
    options = device_options(disassemble(toolchain, bitcode, family), cuda)
    assert options.target_flags[:2] == ("-mcpu=sm_90", "-mattr=+ptx85")
    built = build_device(toolchain, bitcode, device_baseline(options).pipeline, options)
    assert built.ptx == clang_ptx(toolchain, cuda, KERNELS[family])


def o3_sass(toolchain: Toolchain, cuda: CudaToolkit, bitcode: bytes) -> dict[str, int]:
    options = device_options(disassemble(toolchain, bitcode, "device"), cuda)
    built = build_device(toolchain, bitcode, device_baseline(options).pipeline, options)
    return {name: kernel.sass_bytes for name, kernel in built.kernels.items()}


def test_openmp_regions_are_built_with_the_device_runtime_a_programs_build_links_in(
    toolchain: Toolchain, cuda: CudaToolkit, openmp_runtime: Path, tmp_path: Path
) -> None:
    """A program's build links LLVM's OpenMP device runtime (and libdevice) into its target regions before -O3
    optimizes them (clang's device compile with --libomptarget-nvptx-bc-path): so linked, opt | llc | ptxas
    write clang's own device object (every section the same size), the regions are smaller than without the
    libraries, and `gpu measure` on the program measures them so."""
    source = OMP_PROGRAMS["gemv"]
    linked = openmp_device_ir(toolchain, cuda, source, runtime=openmp_runtime)
    options = device_options(disassemble(toolchain, linked, "gemv"), cuda)
    built = build_device(toolchain, linked, device_baseline(options).pipeline, options)
    argv = [toolchain.tool("clang"), "-fopenmp", "--offload-arch=sm_90", "--offload-device-only", "-O3", "-c"]
    argv += [f"--cuda-path={cuda.root}", f"--libomptarget-nvptx-bc-path={openmp_runtime}"]
    subprocess.run([*argv, str(source), "-o", str(tmp_path / "device.o")], capture_output=True, check=True)
    sizes = {s.name: s.size for s in read_sections(built.cubin)}
    assert sizes == {s.name: s.size for s in read_sections((tmp_path / "device.o").read_bytes())}
    without = o3_sass(toolchain, cuda, openmp_device_ir(toolchain, cuda, source))
    assert without.keys() == built.kernels.keys()
    assert all(built.kernels[k].sass_bytes < without[k] for k in without)
    measured = subprocess.run(
        [sys.executable, "-m", "stitchopt", "gpu", "measure", str(source), "--json"], capture_output=True, text=True
    )
    assert measured.returncode == 0, measured.stderr
    document = json.loads(measured.stdout)
    kernels = document["builds"][0]["kernels"]
    assert {k: v["sass_bytes"] for k, v in kernels.items()} == {k: v.sass_bytes for k, v in built.kernels.items()}
    assert document["openmp_runtime_linked"] is True


def test_without_the_openmp_device_runtime_a_note_says_the_regions_are_built_without_it(
    toolchain: Toolchain, cuda: CudaToolkit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the runtime's bitcode is missing (faked: make test installs it), `gpu measure` still measures the
    program's regions, as `--offload-device-only -S` compiles them, and says what is missing."""
    monkeypatch.setattr(gpu_cli, "openmp_offload_bitcode", lambda toolchain, arch: None)
    result = CliRunner().invoke(command_app(), ["gpu", "measure", str(OMP_PROGRAMS["gemv"]), "--json"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.stderr.split())  # (the console wraps it to the terminal's width)
    assert "no OpenMP device runtime for sm_90 (libomptarget-nvptx-sm_90.bc; install libomp-19-dev" in said
    document = json.loads(result.stdout)
    unlinked = o3_sass(toolchain, cuda, openmp_device_ir(toolchain, cuda, OMP_PROGRAMS["gemv"]))
    assert {name: kernel["sass_bytes"] for name, kernel in document["builds"][0]["kernels"].items()} == unlinked
    assert document["openmp_runtime_linked"] is False  # the JSON says so too, not only the note on stderr


@pytest.mark.parametrize("family", ["stencil", "nbody"])
def test_opt_llc_reproduce_clangs_o3_openmp_device_compile_byte_for_byte(
    toolchain: Toolchain, cuda: CudaToolkit, family: str
) -> None:
    """OpenMP target regions (kernels_v1/omp) as the device labels compile them: the device side of clang -O3 for
    that file without the device runtime (`--offload-device-only -S`: runtime calls left external), with C's FP
    contraction; ptxas assembles it relocatable and every kernel is measured, with
    the functions it reaches."""
    source = OMP_PROGRAMS[family]
    bitcode = openmp_device_ir(toolchain, cuda, source)
    options = device_options(disassemble(toolchain, bitcode, family), cuda)
    assert "--fp-contract=fast" not in options.target_flags and "-c" in options.assembler
    built = build_device(toolchain, bitcode, device_baseline(options).pipeline, options)
    argv = [toolchain.tool("clang"), "-fopenmp", "--offload-arch=sm_90", "--offload-device-only"]
    argv += [f"--cuda-path={cuda.root}", "-O3", "-S", str(source), "-o", "-"]
    assert built.ptx == subprocess.run(argv, capture_output=True, check=True).stdout.decode()
    assert built.kernels and all(k.startswith("__omp_offloading_") for k in built.kernels)
    # a kernel's SASS counts the outlined parallel body it hands the runtime, a function of its own in the cubin
    own = {s.name.removeprefix(".text."): s.size for s in read_sections(built.cubin) if s.executable}
    assert all(measure.sass_bytes > own[name] > 0 for name, measure in built.kernels.items())


def test_kernels_using_cuda_headers_and_cccl_compile(toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path) -> None:
    """cuda_fp16.h needs libcu++ (`nv/target`) and cub is CCCL: both come with the gpu extra (CUDA 13 keeps them
    in include/cccl, which nvcc adds and clang does not)."""
    source = tmp_path / "half_cub.cu"
    source.write_text(
        "#include <cuda_fp16.h>\n#include <cub/cub.cuh>\n"
        "__global__ void scale(__half *x, float s) {\n"
        "  x[threadIdx.x] = __float2half(__half2float(x[threadIdx.x]) * s);\n}\n"
        "__global__ void total(int *x) {\n"
        "  typedef cub::WarpReduce<int> Reduce;\n  __shared__ typename Reduce::TempStorage scratch;\n"
        "  x[threadIdx.x] = Reduce(scratch).Sum(x[threadIdx.x]);\n}\n"
    )
    text = disassemble(toolchain, cuda_device_ir(toolchain, cuda, source), source.name)
    assert {"_Z5scaleP6__halff", "_Z5totalPi"} <= set(kernel_names(text))  # cub adds an empty kernel of its own


@pytest.mark.slow
def test_every_kernel_family_compiles_and_is_split_by_family(toolchain: Toolchain, cuda: CudaToolkit) -> None:
    assert set(KERNELS) == set(FAMILY_SPLITS) and set(FAMILY_SPLITS.values()) == {"train", "validation", "test"}
    assert {s.stem for s in kernel_sources("test")} == {"histogram", "spmv", "nbody", "convolution", "softmax"}
    for family, source in KERNELS.items():
        text = disassemble(toolchain, cuda_device_ir(toolchain, cuda, source), family)
        assert f'target triple = "{DEVICE_TRIPLE}"' in text
        assert len(kernel_names(text)) >= 2, family


def test_ptxas_report_and_sass_sizes(toolchain: Toolchain, cuda: CudaToolkit, scan: IRModule) -> None:
    options = device_options(disassemble(toolchain, scan.bitcode, "scan"), cuda)
    built = build_device(toolchain, scan.bitcode, "default<O3>", options)
    assert set(built.kernels) == {"_Z10block_scanPKiPiS1_i", "_Z14add_block_sumsPiPKii"}
    for name, kernel in built.kernels.items():
        assert kernel.resources.registers > 0 and 0 < kernel.resources.occupancy("sm_90") <= 1
        assert kernel.sass_bytes > 0 and kernel.sass_bytes % SASS_WORD == 0
        alone = build_device(toolchain, kernel_unit(toolchain, scan.bitcode, name), "default<O3>", options)
        assert list(alone.kernels) == [name] and alone.kernels[name] == kernel  # as built in the whole file
    # ptxas pads each kernel with NOPs to 128 bytes: measured without them, not every size is a multiple of 128
    assert any(kernel.sass_bytes % 128 for kernel in built.kernels.values())
    sizes = object_sizes(built.cubin)  # the kernels' parameter banks are not counted
    assert sizes.text_bytes == sum(k.sass_bytes for k in built.kernels.values())
    assert not any(name.startswith(".nv.constant0.") for name in sizes.sections)


def test_an_openmp_region_alone_builds_as_in_its_program_with_names_of_any_checkout(
    toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path
) -> None:
    """OpenMP regions as label units: each alone (the other regions and their annotations deleted: left null,
    they crash openmp-opt) builds as in the whole program, named without the file IDs clang puts in region
    names; a copy of the file elsewhere (another inode) gives other names but the same units."""
    source = OMP_PROGRAMS["stencil"]
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    units: list[dict[str, str]] = []
    names: list[list[str]] = []
    for path in (source, copy):
        bitcode = openmp_device_ir(toolchain, cuda, path)
        text = disassemble(toolchain, bitcode, path.name)
        options = device_options(text, cuda)
        whole = build_device(toolchain, bitcode, "default<O3>", options)
        units.append({})
        names.append(kernel_names(text))
        for name in names[-1]:
            unit = kernel_unit(toolchain, bitcode, without_file_ids(name), text)
            alone = build_device(toolchain, unit, "default<O3>", options)
            assert alone.kernels == {name: whole.kernels[name]}
            units[-1][without_file_ids(name)] = normalized_sha256(toolchain, unit)
    assert sorted(units[0]) == [
        f"__omp_offloading_{f}" for f in ("jacobi_l23", "jacobi_resident_l32", "jacobi_sweep_l12")
    ]
    assert units[0] == units[1] and not set(names[0]) & set(names[1])
    hexlike = tmp_path / "hexlike.c"  # a function whose name reads like file IDs: named as given, not stripped again
    hexlike.write_text("void add_2d(float *x) {\n#pragma omp target map(tofrom: x[:8])\n  x[0] += 1;\n}\n")
    bitcode = openmp_device_ir(toolchain, cuda, hexlike)
    (name,) = kernel_names(disassemble(toolchain, bitcode, hexlike.name))
    assert without_file_ids(name) == "__omp_offloading_add_2d_l2"
    assert kernel_unit(toolchain, bitcode, "__omp_offloading_add_2d_l2")  # found, not "no kernel"


@pytest.mark.parametrize(
    ("registers", "arch", "share"),
    [
        (40, "sm_90", 48 / 64),
        (48, "sm_90", 40 / 64),
        (32, "sm_86", 1.0),
        (255, "sm_90", 8 / 64),
        (64, "sm_75", 1.0),
        (64, "sm_121", 32 / 48),  # not in the table: as sm_120
    ],
)
def test_register_occupancy_follows_cuda_occupancy_rules(registers: int, arch: str, share: float) -> None:
    """cuda_occupancy.h: registers are allocated per warp in units of 256, per sub-partition (4 of 16K each),
    and the resident warps per multiprocessor depend on the architecture (64 on sm_90, 48 on sm_86, 32 on
    sm_75)."""
    assert KernelResources(registers, 0, 0, 0).occupancy(arch) == share


def test_a_list_that_drops_a_kernel_is_a_failed_build_on_every_backend(
    toolchain: Toolchain, cuda: CudaToolkit, scan: IRModule, tmp_path: Path
) -> None:
    options = device_options(disassemble(toolchain, scan.bitcode, "scan"), cuda)
    for backend in ("subprocess", "native"):
        store = EvaluationStore(tmp_path / f"{backend}.sqlite")
        with Evaluator(toolchain, store, jobs=1, backend=backend) as evaluator:
            dropped = evaluator.evaluate(scan, DROPS_KERNELS, options)
            o3 = evaluator.evaluate(scan, "default<O3>", options)
        assert dropped.status is EvalStatus.COMPILE_ERROR and "_Z10block_scanPKiPiS1_i" in dropped.stderr_tail
        assert o3.ok and o3.text_bytes == sum(
            k.sass_bytes for k in build_device(toolchain, scan.bitcode, "default<O3>", options).kernels.values()
        )


def test_device_catalogue_has_the_gpu_passes_and_its_own_identity(toolchain: Toolchain) -> None:
    host, device = load_catalogue(toolchain), load_catalogue(toolchain, device=True)
    for name in ("nvvm-reflect", "nvvm-intr-range", "infer-address-spaces", "openmp-opt"):
        assert device.get(name) is not None and host.get(name) is None, name
    assert device.get("structurizecfg") is None and device.identity != host.identity


def test_device_search_never_ends_worse_than_o3(
    toolchain: Toolchain, cuda: CudaToolkit, scan: IRModule, tmp_path: Path
) -> None:
    options = device_options(disassemble(toolchain, scan.bitcode, "scan"), cuda)
    catalogue = load_catalogue(toolchain, device=True)
    with Evaluator(toolchain, EvaluationStore(tmp_path / "cache.sqlite"), jobs=2) as evaluator:
        found = tune_device(
            evaluator,
            scan,
            catalogue,
            device_baseline(options),
            printed_device_pipeline(toolchain),
            budget=Budget(16),
        )
    assert found.run.evaluations == 16 and found.score <= 1.0
    if found.passes is not None:
        assert found.score < 1.0 and len(build_device(toolchain, scan.bitcode, found.pipeline, options).kernels) == 2


LOOPS_CU = """__global__ void sums(const float *x, float *y, int n) {
  float s = 0;
  for (int j = 0; j < n; ++j) s += x[j] * x[j];
  y[threadIdx.x] = s;
}

__global__ void eight(const float *x, float *y) {
  float t = 0;
  for (int j = 0; j < 8; ++j) t += x[threadIdx.x * 8 + j];
  y[threadIdx.x] = t;
}
"""


def test_loop_shapes_show_what_a_list_undoes_of_o3s_loops(
    toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path
) -> None:
    """-O3 unrolls `sums`'s loop (and keeps a remainder loop) and `eight`'s fully; a list without loop passes
    leaves both loops rolled and tested at the top, one with loop-rotate alone rolled but rotated. Each sign of
    the time objective shows where it should, and `eight`'s rolled loop is smaller: what size alone would keep."""
    source = tmp_path / "loops.cu"
    source.write_text(LOOPS_CU)
    bitcode = cuda_device_ir(toolchain, cuda, source)
    options = device_options(disassemble(toolchain, bitcode, "loops"), cuda)
    o3 = build_device(toolchain, bitcode, "default<O3>", options).kernels
    sums, eight = "_Z4sumsPKfPfi", "_Z5eightPKfPf"
    assert o3[eight].loops == LoopShape(0, 0, 0)
    assert o3[sums].loops.loops == 2 and o3[sums].loops.unrotated == 0 and o3[sums].loops.inner_memory > 4
    assert not o3[sums].loops.slower_signs(o3[sums].loops)
    rolled = build_device(toolchain, bitcode, "function(sroa,instcombine<no-verify-fixpoint>,simplifycfg)", options)
    assert rolled.kernels[eight].loops.slower_signs(o3[eight].loops) == ["loops 0 -> 1", "unrotated loops 0 -> 1"]
    assert rolled.kernels[sums].loops.slower_signs(o3[sums].loops) == [
        "unrotated loops 0 -> 1",
        f"innermost-loop loads/stores {o3[sums].loops.inner_memory} -> 1",
    ]
    assert rolled.kernels[eight].sass_bytes < o3[eight].sass_bytes
    rotated = build_device(
        toolchain, bitcode, "function(sroa,loop(loop-rotate),instcombine<no-verify-fixpoint>)", options
    )
    assert rotated.kernels[eight].loops == LoopShape(1, 0, 1)


@pytest.mark.slow
def test_gpu_commands(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env)

    one = "bench://kernels-v1/scan#_Z14add_block_sumsPiPKii"  # one kernel of a family, by URI
    measured = cli("gpu", "measure", one, "-p", "default<Oz>", "-o", str(tmp_path / "oz.ptx"), "--json")
    assert measured.returncode == 0, measured.stderr
    document = json.loads(measured.stdout)
    assert [b["build"] for b in document["builds"]] == ["-O3", "default<Oz>"]
    assert "openmp_runtime_linked" not in document  # CUDA: no target regions
    assert all(list(b["kernels"]) == ["_Z14add_block_sumsPiPKii"] for b in document["builds"])
    o3_kernel = document["builds"][0]["kernels"]["_Z14add_block_sumsPiPKii"]
    assert o3_kernel["sass_instructions"] * SASS_WORD == o3_kernel["sass_bytes"] and o3_kernel["ptx_instructions"] > 5
    assert o3_kernel["loops"] == {"loops": 0, "unrotated": 0, "inner_memory": 0}  # one add per thread, no loop
    unknown = cli("gpu", "tune", "bench://kernels-v1/raytrace")
    assert unknown.returncode == 2 and "the families are stencil" in unknown.stderr
    assert (tmp_path / "oz.ptx").read_text().startswith("//\n// Generated by LLVM NVPTX Back-End")
    table = cli("gpu", "measure", str(KERNELS["scan"]), "-p", DROPS_KERNELS, "-o", str(tmp_path / "dropped.ptx"))
    assert table.returncode == 1 and "dropped or renamed kernel(s)" in table.stdout and "block_scan" in table.stdout
    assert "dropped.ptx not written: the list built no PTX" in table.stderr and not (tmp_path / "dropped.ptx").exists()
    bad = cli("gpu", "measure", str(KERNELS["scan"]), "--arch", "ampere")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "sm_XX" in bad.stderr
    host = tmp_path / "host.ll"
    host.write_text('target triple = "x86_64-pc-linux-gnu"\ndefine i32 @f() {\n  ret i32 0\n}\n')
    refused = cli("gpu", "tune", str(host))
    assert refused.returncode == 2 and "not GPU device code" in refused.stderr
    (tmp_path / "empty.ll").write_text("\n")  # valid IR, read as the host's: said to be empty, not host code
    empty = cli("gpu", "measure", str(tmp_path / "empty.ll"))
    assert empty.returncode == 2 and empty.stderr.count("\n") == 1 and "empty.ll is empty" in empty.stderr
    broken = tmp_path / "broken.cu"
    broken.write_text("__global__ void k(int *p) { p[0] = undeclared; }\n")
    failed = cli("gpu", "measure", str(broken))
    assert failed.returncode == 2 and "undeclared" in failed.stderr and failed.stderr.count("\n") == 1
    old_gpu = cli("gpu", "measure", str(KERNELS["scan"]), "--arch", "sm_60")
    assert old_gpu.returncode == 2 and old_gpu.stderr.count("\n") == 1 and "older than sm_70" in old_gpu.stderr
    unbuildable = cli("gpu", "measure", str(KERNELS["scan"]), "--arch", "sm_71")  # no ptxas builds it
    assert unbuildable.returncode == 2 and "cannot build sm_71: use one of sm_" in unbuildable.stderr
    bogus = cli("gpu", "measure", str(KERNELS["scan"]), "-p", "module(no-such-pass)")
    assert bogus.returncode == 2 and "opt cannot run this pipeline" in bogus.stderr
    empty = tmp_path / "empty.cu"
    empty.write_text("__device__ int twice(int x) { return 2 * x; }\n")
    none = cli("gpu", "tune", str(empty))
    assert none.returncode == 2 and "no kernel" in none.stderr and none.stderr.count("\n") == 1
    directory = cli("gpu", "measure", str(tmp_path))
    assert directory.returncode == 2 and "is a directory: give one file" in directory.stderr
    text = tmp_path / "kernel.txt"
    text.write_text("__global__ void k() {}\n")
    unsupported = cli("gpu", "measure", str(text))
    assert unsupported.returncode == 2 and "use one of" in unsupported.stderr and ".cu," in unsupported.stderr
    no_model = cli("gpu", "optimize", str(KERNELS["scan"]), "--model", str(tmp_path / "no-model"))
    assert no_model.returncode == 2 and no_model.stderr.strip().endswith(
        "no such directory: give a device model directory (one with config.json)"
    )
    nbody_forces = "bench://kernels-v1/nbody#_Z12nbody_forcesPK6float4P6float3if"
    timed = cli("gpu", "optimize", nbody_forces, "--mode", "jit", "--objective", "time", "--json")
    assert timed.returncode == 0, timed.stderr
    device = json.loads(timed.stdout)["device"]
    # the lists that are smaller (a size objective keeps one) leave its inner loop tested at the top
    assert device["objective"] == "time" and not device["kept_list"]
    assert any("unrotated loops 0 -> " in (reason or "") for reason in device["tried"].values())
    fast = cli("gpu", "optimize", nbody_forces, "--objective", "fast")
    assert fast.returncode == 2 and fast.stderr.count("\n") == 1 and "use one of size, time" in fast.stderr
    doctor = json.loads(cli("doctor", "--json").stdout)["gpu"]
    assert doctor["nvptx"] and doctor["cuda"]["found"] and doctor["cuda"]["headers"]


def test_no_cuda_toolkit_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cuda_module, "_candidate_roots", lambda: [("$CUDA_HOME", tmp_path)])
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError, match=r"no CUDA toolkit found .*no bin/ptxas.*stitchopt\[gpu\]"):
        find_cuda()
    monkeypatch.undo()
    monkeypatch.setenv("STITCHOPT_CUDA", str(tmp_path))  # named explicitly: an error, never skipped
    with pytest.raises(ToolchainError, match=r"\$STITCHOPT_CUDA=.*: no bin/ptxas; point it at a CUDA toolkit"):
        find_cuda()


@pytest.mark.slow
def test_gpu_timing_launches_fit_the_kernels_and_the_run_says_why_it_cannot_time_here(
    toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path
) -> None:
    """The timing script's CPU-only path: every launch of the project's own kernels passes exactly the
    parameters the kernel's -O3 PTX declares (llama.cpp's are checked by `prepare`, where that dataset is built),
    and `run` without CuPy or a GPU writes its document with the reason and exits 0."""
    checked = []
    for source in kernel_sources():
        bitcode = cuda_device_ir(toolchain, cuda, source)
        text = disassemble(toolchain, bitcode, str(source))
        options = device_options(text, cuda)
        for kernel in (k for k in kernel_names(text) if k in LAUNCHES):
            unit = kernel_unit(toolchain, bitcode, kernel, text)
            built = build_device(toolchain, unit, device_baseline(options).pipeline, options)
            assert ptx_parameter_types(built.ptx, kernel) == argument_types(launch(kernel)), kernel
            checked.append(kernel)
    # the project's 44 kernels but two whose outputs depend on the order of atomics; the others are llama.cpp's 20
    assert len(checked) == 42 and len(LAUNCHES) == 42 + 20
    (tmp_path / "run").mkdir()
    manifest = {"arch": "sm_90", "kernels": []}
    (tmp_path / "run" / "manifest.json").write_text(json.dumps(manifest))
    script = [sys.executable, str(Path(__file__).parents[2] / "benchmarks" / "gpu_timing.py")]
    timed = subprocess.run([*script, "run", str(tmp_path / "run"), "--json", str(tmp_path / "timing.json")])
    document = json.loads((tmp_path / "timing.json").read_text())
    assert timed.returncode == 0 and document["manifest"] == manifest
    assert document["gpu"] is None and document["reason"] and document["kernels"] == []


def test_a_region_that_maps_nothing_has_no_parameters_and_a_nowait_update_is_named(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    """Each launch's map arrays are its own (a bare region after one that maps an array has none), and the
    `nowait` forms of the data calls name their constructs too."""
    source = tmp_path / "nowait.c"
    source.write_text(
        "int a[64];\nvoid f(void) {\n#pragma omp target map(tofrom: a)\n  a[0] = 1;\n#pragma omp target\n  { }\n"
        "#pragma omp target update to(a) nowait\n}\n"
    )
    text = disassemble(toolchain, openmp_host_ir(toolchain, source, "sm_90", ["-gline-tables-only"]), "nowait.c")
    assert sorted(region_parameters(text).values()) == [[], ["a"]]
    assert [(c.kind, c.line) for c in offload_constructs(text)] == [("target", 3), ("target update", 7)]


def test_offload_transfers_are_read_from_host_ir(tmp_path: Path) -> None:
    """tests/data/offload.c: saxpy's region maps x to and y both ways (sizes known at run time, the two
    by-value scalars not copied); the data region maps `grid` both ways (16 KiB); the region inside it maps
    grid and out implicitly both ways; the update copies 16 floats back; `enter data map(alloc:)` and `exit data
    map(release:)` copy nothing (their map types are all zero) and the update between them copies p in."""
    env = {**os.environ, "COLUMNS": "200"}
    cli = [sys.executable, "-m", "stitchopt", "gpu", "transfers"]
    done = subprocess.run([*cli, str(DATA / "offload.c"), "--json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    constructs = json.loads(done.stdout)["constructs"]
    moved = [(c["to_device"]["items"], c["from_device"]["items"], c["to_device"]["static_bytes"]) for c in constructs]
    assert moved == [(2, 1, 0), (1, 1, 16384), (2, 2, 32768), (0, 1, 0), (0, 0, 0), (1, 0, 0), (0, 0, 0)]
    assert constructs[0]["to_device"]["runtime_sized"] == 2 and constructs[3]["from_device"]["static_bytes"] == 64
    assert constructs[5]["to_device"]["runtime_sized"] == 1  # `update to(p[0:n])`: its size only the run knows
    assert [(c["kind"], c["line"]) for c in constructs] == [
        ("target", 7),
        ("target data", 11),
        ("target", 13),
        ("target update", 15),
        ("target enter data", 20),
        ("target update", 21),
        ("target exit data", 22),
    ]
    assert constructs[1]["construct"] == "target data, line 11"  # what the table shows
    plain = tmp_path / "plain.c"
    plain.write_text("int twice(int x) { return 2 * x; }\n")
    none = subprocess.run([*cli, str(plain)], capture_output=True, text=True, env=env)
    assert none.returncode == 2 and "no OpenMP construct maps data" in none.stderr
    cuda = subprocess.run([*cli, str(KERNELS["scan"])], capture_output=True, text=True, env=env)
    assert cuda.returncode == 2 and "stitchopt gpu measure" in cuda.stderr
    family = subprocess.run([*cli, "bench://kernels-v1/omp/softmax", "--json"], capture_output=True, text=True, env=env)
    assert family.returncode == 0 and len(json.loads(family.stdout)["constructs"]) == 2, family.stderr
    for uri, says in (
        ("bench://kernels-v1/softmax", "reads a whole OpenMP program"),
        ("bench://kernels-v1/omp/raytrace", "no kernel family 'raytrace'"),
    ):
        refused = subprocess.run([*cli, uri], capture_output=True, text=True, env=env)
        assert refused.returncode == 2 and says in refused.stderr and refused.stderr.count("\n") == 1, refused.stderr
