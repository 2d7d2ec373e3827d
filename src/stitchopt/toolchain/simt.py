"""GPU device IR (CUDA kernels, OpenMP regions built SPMD) retargeted to the host, so that a kernel built with a
pass list runs on the CPU beside its -O3 build (validate/device_run.py compares their outputs): run evidence on
machines without a GPU.

The optimized `nvptx64` module is rewritten, not recompiled from source, so what runs is what the list made of
the IR: the triple and data layout become the host's (NVPTX's layout is the host's but for vectors of 16 and 32
bits, which CUDA code does not hold in memory), NVVM intrinsics become calls into the runtime
(`simt_runtime/simt.c`: thread geometry, barriers, warp shuffles and votes, libdevice's arithmetic), each with
a weak stand-in that stops a run reaching one the runtime lacks (so does every function the module only
declares, and inline PTX other than the few forms CUDA's headers write), `extern __shared__` arrays get the
most shared memory a block may have, and every local array and global is 16-byte aligned (as PTX's code
generator aligns what llc's vectorizer reads in vectors). The host's compiler then builds it at -O0, so nothing
but the list optimizes the kernel. NVPTX's code generator and ptxas do not run: a list whose IR is right but
which they compile wrongly is not caught here (that needs a GPU run, benchmarks/gpu_timing.py).

With `counted`, each block of the device functions first adds its own instruction count to the runtime's
counter: the run then says how many IR instructions its threads executed, a measure of the work a build does
on the launch's data (on the IR as instruction selection receives it, toolchain/device.py `codegen_ir`, it
ordered 88% of the pairs of held-out kernels' builds that an H200 timed apart as their times: docs/results.md).
"""

from __future__ import annotations

import re
import shutil
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError, ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

