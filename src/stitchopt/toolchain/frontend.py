"""Turn C/C++ sources or IR files into unoptimized IR, the input of every evaluation.

IR comes from `clang -Oz -Xclang -disable-llvm-passes`: the front end then emits exactly what `clang -Oz`
would hand to its optimizer (`minsize`/`optsize` attributes, no `optnone`, no forced frame pointers), so a
pass list is compared with -Oz on equal terms. `-O0` IR keeps `noinline` everywhere and made -Oz objects
about 10% bigger on real code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from stitchopt.core import CompileOptions, IRModule
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import ToolRun, run_tool

C_SUFFIXES = frozenset({".c"})
CXX_SUFFIXES = frozenset({".cc", ".cpp", ".cxx", ".c++", ".C"})
IR_SUFFIXES = frozenset({".ll", ".bc"})
FRONTEND_LEVEL = "Oz"
FRONTEND_TIMEOUT_S = 300.0
_LOCATION_RE = re.compile(r"<stdin>:(\d+):(\d+): error: (.*)")
_TRIPLE_RE = re.compile(r'^target triple = "([^"]*)"', re.MULTILINE)


def supported_suffixes() -> list[str]:
    return sorted(C_SUFFIXES | CXX_SUFFIXES | IR_SUFFIXES)


def _check_readable(path: Path) -> None:
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    if path.suffix not in C_SUFFIXES | CXX_SUFFIXES | IR_SUFFIXES:
        raise InputError(f"{path}: unsupported file type {path.suffix!r}; use one of {', '.join(supported_suffixes())}")


def compile_source(
    toolchain: Toolchain,
    source: Path,
    *,
    text: bool = False,
    extra_args: Sequence[str] = (),
    level: str = FRONTEND_LEVEL,
) -> bytes:
    """Unoptimized IR of a C or C++ file as clang's `-<level>` front end emits it: bitcode, or text."""
    _check_readable(source)
    if source.suffix in IR_SUFFIXES:
        raise InputError(f"{source}: already IR; pass it to `stitchopt eval` directly")
    argv = [
        toolchain.tool("clang"),
        f"-{level}",
        "-Xclang",
        "-disable-llvm-passes",
        *extra_args,
        "-emit-llvm",
        "-S" if text else "-c",
        str(source),
        "-o",
        "-",
    ]
    run = run_tool(argv, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0 or run.timed_out:
        reason = "timed out" if run.timed_out else first_error(run.stderr_text)
        raise InputError(f"cannot compile {source} to IR: {reason}")
    return run.stdout


def disassemble(toolchain: Toolchain, bitcode: bytes, name: str) -> str:
    run = run_tool([toolchain.tool("llvm-dis"), "-", "-o", "-"], stdin=bitcode, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        raise InputError(f"{name}: malformed bitcode: {first_error(run.stderr_text)}")
    return run.stdout.decode(errors="replace")


def _assemble(toolchain: Toolchain, text: bytes, name: str) -> bytes:
    run = run_tool([toolchain.tool("llvm-as"), "-", "-o", "-"], stdin=text, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        error = first_error(run.stderr_text)
        where = _LOCATION_RE.search(error)
        if where is None:
            raise InputError(f"{name}: malformed IR: {error}")
        line, column, message = where.groups()
        raise InputError(f"{name}: malformed IR at line {line}, column {column}: {message}")
    return run.stdout


def is_source(path: Path) -> bool:
    return path.suffix in C_SUFFIXES | CXX_SUFFIXES


def load_module(
    toolchain: Toolchain, path: Path, extra_args: Sequence[str] = (), level: str = FRONTEND_LEVEL
) -> IRModule:
    """Read a .c/.cc/.cpp/.ll/.bc file as an IRModule, validating IR on the way in.

    `level` picks the front end for sources only: IR files are taken as they are.
    """
    _check_readable(path)
    if path.suffix == ".ll":
        bitcode = _assemble(toolchain, path.read_bytes(), str(path))
    elif path.suffix == ".bc":
        bitcode = path.read_bytes()
    else:
        bitcode = compile_source(toolchain, path, extra_args=extra_args, level=level)
    return module_from_bitcode(toolchain, bitcode, path.stem)


def module_from_bitcode(toolchain: Toolchain, bitcode: bytes, name: str) -> IRModule:
    return module_from_text(toolchain, bitcode, disassemble(toolchain, bitcode, name), name)


def module_from_text(toolchain: Toolchain, bitcode: bytes, text: str, name: str) -> IRModule:
    """The module of `bitcode` whose disassembly `text` the caller already has (its triple is read there)."""
    match = _TRIPLE_RE.search(text)
    return IRModule(name=name, bitcode=bitcode, triple=match.group(1) if match else toolchain.default_triple)


def write_object(toolchain: Toolchain, module: IRModule, pipeline: str, options: CompileOptions, output: Path) -> None:
    """`opt -passes=P | llc -filetype=obj` to `output`, exactly as the evaluator measures it."""
    opt = run_tool(
        [toolchain.tool("opt"), *options.opt_args(), f"-passes={pipeline}", "-", "-o", "-"],
        stdin=module.bitcode,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if opt.returncode != 0 or opt.timed_out:
        raise InputError(f"{module.name}: opt failed: {_failure(opt)}")
    llc = run_tool(
        [toolchain.tool("llc"), *options.llc_flags(), "-filetype=obj", "-", "-o", str(output)],
        stdin=opt.stdout,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if llc.returncode != 0 or llc.timed_out:
        raise InputError(f"{module.name}: llc failed: {_failure(llc)}")


def _failure(run: ToolRun) -> str:
    return "timed out" if run.timed_out else first_error(run.stderr_text)
