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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.core import CompileOptions
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError, ToolchainError
from stitchopt.toolchain.baselines import Baseline
from stitchopt.toolchain.cuda import CUDA_INSTALL_HINT, STANDIN_DIR, CudaToolkit, require_nvptx
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import read_sections
from stitchopt.toolchain.frontend import assemble
from stitchopt.toolchain.llvm import frontend_command, llc_command, opt_command
from stitchopt.toolchain.process import ToolRun, run_tool
from stitchopt.toolchain.ptx import KernelResources, kernel_resources
from stitchopt.toolchain.ptx_code import LoopShape, ptx_code

DEVICE_TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_90"
CUDA_SUFFIXES = frozenset({".cu"})
_OPENMP_DEVICE_FLAG = '!"openmp-device"'  # the module flag of OpenMP device code
DEVICE_LEVEL = "O3"  # clang's usual level for device code, and the reference every list is compared with
# What clang's device compile adds to opt's pipeline: memcpyopt may form memcpy although the GPU has no libc,
# and no value names (they show in PTX comments).
DEVICE_OPT_FLAGS = ("-discard-value-names", "-enable-memcpyopt-without-libcalls")
FRONTEND_TIMEOUT_S = 300.0
_ARCH_RE = re.compile(r"sm_(\d+)[a-z]?")
OLDEST_ARCH = 70  # Volta: the first with 16-byte SASS instructions, which the cubin measure assumes
_TARGET_CPU_RE = re.compile(r'"target-cpu"="(sm_\d+[a-z]?)"')
_TARGET_FEATURES_RE = re.compile(r'"target-features"="([^"]*)"')
_PTX_VERSION_RE = re.compile(r"\+ptx(\d+)")
_ANNOTATED_KERNEL_RE = re.compile(r'!\{ptr @("[^"]+"|[^,\s]+), !"kernel", i32 1\}')
_PTX_KERNEL_CC_RE = re.compile(r"^define [^@\n]*ptx_kernel [^@\n]*@(\"[^\"]+\"|[^(\s]+)\(", re.MULTILINE)
# Functions and globals defined with a linkage that other modules can see (not internal or private).
_EXTERNAL_SYMBOL_RE = re.compile(
    r"^(?:define (?![^@\n]*\b(?:internal|private)\b)[^@\n]*@|@)(\"[^\"]+\"|[-\w.$]+)(?:\(| = (?!internal|private))",
    re.MULTILINE,
)
_OPENMP_REGION_RE = re.compile(r"^@\S+_kernel_environment = ", re.MULTILINE)
_OPENMP_RUNTIME_DEFINED_RE = re.compile(r"^define [^@\n]*@__kmpc_target_init\(", re.MULTILINE)
_PTX_ENTRY_RE = re.compile(r"^(?:\.visible |\.weak )?\.entry\s+([^\s(]+)\s*\(", re.MULTILINE)
# A function defined in PTX (not `.extern`), and any name in a body (a call's target, an address taken).
_PTX_DEFINITION_RE = re.compile(
    r"^(?:\.visible |\.weak )?(?:\.entry|\.func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", re.MULTILINE
)
_PTX_NAME_RE = re.compile(r"[A-Za-z_$][\w$]*")
_PTX_COMMENT_RE = re.compile(r"//[^\n]*")
_ANNOTATIONS_RE = re.compile(r"^!nvvm\.annotations = !\{([^}]*)\}$", re.MULTILINE)
_ANNOTATION_NODE_RE = re.compile(r'^(![0-9]+) = (?:distinct )?!\{ptr @("[^"]+"|[^,\s]+),', re.MULTILINE)
# clang names an OpenMP target region `__omp_offloading_<device>_<file>_<function>_l<line>`, the first two the
# source file's device and inode numbers: another checkout of the same file gives other names.
_OFFLOAD_FILE_ID_RE = re.compile(r"__omp_offloading_[0-9a-f]+_[0-9a-f]+_")
_INSTRUCTION_SELECTION = "nvptx-isel"  # llc's IR passes all run before it
_MIR_MODULE_RE = re.compile(r"^--- \|\n(.*?)^\.\.\.$", re.MULTILINE | re.DOTALL)  # MIR's embedded IR, indented


