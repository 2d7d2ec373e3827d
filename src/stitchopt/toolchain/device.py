"""GPU device code as stitchopt measures it: CUDA sources to unoptimized `nvptx64` IR, the codegen options
that make `opt | llc | ptxas` reproduce clang's own device compile, and the kernels a list must keep.

The device IR comes from `clang -x cuda --cuda-device-only -O3 -Xclang -disable-llvm-passes`, which is what
clang's `-O3` device compile hands its optimizer (libdevice linked in, kernels annotated in
`!nvvm.annotations`). clang then runs `default<O3>` with `-enable-memcpyopt-without-libcalls` in a context that
discards value names, and codegen with fused multiply-add allowed, for the `target-cpu` (sm_XX) and PTX
version (`+ptxNN`) that its front end wrote into every function: `device_options` reads both back from the
IR, so any device module, from a `.cu` file or a user's `.ll`, is measured as clang would build it. The
measured object is ptxas's cubin (an ELF file: its executable sections are the SASS code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from stitchopt.core import CompileOptions
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError, ToolchainError
from stitchopt.toolchain.baselines import Baseline
from stitchopt.toolchain.cuda import CUDA_INSTALL_HINT, STANDIN_DIR, CudaToolkit, require_nvptx
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import read_sections
from stitchopt.toolchain.llvm import frontend_command, llc_command, opt_command
from stitchopt.toolchain.process import ToolRun, run_tool
from stitchopt.toolchain.ptx import KernelResources, kernel_resources

DEVICE_TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_90"
CUDA_SUFFIXES = frozenset({".cu"})
DEVICE_LEVEL = "O3"  # clang's usual level for device code, and the reference every list is compared with
# What clang's device compile adds to opt's pipeline: memcpyopt may form memcpy although the GPU has no libc,
# and no value names (they show in PTX comments).
DEVICE_OPT_FLAGS = ("-discard-value-names", "-enable-memcpyopt-without-libcalls")
FRONTEND_TIMEOUT_S = 300.0
_ARCH_RE = re.compile(r"sm_\d+[a-z]?")
_TARGET_CPU_RE = re.compile(r'"target-cpu"="(sm_\d+[a-z]?)"')
_PTX_FEATURE_RE = re.compile(r'"target-features"="[^"]*?(\+ptx\d+)')
_ANNOTATED_KERNEL_RE = re.compile(r'!\{ptr @("[^"]+"|[^,\s]+), !"kernel", i32 1\}')
_PTX_KERNEL_CC_RE = re.compile(r"^define [^@\n]*ptx_kernel [^@\n]*@(\"[^\"]+\"|[^(\s]+)\(", re.MULTILINE)
# Functions and globals defined with a linkage that other modules can see (not internal or private).
_EXTERNAL_SYMBOL_RE = re.compile(
    r"^(?:define (?![^@\n]*\b(?:internal|private)\b)[^@\n]*@|@)(\"[^\"]+\"|[\w.$]+)(?:\(| = (?!internal|private))",
    re.MULTILINE,
)
_PTX_ENTRY_RE = re.compile(r"^(?:\.visible |\.weak )?\.entry\s+([^\s(]+)\s*\(", re.MULTILINE)


def is_device_triple(triple: str) -> bool:
    return triple.startswith("nvptx")


def check_arch(arch: str) -> str:
    if not _ARCH_RE.fullmatch(arch):
        raise InputError(f"GPU architecture {arch!r} is not of the form sm_XX (e.g. {DEFAULT_ARCH})")
    return arch


def cuda_device_ir(toolchain: Toolchain, cuda: CudaToolkit, source: Path, arch: str = DEFAULT_ARCH) -> bytes:
    """Unoptimized device bitcode of one `.cu` file for `arch`, as clang's `-O3` device compile sees it."""
    require_nvptx(toolchain)
    if not source.is_file():
        raise InputError(f"{source}: no such file")
    driver = [toolchain.tool("clang"), "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={check_arch(arch)}"]
    argv = frontend_command(driver, DEVICE_LEVEL, flags=_cuda_flags(cuda, source.name), args=[str(source), "-o", "-"])
    run = run_tool(argv, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        raise InputError(f"{source}: clang cannot compile it for {arch}: {first_error(run.stderr_text)}")
    return run.stdout


def _cuda_flags(cuda: CudaToolkit, compiled: str) -> list[str]:
    """clang's options for CUDA's headers and libdevice (ToolchainError when this toolkit lacks them)."""
    if cuda.root is None:
        raise ToolchainError(
            f"compiling {compiled} needs CUDA's headers, and {cuda.ptxas} has none: {CUDA_INSTALL_HINT}"
        )
    return [f"--cuda-path={cuda.root}", "-idirafter", str(STANDIN_DIR), "-Wno-unknown-cuda-version"]


def device_options(ir_text: str, cuda: CudaToolkit) -> CompileOptions:
    """How clang builds this device module: its sm_XX and PTX version (from the functions' attributes)."""
    cpu, ptx = _TARGET_CPU_RE.search(ir_text), _PTX_FEATURE_RE.search(ir_text)
    if cpu is None or ptx is None:
        raise InputError(
            "device IR without a target-cpu (sm_XX) and PTX version (+ptxNN) in its function attributes: "
            "write it with clang --cuda-device-only --cuda-gpu-arch=sm_XX"
        )
    return CompileOptions(
        codegen_level=3,
        opt_flags=DEVICE_OPT_FLAGS,
        target_flags=(f"-mcpu={cpu.group(1)}", f"-mattr={ptx.group(1)}", "--fp-contract=fast", "-discard-value-names"),
        assembler=(str(cuda.ptxas), "-v", f"-arch={cpu.group(1)}", "-O3"),
        assembler_version=cuda.version,
    )


def device_baseline(options: CompileOptions) -> Baseline:
    """clang's `-O3` device compile: what every list for GPU code is compared with, and the backup."""
    return Baseline(DEVICE_LEVEL, f"default<{DEVICE_LEVEL}>", options)


def printed_device_pipeline(toolchain: Toolchain, cuda: CudaToolkit, arch: str = DEFAULT_ARCH) -> str:
    """The pipeline clang prints for its `-O3` device compile (of a probe: it does not depend on the source);
    local search starts from its passes."""
    driver = [toolchain.tool("clang"), "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={check_arch(arch)}"]
    argv = [*driver, *_cuda_flags(cuda, "the probe"), f"-{DEVICE_LEVEL}", "-mllvm", "-print-pipeline-passes", "-S"]
    run = run_tool([*argv, "-", "-o", "/dev/null"], stdin=b"__global__ void stitchopt_probe() {}\n", timeout=60)
    lines = run.stdout.decode().strip().splitlines()
    if run.returncode != 0 or not lines:
        raise ToolchainError(f"cannot read clang's -{DEVICE_LEVEL} device pipeline: {first_error(run.stderr_text)}")
    return lines[-1]


def kernel_names(ir_text: str) -> list[str]:
    """The kernels of a device module, annotated (`!nvvm.annotations`) or by calling convention."""
    found = _ANNOTATED_KERNEL_RE.findall(ir_text) + _PTX_KERNEL_CC_RE.findall(ir_text)
    return sorted({name.strip('"') for name in found})


def kernel_unit(toolchain: Toolchain, bitcode: bytes, kernel: str) -> bytes:
    """The module with `kernel` as its only kernel: the other kernels become internal and are deleted (with
    what only they use); every other symbol keeps its linkage, so -O3 treats the kernel as in the whole file."""
    text = _run([toolchain.tool("llvm-dis"), "-", "-o", "-"], bitcode, "llvm-dis").decode()
    others = set(kernel_names(text)) - {kernel}
    if kernel not in kernel_names(text):
        raise InputError(f"no kernel {kernel!r} in this module (kernels: {', '.join(sorted(others)) or 'none'})")
    external = (name.strip('"') for name in _EXTERNAL_SYMBOL_RE.findall(text))
    flags = ["-internalize-public-api-list=" + ",".join(name for name in external if name not in others)]
    return _run(opt_command(toolchain.tool("opt"), "internalize,globaldce", flags=flags), bitcode, "opt")


def ptx_entries(ptx: str) -> list[str]:
    """The kernels (`.entry`) a PTX file defines."""
    return _PTX_ENTRY_RE.findall(ptx)


def missing_kernels(ptx: str, kernels: list[str]) -> list[str]:
    """Of a module's `kernels`, those the PTX lacks: a list that drops one is rejected like a miscompile."""
    entries = set(ptx_entries(ptx))
    return [name for name in kernels if name not in entries]


def ptx_command(toolchain: Toolchain, options: CompileOptions) -> list[str]:
    """llc writing PTX (stdin to stdout) as `options` say."""
    return llc_command(toolchain.tool("llc"), flags=options.llc_flags(), filetype="asm")


def ptxas_command(options: CompileOptions) -> list[str]:
    """ptxas assembling PTX from stdin into a cubin on stdout, its `-v` report on stderr."""
    return [*options.assembler, "-", "-o", "/dev/stdout"]


@dataclass(frozen=True)
class KernelMeasure:
    """One kernel as built: SASS bytes (its executable section in the cubin) and what ptxas reported."""

    sass_bytes: int
    resources: KernelResources


@dataclass(frozen=True)
class DeviceBuild:
    ptx: str
    cubin: bytes
    kernels: dict[str, KernelMeasure]


def build_device(toolchain: Toolchain, bitcode: bytes, pipeline: str, options: CompileOptions) -> DeviceBuild:
    """`opt -passes=PIPELINE | llc | ptxas` on device bitcode, each kernel measured; InputError naming the step
    that failed, or the kernels the list lost."""
    kernels = kernel_names(_run([toolchain.tool("llvm-dis"), "-", "-o", "-"], bitcode, "llvm-dis").decode())
    optimized = _run(opt_command(toolchain.tool("opt"), pipeline, flags=options.opt_args()), bitcode, "opt")
    ptx = _run(ptx_command(toolchain, options), optimized, "llc").decode()
    missing = missing_kernels(ptx, kernels)
    if missing:
        raise InputError(f"the list dropped or renamed kernel(s) {', '.join(missing)}: it cannot build this program")
    assembled = run_tool(ptxas_command(options), stdin=ptx.encode(), timeout=FRONTEND_TIMEOUT_S)
    if assembled.returncode != 0:
        raise InputError(f"ptxas rejects the PTX: {first_error(assembled.stderr_text)}")
    resources = kernel_resources(assembled.stderr_text)
    sass = {s.name.removeprefix(".text."): s.size for s in read_sections(assembled.stdout) if s.executable}
    measured = {name: KernelMeasure(sass.get(name, 0), resources[name]) for name in kernels if name in resources}
    return DeviceBuild(ptx, assembled.stdout, measured)


def _run(argv: list[str], stdin: bytes, step: str) -> bytes:
    run: ToolRun = run_tool(argv, stdin=stdin, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        raise InputError(f"{step} failed: {first_error(run.stderr_text)}")
    return run.stdout