HOST_TRIPLE = "x86_64-unknown-linux-gnu"
HOST_DATALAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
DYNAMIC_SHARED_BYTES = 256 * 1024  # above any NVIDIA GPU's shared memory a block (227 KiB on sm_90)
ENTRY = "__simt_entry"
BUILD_TIMEOUT_S = 120.0
_INTRINSIC_RE = re.compile(r"@llvm\.nvvm\.([\w.]+)")
# A declaration of anything but LLVM's own intrinsics (the NVVM ones renamed by then): its return, name, parameters.
_DECLARE_RE = re.compile(r'^declare ([^@\n]*)@((?!llvm\.)"[^"]+"|(?!llvm\.)[-\w.$]+)\((.*)\)[^()\n]*$', re.MULTILINE)
_PLAIN_NAME_RE = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*")  # an LLVM name written without quotes
_FAST_MATH_FLAGS = frozenset({"nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "fast"})
_HOST_LIBRARY = frozenset({"malloc", "free", "memcpy", "memmove", "memset"})  # device code's, as the C library's
# Where llc's load-store vectorizer (in the IR the time objective counts) assumes a local array or a global
# 16-byte aligned that the IR still declares less aligned (PTX's code generator aligns them as the vector access
# needs): on the host an unaligned vector load faults, so every alloca and global is aligned so.
_ALIGNED_BYTES = 16
_ALIGNMENT_RE = re.compile(r"^((?:  %\S+ = alloca |@)[^\n]*, align )(\d+)", re.MULTILINE)
_EXTERN_SHARED_RE = re.compile(
    r"^(@[-\w.$]+|@\"[^\"]+\") = external [^\n]*addrspace\(3\) global \[0 x [^\]\n]+\][^\n]*$", re.MULTILINE
)
_TARGET_ATTRIBUTE_RE = re.compile(r' ?"target-(?:cpu|features)"="[^"]*"')
_CALLING_CONVENTION_RE = re.compile(r"\b(?:ptx_kernel|ptx_device) ")
_FTZ_FLAG_RE = re.compile(r'!"nvvm-reflect-ftz", i32 (\d+)')
_ARCH_RE = re.compile(r'"target-cpu"="sm_(\d+)[a-z]?"')
_RUNTIME = "simt.c"
_LANE_ID = "__simt_nvvm_read_ptx_sreg_laneid"  # the runtime's %laneid, as the intrinsic is renamed
_COUNT = "__simt_count"  # the runtime's counter of executed instructions
_DEFINE_RE = re.compile(r"^define [^\n]*\{$")
_BLOCK_LABEL_RE = re.compile(r'^(?:[-\w.$]+|"[^"]+"):')
# What a block's count leaves out: phis (no instruction on a GPU), debug records, a switch's case lines.
_NOT_COUNTED_RE = re.compile(r"^  (?:%\S+ = phi |call void @llvm\.dbg\.|#dbg_)|^   |^  \]")
OPENMP_SPMD = 2  # the mode bit of an OpenMP region whose threads all run it (openmp-opt's generic-SPMD has it too)
# ConfigurationEnvironmentTy: state machine, nested parallelism, mode; min/max threads; in LLVM 19, then min/max
# teams, the bytes of a team's reduction record and how many records the cross-team reduction buffer holds.
_KERNEL_ENVIRONMENT = r"^@{}_kernel_environment = "
_CONFIGURATION_RE = (
    r"[^\n]*?\{ i8 \d+, i8 \d+, i8 (\d+), i32 -?\d+, i32 (-?\d+),"
    r"(?: i32 -?\d+, i32 -?\d+, i32 (\d+), i32 (\d+) \})?"
)
_INLINE_ASM_RE = re.compile(
    r'call (?P<returned>[^@"\n]*?) asm (?:sideeffect |alignstack |inteldialect )*"(?P<text>[^"]*)", "[^"]*"'
    r"\((?P<arguments>.*)\)(?P<rest>(?: #\d+)?(?:, ![^\n]*)?)$",
    re.MULTILINE,
)
# Inline PTX that CUDA's headers and CUB put in kernels, run on the CPU: by its text, a body over its operands %p0,
# %p1... (approximations by the exact operation, as the runtime's intrinsics). Any other stops a run that reaches it.
_INLINE_PTX = {
    "rcp.approx.ftz.f32 $0,$1;": "  %r = fdiv float 1.0, %p0\n  ret float %r",
    "trap;": "  call void @__simt_trap()\n  unreachable",
    "{  cvt.rn.f16.f32 $0, $1;}\\0A": "  %h = fptrunc float %p0 to half\n  %r = bitcast half %h to i16\n  ret i16 %r",
    "{  cvt.f32.f16 $0, $1;}\\0A": "  %h = bitcast i16 %p0 to half\n  %r = fpext half %h to float\n  ret float %r",
    "mov.u32 $0, %laneid;": f"  %r = call i32 @{_LANE_ID}()\n  ret i32 %r",  # CUB's LaneId()
}


def host_module(device_ir: str, kernel: str, counted: bool = False) -> str:
    """The module text of `device_ir` (an optimized NVPTX module, as `llvm-dis` writes it) retargeted to the host,
    with an entry `__simt_entry(ptr slots)` that calls `kernel` with the value each slot points at, its executed
    instructions `counted` or not; InputError when the kernel is absent or takes a parameter the runtime cannot
    pass (a struct by value)."""
    parameters = _parameter_types(device_ir, kernel)
    configuration = openmp_configuration(device_ir, kernel)
    if configuration is not None and not configuration.spmd:
        raise InputError(
            f"{kernel} is an OpenMP region in generic mode (a main thread and the runtime's state machine), which "
            "the CPU run does not emulate"
        )
    ftz = _FTZ_FLAG_RE.search(device_ir)
    arch = _ARCH_RE.search(device_ir)
    originals = {
        f"__simt_nvvm_{name.replace('.', '_')}": f"llvm.nvvm.{name}" for name in _INTRINSIC_RE.findall(device_ir)
    }
    text = _INTRINSIC_RE.sub(lambda m: "@__simt_nvvm_" + m.group(1).replace(".", "_"), device_ir)
    if counted:
        text = _with_counters(text)
    text = re.sub(r"^target triple = .*$", f'target triple = "{HOST_TRIPLE}"', text, flags=re.MULTILINE)
    text = re.sub(r"^target datalayout = .*$", f'target datalayout = "{HOST_DATALAYOUT}"', text, flags=re.MULTILINE)
    text = _TARGET_ATTRIBUTE_RE.sub("", text)
    text = _CALLING_CONVENTION_RE.sub("", text)
    text = _EXTERN_SHARED_RE.sub(
        lambda m: (
            f"{m.group(1)} = internal addrspace(3) global [{DYNAMIC_SHARED_BYTES} x i8] zeroinitializer, align 16"
        ),
        text,
    )
    text = _ALIGNMENT_RE.sub(lambda m: m.group(1) + str(max(int(m.group(2)), _ALIGNED_BYTES)), text)
    stand_ins: list[str] = []
    text = _DECLARE_RE.sub(
        lambda m: (
            m.group(0)
            if m.group(2) in _HOST_LIBRARY
            else _stand_in(m, originals.get(m.group(2), m.group(2).strip('"')), stand_ins)
        ),
        text,
    )
    text = _INLINE_ASM_RE.sub(lambda m: _inline_ptx_call(m, stand_ins), text)
    return "\n".join(
        [
            text,
            f"@__simt_reflect_ftz = constant i32 {ftz.group(1) if ftz else 0}",
            f"@__simt_arch = constant i32 {arch.group(1) if arch else 0}",
            "declare void @__simt_unsupported(ptr)",
            "declare void @__simt_trap()",
            *([f"declare void @{_COUNT}(i64)"] if counted else []),
            *([] if f"@{_LANE_ID}(" in text else [f"declare i32 @{_LANE_ID}()"]),
            *stand_ins,
            _entry(kernel, parameters),
            "",
        ]
    )


def _with_counters(text: str) -> str:
    """`text` with a call at the top of each block of its defined functions (after the block's phis) that adds
    the block's instruction count to the runtime's counter."""
    counted: list[str] = []
    block: list[str] | None = None  # the lines of the block being read, inside a function
    for line in text.split("\n"):
        if block is None:
            counted.append(line)
            block = [] if _DEFINE_RE.match(line) else None
        elif line == "}":
            counted += [*_counted_block(block), line]
            block = None
        else:
            if _BLOCK_LABEL_RE.match(line):
                counted += _counted_block(block)
                block = []
            block.append(line)
    return "\n".join(counted)


def _counted_block(block: list[str]) -> list[str]:
    """One block's lines (its label first, where it has one) with the call of the counter after its phis; a
    block of no instruction (the blank lines between blocks) unchanged."""
    instructions = [i for i, line in enumerate(block) if line.startswith("  ") and not line.lstrip().startswith(";")]
    if not instructions:
        return block
    count = sum(1 for i in instructions if not _NOT_COUNTED_RE.match(block[i]))
    at = next(i for i in instructions if " = phi " not in block[i])
    return [*block[:at], f"  call void @{_COUNT}(i64 {count})", *block[at:]]


def llvm_name(name: str) -> str:
    """`name` as LLVM's text writes it after `@`: quoted where it is not a plain name."""
    return name if _PLAIN_NAME_RE.fullmatch(name) else f'"{name}"'


@dataclass(frozen=True)
class OpenmpConfiguration:
    """What the OpenMP runtime reads of a region's kernel environment to launch it."""

    mode: int  # OPENMP_SPMD set: every thread runs the region
    max_threads: int  # a team's threads; -1: unspecified
    reduction_bytes: int  # the cross-team reduction buffer the launch provides (0: no cross-team reduction)

    @property
    def spmd(self) -> bool:
        return bool(self.mode & OPENMP_SPMD)


def openmp_configuration(device_ir: str, kernel: str) -> OpenmpConfiguration | None:
    """An OpenMP region's launch configuration, from its kernel environment; None for a kernel that has none
    (CUDA's); InputError for one written in a form not read here (its mode unknown, it cannot be run)."""
    environment = _KERNEL_ENVIRONMENT.format(re.escape(kernel))
    found = re.search(environment + _CONFIGURATION_RE, device_ir, re.MULTILINE)
    if found is None:
        if re.search(environment, device_ir, re.MULTILINE):
            raise InputError(f"{kernel}'s OpenMP kernel environment is in a form the CPU run does not read")
        return None
    mode, threads, record, records = (int(group or 0) for group in found.groups())
    return OpenmpConfiguration(mode, threads, record * records)


def kernel_parameters(device_ir: str, kernel: str) -> list[str]:
    """`kernel`'s parameters as its definition writes them (type, attributes, name); InputError when the module
    defines no such function."""
    header = re.search(rf"^define [^@\n]*@{re.escape(llvm_name(kernel))}\((.*)\)[^\n]*\{{$", device_ir, re.MULTILINE)
    if header is None:
        raise InputError(f"the module defines no kernel {kernel!r}")
    return _top_level_split(header.group(1))


def _parameter_types(device_ir: str, kernel: str) -> list[str]:
    """The IR types of `kernel`'s parameters, read off its definition."""
    types = []
    for position, parameter in enumerate(kernel_parameters(device_ir, kernel)):
        if "byval" in parameter or "byref" in parameter:
            raise InputError(
                f"{kernel}: parameter {position} is a struct passed by value, which the CPU run cannot pass"
            )
        words = parameter.split()
        address_space = words[1] if len(words) > 1 and words[1].startswith("addrspace(") else ""
        types.append(f"{words[0]} {address_space}".strip())
    return types


def _top_level_split(parameters: str) -> list[str]:
    """`parameters` split at the commas outside parentheses (attributes such as `range(i32 0, 10)` hold some)."""
    parts, depth, start = [], 0, 0
    for index, character in enumerate(parameters):
        depth += {"(": 1, ")": -1, "<": 1, ">": -1, "{": 1, "}": -1}.get(character, 0)
        if character == "," and depth == 0:
            parts.append(parameters[start:index].strip())
            start = index + 1
    last = parameters[start:].strip()
    return [*parts, last] if last else parts


def _stand_in(declaration: re.Match[str], original: str, stand_ins: list[str]) -> str:
    """A weak definition of a declared function that stops the run naming it: the runtime's own definition,
    where it has one (the NVVM intrinsics it emulates, `__nvvm_reflect`), takes its place at link time; others
    (an unreached `vprintf`, `__assertfail`) let the kernel build."""
    returned, name, parameters = declaration.groups()
    types = [parameter.replace("immarg", "").strip() for parameter in _top_level_split(parameters)]
    variadic = "..." in types
    body = _stop(original, stand_ins)
    typed = [t for t in types if t != "..."]
    returned = " ".join(word for word in returned.split() if word != "extern_weak")
    return _function(f"weak {returned}", name, typed, body, variadic)


def _inline_ptx_call(call: re.Match[str], functions: list[str]) -> str:
    """A call of inline PTX as a call of a function of the module: its CPU form (`_INLINE_PTX`), else one that
    stops the run naming it."""
    returned, text = call.group("returned").strip(), call.group("text")
    arguments = _top_level_split(call.group("arguments"))
    name = f"__simt_asm_{len(functions)}"
    body = _INLINE_PTX.get(text) or _stop(f"inline PTX {text}", functions)
    returned_type = " ".join(word for word in returned.split() if word not in _FAST_MATH_FLAGS)
    types = [re.sub(r"\belementtype\([^)]*\)\s*", "", a.rsplit(" ", 1)[0]) for a in arguments]
    functions.append(_function(f"internal {returned_type}", name, types, body))
    return f"call {returned} @{name}({', '.join(arguments)}){call.group('rest')}"


def _stop(what: str, constants: list[str]) -> str:
    """A body that stops the run naming `what` (its text escaped as LLVM's strings are), its string constant
    added to `constants`."""
    string = f"@__simt_name.{len(constants)}"
    length = len(re.sub(r"\\[0-9A-Fa-f]{2}", "_", what)) + 1
    constants.append(f'{string} = private constant [{length} x i8] c"{what}\\00"')
    return f"  call void @__simt_unsupported(ptr {string})\n  unreachable"


def _function(linkage_and_type: str, name: str, parameter_types: list[str], body: str, variadic: bool = False) -> str:
    typed = [f"{type_} %p{i}" for i, type_ in enumerate(parameter_types)] + (["..."] if variadic else [])
    return f"define {linkage_and_type} @{name}({', '.join(typed)}) {{\n{body}\n}}"


def _entry(kernel: str, types: list[str]) -> str:
    lines = [f"define void @{ENTRY}(ptr %slots) {{"]
    for i, type_ in enumerate(types):
        lines += [
            f"  %slot{i} = getelementptr ptr, ptr %slots, i64 {i}",
            f"  %at{i} = load ptr, ptr %slot{i}",
            f"  %arg{i} = load {type_}, ptr %at{i}",
        ]
    arguments = ", ".join(f"{type_} %arg{i}" for i, type_ in enumerate(types))
    return "\n".join([*lines, f"  call void @{llvm_name(kernel)}({arguments})", "  ret void", "}"])


class SimtBuilder:
    """Builds CPU programs of retargeted kernels in `directory`, the runtime compiled once; safe to share
    between threads (each program its own name)."""

    def __init__(self, toolchain: Toolchain, directory: Path) -> None:
        self.toolchain = toolchain
        self.directory = directory
        self._lock = threading.Lock()
        self._programs = 0
        self._runtime: Path | None = None

    def runtime_object(self) -> Path:
        """The runtime's object file, compiled on first use."""
        with self._lock:
            if self._runtime is None:
                source, built = self.directory / _RUNTIME, self.directory / "simt-runtime.o"
                with resources.as_file(resources.files("stitchopt.toolchain") / "simt_runtime" / _RUNTIME) as packaged:
                    shutil.copyfile(packaged, source)
                clang = self.toolchain.tool("clang")
                self._compile([clang, "-O2", "-c", str(source), "-o", str(built)], "the runtime")
                self._runtime = built
            return self._runtime

    def program(self, host_ir: str) -> Path:
        """An executable of one retargeted module (`host_module`); ToolchainError when the host compiler rejects it
        (a retargeting this runtime cannot handle, which says nothing about the list)."""
        runtime = self.runtime_object()
        with self._lock:
            self._programs += 1
            name = f"kernel{self._programs}"
        source, executable = self.directory / f"{name}.ll", self.directory / name
        source.write_text(host_ir)
        clang = self.toolchain.tool("clang")
        try:
            self._compile(
                [clang, "-O0", "-Wno-override-module", str(source), str(runtime), "-lm", "-o", str(executable)], name
            )
        finally:
            source.unlink()
        return executable

    @staticmethod
    def _compile(argv: list[str], what: str) -> None:
        run = run_tool(argv, timeout=BUILD_TIMEOUT_S)
        if run.returncode != 0:
            raise ToolchainError(f"cannot build {what} for the CPU run: {first_error(run.stderr_text)}")