def is_device_triple(triple: str) -> bool:
    """Whether a module is GPU device code (NVPTX) rather than host code."""
    return triple.startswith("nvptx")


def check_arch(arch: str) -> str:
    """`arch` if it names an NVIDIA GPU architecture stitchopt measures (sm_70 and newer); InputError else."""
    match = _ARCH_RE.fullmatch(arch)
    if not match:
        raise InputError(f"GPU architecture {arch!r} is not of the form sm_XX (e.g. {DEFAULT_ARCH})")
    if int(match.group(1)) < OLDEST_ARCH:
        raise InputError(f"GPU architecture {arch} is older than sm_{OLDEST_ARCH}: measure sm_{OLDEST_ARCH} or newer")
    return arch


def device_arch(options: CompileOptions) -> str:
    """The sm_XX device options build for."""
    return next(flag.removeprefix("-mcpu=") for flag in options.target_flags if flag.startswith("-mcpu="))


def _cuda_driver(toolchain: Toolchain, arch: str) -> list[str]:
    """clang compiling CUDA for the device side only, for `arch`."""
    return [toolchain.tool("clang"), "-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={check_arch(arch)}"]


def cuda_device_ir(
    toolchain: Toolchain, cuda: CudaToolkit, source: Path, arch: str = DEFAULT_ARCH, flags: Sequence[str] = ()
) -> bytes:
    """Unoptimized device bitcode of one `.cu` file for `arch`, as clang's `-O3` device compile sees it;
    `flags` are the project's own (include paths, defines, language standard)."""
    require_nvptx(toolchain)
    if not source.is_file():
        raise InputError(f"{source}: no such file")
    if cuda.root is None:
        raise ToolchainError(
            f"compiling {source.name} needs CUDA's headers, and {cuda.ptxas} has none: {CUDA_INSTALL_HINT}"
        )
    toolkit = [f"--cuda-path={cuda.root}", "-idirafter", str(STANDIN_DIR), "-Wno-unknown-cuda-version"]
    cccl = cuda.root / "include" / "cccl"  # CUDA 13 keeps cub, thrust and libcu++ here; nvcc adds it, clang not
    toolkit += ["-isystem", str(cccl)] if cccl.is_dir() else []
    argv = frontend_command(
        _cuda_driver(toolchain, arch), DEVICE_LEVEL, flags=[*toolkit, *flags], args=[str(source), "-o", "-"]
    )
    run = run_tool(argv, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        raise InputError(f"{source}: clang cannot compile it for {arch}: {first_error(run.stderr_text)}")
    return run.stdout


def openmp_device_ir(
    toolchain: Toolchain,
    cuda: CudaToolkit,
    source: Path,
    arch: str = DEFAULT_ARCH,
    flags: Sequence[str] = (),
    runtime: Path | None = None,
) -> bytes:
    """Unoptimized device bitcode of a C/C++ file's OpenMP target regions for `arch`, as clang's `-O3` device
    compile of that file sees it (`--offload-device-only`). With `runtime` (the OpenMP device runtime's bitcode
    file, `openmp_offload_bitcode`), that library and CUDA's libdevice are linked in before the optimizer, as
    clang's device compile does in a program's build (`-mlink-builtin-bitcode`), so -O3 and a list optimize
    the kernels with the runtime and math code they call; without it, as clang's `-S` of a device-only compile
    writes it, calls into both stay external. `flags`: the program's own (include paths, defines)."""
    require_nvptx(toolchain)
    if not source.is_file():
        raise InputError(f"{source}: no such file")
    if cuda.root is None:
        raise ToolchainError(f"compiling {source.name} for a GPU needs CUDA's files: {CUDA_INSTALL_HINT}")
    driver = [toolchain.tool("clang"), "-fopenmp", f"--offload-arch={check_arch(arch)}", "--offload-device-only"]
    linked = [] if runtime is None else [f"--libomptarget-nvptx-bc-path={runtime}"]
    # clang's bitcode output of a device-only compile links the libraries in; its text output (-S) does not.
    argv = frontend_command(
        driver,
        DEVICE_LEVEL,
        flags=[f"--cuda-path={cuda.root}", *linked, *flags],
        text=runtime is None,
        args=[str(source), "-o", "-"],
    )
    run = run_tool(argv, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        raise InputError(
            f"{source}: clang cannot compile its target regions for {arch}: {first_error(run.stderr_text)}"
        )
    if runtime is None:
        text, bitcode = run.stdout.decode(errors="replace"), assemble(toolchain, run.stdout, source.name)
    else:
        text, bitcode = _text(toolchain, run.stdout), run.stdout
    if not kernel_names(text):
        raise InputError(f"{source}: no OpenMP target region (#pragma omp target) to compile for a GPU")
    return bitcode


def device_options(ir_text: str, cuda: CudaToolkit, name: str = "") -> CompileOptions:
    """How clang builds this device module: its sm_XX and PTX version (from the functions' attributes), and for
    OpenMP's device code (module flag `openmp-device`) C's FP contraction and a relocatable cubin, as clang
    assembles it (what the regions still call is resolved when the program links). InputError for device IR
    that names neither, or has no kernel to build (`name`: the input's, for the message)."""
    cpu = _TARGET_CPU_RE.search(ir_text)
    # The newest PTX any function asks for: linked-in runtime code (OpenMP's device runtime) may name older ones.
    features = ",".join(_TARGET_FEATURES_RE.findall(ir_text))
    ptx = max((int(version) for version in _PTX_VERSION_RE.findall(features)), default=None)
    if not kernel_names(ir_text):
        where = f"{name}: " if name else ""
        raise InputError(f"{where}no kernel in this device code (no __global__ function, no nvvm.annotations kernel)")
    if cpu is None or ptx is None:
        raise InputError(
            "device IR without a target-cpu (sm_XX) and PTX version (+ptxNN) in its function attributes: "
            "write it with clang --cuda-device-only --cuda-gpu-arch=sm_XX"
        )
    arch = check_arch(cpu.group(1))
    openmp = _OPENMP_DEVICE_FLAG in ir_text
    contraction = () if openmp else ("--fp-contract=fast",)  # CUDA contracts across statements; C only within
    return CompileOptions(
        codegen_level=3,
        opt_flags=DEVICE_OPT_FLAGS,
        target_flags=(f"-mcpu={arch}", f"-mattr=+ptx{ptx}", *contraction, "-discard-value-names"),
        assembler=(str(cuda.ptxas), "-v", f"-arch={arch}", "-O3", *(("-c",) if openmp else ())),
        assembler_version=cuda.version,
    )


def device_baseline(options: CompileOptions) -> Baseline:
    """clang's `-O3` device compile: what every list for GPU code is compared with, and the backup."""
    return Baseline(DEVICE_LEVEL, f"default<{DEVICE_LEVEL}>", options)


def printed_device_pipeline(toolchain: Toolchain, arch: str = DEFAULT_ARCH) -> str:
    """The pipeline clang prints for its `-O3` device compile (of a probe without CUDA's headers: it depends on
    neither the source nor the CUDA version); local search starts from its passes."""
    argv = [*_cuda_driver(toolchain, arch), "-nocudainc", "-nocudalib", "-Wno-unknown-cuda-version"]
    argv += [f"-{DEVICE_LEVEL}", "-mllvm", "-print-pipeline-passes", "-S", "-", "-o", "/dev/null"]
    run = run_tool(argv, stdin=b"__attribute__((global)) void stitchopt_probe() {}\n", timeout=60)
    lines = run.stdout.decode().strip().splitlines()
    if run.returncode != 0 or not lines:
        raise ToolchainError(f"cannot read clang's -{DEVICE_LEVEL} device pipeline: {first_error(run.stderr_text)}")
    return lines[-1]


def kernel_names(ir_text: str) -> list[str]:
    """The kernels of a device module, annotated (`!nvvm.annotations`) or by calling convention, in the order of
    their names without file IDs (the same in every checkout)."""
    found = _ANNOTATED_KERNEL_RE.findall(ir_text) + _PTX_KERNEL_CC_RE.findall(ir_text)
    return sorted({name.strip('"') for name in found}, key=lambda name: (without_file_ids(name), name))


def openmp_runtime_linked(ir_text: str) -> bool | None:
    """Whether the OpenMP device runtime is linked into a module's target regions (it then defines their
    `__kmpc_target_init`), which changes what their measures include; None for a module without target regions."""
    if not _OPENMP_REGION_RE.search(ir_text):
        return None
    return bool(_OPENMP_RUNTIME_DEFINED_RE.search(ir_text))


def kernel_unit(toolchain: Toolchain, bitcode: bytes, kernel: str, text: str | None = None) -> bytes:
    """The module with `kernel` as its only kernel: the other kernels become internal and are deleted, with the
    internal code only they use; every other symbol keeps its linkage, so -O3 builds the kernel as in the whole
    file (checked in tests/integration/test_gpu.py::test_ptxas_report_and_sass_sizes). In OpenMP device code
    their `!nvvm.annotations` go too: left null, they crash openmp-opt (LLVM 19), which reads every kernel's
    there (CUDA's go through bitcode: text would lose the use-list order, which can change code). `text`: the
    module's disassembly, when the caller has it (one per module, not one per kernel). An OpenMP region may be
    named without its file IDs (`without_file_ids`)."""
    text = text if text is not None else _text(toolchain, bitcode)
    names = kernel_names(text)
    if kernel not in names:
        matching = [name for name in names if without_file_ids(name) == kernel]
        if len(matching) > 1:
            raise InputError(f"{kernel!r} names {len(matching)} kernels of this module: {', '.join(matching)}")
        if not matching:
            listed = ", ".join(without_file_ids(name) for name in names) or "none"
            raise InputError(f"no kernel {kernel!r} in this module (kernels: {listed})")
        kernel = matching[0]
    others = set(names) - {kernel}
    external = (name.strip('"') for name in _EXTERNAL_SYMBOL_RE.findall(text))
    flags = ["-internalize-public-api-list=" + ",".join(name for name in external if name not in others)]
    module = _without_annotations_of(text, others).encode() if _OPENMP_DEVICE_FLAG in text else bitcode
    return _run(opt_command(toolchain.tool("opt"), "internalize,globaldce", flags=flags), module, "opt")


def _without_annotations_of(text: str, kernels: set[str]) -> str:
    """Module text whose `!nvvm.annotations` list no longer names the entries of `kernels`."""
    nodes = {match.group(1) for match in _ANNOTATION_NODE_RE.finditer(text) if match.group(2).strip('"') in kernels}

    def kept(match: re.Match[str]) -> str:
        return "!nvvm.annotations = !{" + ", ".join(n for n in match.group(1).split(", ") if n not in nodes) + "}"

    return _ANNOTATIONS_RE.sub(kept, text)


def without_file_ids(text: str) -> str:
    """A kernel name or device IR without what depends on where the source file lies (OpenMP regions' file
    IDs): the same in every checkout."""
    return _OFFLOAD_FILE_ID_RE.sub("__omp_offloading_", text)


def ptx_entries(ptx: str) -> list[str]:
    """The kernels (`.entry`) a PTX file defines."""
    return _PTX_ENTRY_RE.findall(ptx)


def ptx_functions(ptx: str) -> dict[str, str]:
    """Each function a PTX file defines, by name: the text after its name, as llc wrote it (comments kept: its
    loop comments say where each block's loop is)."""
    headers = list(_PTX_DEFINITION_RE.finditer(ptx))
    ends = [match.start() for match in headers[1:]] + [len(ptx)]
    return {match.group(1): ptx[match.end() : end] for match, end in zip(headers, ends, strict=True)}


def ptx_reach(functions: dict[str, str], kernels: Iterable[str]) -> dict[str, set[str]]:
    """For each of `kernels`, itself and every function of `ptx_functions` it calls or takes the address of,
    directly or not: a kernel's code when functions stay out of line (an OpenMP region's outlined parallel body,
    handed to the runtime). Empty for a kernel the PTX does not define."""
    calls = {  # (llc writes `// -- Begin function NEXT` at the end of each function: comments are not calls)
        name: set(_PTX_NAME_RE.findall(_PTX_COMMENT_RE.sub("", body))) & functions.keys()
        for name, body in functions.items()
    }
    reach = {}
    for kernel in kernels:
        reached: set[str] = set()
        todo = [kernel]
        while todo:
            name = todo.pop()
            if name in calls and name not in reached:
                reached.add(name)
                todo.extend(calls[name])
        reach[kernel] = reached
    return reach


@dataclass(frozen=True)
class DeviceEmission:
    """Code generation of one optimized device module: llc's run, the kernels its PTX lost, and ptxas's run
    (None when llc failed or a kernel was lost)."""

    llc: ToolRun
    missing: list[str]
    ptxas: ToolRun | None

    @property
    def ptx(self) -> str:
        return self.llc.stdout.decode(errors="replace")


def emit_device(
    toolchain: Toolchain,
    optimized: bytes,
    kernels: list[str],
    options: CompileOptions,
    run: Callable[[list[str], bytes], ToolRun],
) -> DeviceEmission:
    """llc writes PTX, which must still define every kernel of the input (`kernels`); ptxas assembles it.
    `run` runs one tool on its stdin (with the caller's limits)."""
    llc = run(llc_command(toolchain.tool("llc"), flags=options.llc_flags(), filetype="asm"), optimized)
    if llc.returncode != 0 or llc.timed_out:
        return DeviceEmission(llc, [], None)
    entries = set(ptx_entries(llc.stdout.decode(errors="replace")))
    missing = [name for name in kernels if name not in entries]
    if missing:
        return DeviceEmission(llc, missing, None)
    return DeviceEmission(llc, [], run([*options.assembler, "-", "-o", "/dev/stdout"], llc.stdout))


def lost_kernels_message(missing: list[str]) -> str:
    return f"the list dropped or renamed kernel(s) {', '.join(missing)}"


def kernels_of(toolchain: Toolchain, bitcode: bytes) -> list[str]:
    """The kernels of device bitcode."""
    return kernel_names(_text(toolchain, bitcode))


def _text(toolchain: Toolchain, bitcode: bytes) -> str:
    return _run([toolchain.tool("llvm-dis"), "-", "-o", "-"], bitcode, "llvm-dis").decode()


@dataclass(frozen=True)
class KernelMeasure:
    """One kernel as built: SASS bytes (its executable section in the cubin and those of the functions it calls
    that stayed out of line) and what ptxas reported for the kernel itself."""

    sass_bytes: int
    resources: KernelResources
    ptx_instructions: int  # of its PTX and the functions it reaches, as the loops are
    loops: LoopShape  # what the time objective compares


@dataclass(frozen=True)
class DeviceBuild:
    """A device module built with one list: opt's output, its PTX, the cubin, and each kernel's measures."""

    optimized: bytes
    ptx: str
    cubin: bytes
    kernels: dict[str, KernelMeasure]


def optimize_device(toolchain: Toolchain, bitcode: bytes, pipeline: str, options: CompileOptions) -> bytes:
    """Device bitcode after `pipeline`, as clang's device compile runs opt; InputError when opt fails."""
    return _run(opt_command(toolchain.tool("opt"), pipeline, flags=options.opt_args()), bitcode, "opt")


def codegen_ir(toolchain: Toolchain, optimized: bytes, options: CompileOptions) -> str:
    """An optimized device module as NVPTX's instruction selection receives it, after llc's own IR passes (SROA,
    GVN, loop strength reduction, the load-store vectorizer, ...): what a GPU runs follows this IR more closely
    than opt's output, which llc still changes alike for many lists. ToolchainError where llc cannot stop there
    (a module it builds otherwise: this LLVM's NVPTX back end, not the input, is at fault)."""
    stop = f"-stop-before={_INSTRUCTION_SELECTION}"
    run = _tool([toolchain.tool("llc"), *options.llc_flags(), stop, "-o", "-"], optimized)
    embedded = _MIR_MODULE_RE.search(run.stdout.decode(errors="replace")) if run.returncode == 0 else None
    if embedded is None:
        raise ToolchainError(
            f"llc {stop} wrote no IR module: {first_error(run.stderr_text) or 'this LLVM names its passes otherwise'}"
        )
    return "\n".join(line.removeprefix("  ") for line in embedded.group(1).split("\n"))


def build_device(toolchain: Toolchain, bitcode: bytes, pipeline: str, options: CompileOptions) -> DeviceBuild:
    """`opt -passes=PIPELINE | llc | ptxas` on device bitcode, each kernel measured; InputError naming the step
    that failed, or the kernels the list lost."""
    kernels = kernels_of(toolchain, bitcode)
    optimized = optimize_device(toolchain, bitcode, pipeline, options)
    emission = emit_device(toolchain, optimized, kernels, options, _tool)
    for step, run in (("llc", emission.llc), ("ptxas", emission.ptxas)):
        if run is not None and run.timed_out:
            raise ToolchainError(f"{step} did not finish within {FRONTEND_TIMEOUT_S:g} s on this program")
    if emission.missing:
        raise InputError(f"{lost_kernels_message(emission.missing)}: it cannot build this program")
    if emission.ptxas is None:
        raise InputError(f"llc failed: {first_error(emission.llc.stderr_text)}")
    if emission.ptxas.returncode != 0:
        raise InputError(f"ptxas rejects the PTX: {first_error(emission.ptxas.stderr_text)}")
    resources = kernel_resources(emission.ptxas.stderr_text)
    sass = {s.name.removeprefix(".text."): s.size for s in read_sections(emission.ptxas.stdout) if s.executable}
    unmeasured = [name for name in kernels if name not in resources or name not in sass]
    if unmeasured:
        raise InputError(f"ptxas reported nothing for kernel(s) {', '.join(unmeasured)}: cannot measure them")
    functions = ptx_functions(emission.ptx)
    reach = ptx_reach(functions, kernels)
    code = {name: ptx_code(functions[f] for f in sorted(reach[name])) for name in kernels}
    measured = {
        name: KernelMeasure(
            sum(sass.get(f, 0) for f in reach[name]),
            resources[name],
            code[name].instructions,
            code[name].loops,
        )
        for name in kernels
    }
    return DeviceBuild(optimized, emission.ptx, emission.ptxas.stdout, measured)


def _tool(argv: list[str], stdin: bytes) -> ToolRun:
    return run_tool(argv, stdin=stdin, timeout=FRONTEND_TIMEOUT_S)


def _run(argv: list[str], stdin: bytes, step: str) -> bytes:
    run = _tool(argv, stdin)
    if run.returncode != 0:
        raise InputError(f"{step} failed: {first_error(run.stderr_text)}")
    return run.stdout
