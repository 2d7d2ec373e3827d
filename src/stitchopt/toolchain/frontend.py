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

from stitchopt.core import CompileOptions, IRModule, Language
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import FRONTEND_LEVEL, frontend_command, llc_command, opt_command
from stitchopt.toolchain.process import ToolRun, run_tool

C_SUFFIXES = frozenset({".c"})
CXX_SUFFIXES = frozenset({".cc", ".cpp", ".cxx", ".c++", ".C"})
IR_SUFFIXES = frozenset({".ll", ".bc"})
FRONTEND_TIMEOUT_S = 300.0
_LOCATION_RE = re.compile(r"<stdin>:(\d+):(\d+): error: (.*)")
_TRIPLE_RE = re.compile(r'^target triple = "([^"]*)"', re.MULTILINE)
_SOURCE_FILENAME_RE = re.compile(r'^source_filename = "((?:[^"\\]|\\.)*)"', re.MULTILINE)
_PRODUCER_RE = re.compile(r"Producer: 'LLVM(\d+)")  # what LLVM's bitcode reader adds to an error
_CLANG_VERSION_RE = re.compile(r"clang version (\d+)\.")  # in the `!llvm.ident` of IR written by clang
_BARE_WORD_RE = re.compile(r"[a-z_][a-z0-9_]*\b")
_DATALAYOUT_RE = re.compile(r"^target datalayout = ", re.MULTILINE)
# What clang's front end writes only for C++ (functions `mustprogress` from C++11 on; its type-based alias
# analysis root) and only for C (that root's name for C). The pass plugin reads the same (module_features.cpp).
CXX_TBAA_ROOT = '!"Simple C++ TBAA"'
C_TBAA_ROOT = '!"Simple C/C++ TBAA"'


LANGUAGE_SUFFIXES: dict[Language, frozenset[str]] = {"c": C_SUFFIXES, "c++": CXX_SUFFIXES}


def source_language(path: str) -> Language | None:
    """The language a source file is written in by its suffix, None when the suffix says neither (IR, stdin,
    none). The suffix as LLVM's `sys::path::extension` reads it, which clang and the pass plugin use: from the
    last `.` of the name after the last `/` (`.c` alone is C; `.` and `..` have none)."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    suffix = "" if dot < 0 or name in (".", "..") else name[dot:]
    return next((language for language, suffixes in LANGUAGE_SUFFIXES.items() if suffix in suffixes), None)


def ir_language(text: str) -> Language | None:
    """The language clang compiled a module from, as its text shows it: C++ where an attribute group has
    `mustprogress` or the alias root is C++'s, C where the root is C's; None where neither shows (C++03 or C
    built without type-based alias information, IR not from clang). Where it shows, it beats the source file's
    suffix: `clang -x c++ foo.c` and `clang++ foo.c` compile C++."""
    if CXX_TBAA_ROOT in text or ("mustprogress" in text and any(map(_has_mustprogress, text.splitlines()))):
        return "c++"
    return "c" if C_TBAA_ROOT in text else None


def _has_mustprogress(line: str) -> bool:
    """An attribute group with `mustprogress` (not in a string attribute: `"mustprogress"` is quoted)."""
    return line.startswith("attributes #") and (" mustprogress " in line or " mustprogress}" in line)


def module_language(module: IRModule) -> Language | None:
    """The language a module was compiled from: what its compile named (`clang -x c++ foo.c`) or its IR shows,
    else what its source file's suffix says."""
    return module.language or source_language(module.source_filename)


def supported_suffixes() -> list[str]:
    return sorted(C_SUFFIXES | CXX_SUFFIXES | IR_SUFFIXES)


def _check_readable(path: Path) -> None:
    if path.is_dir():
        programs = sum(1 for p in path.iterdir() if p.suffix in C_SUFFIXES | CXX_SUFFIXES | IR_SUFFIXES)
        held = f"{programs} C/C++/IR files" if programs else "no C/C++/.ll/.bc files"
        raise InputError(f"{path}: a directory with {held}: name one program file")
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
    argv = frontend_command(
        [toolchain.tool("clang")], level, flags=extra_args, text=text, args=[str(source), "-o", "-"]
    )
    run = run_tool(argv, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0 or run.timed_out:
        reason = "timed out" if run.timed_out else first_error(run.stderr_text)
        raise InputError(f"cannot compile {source} to IR: {reason}")
    return run.stdout


def disassemble(toolchain: Toolchain, bitcode: bytes, name: str) -> str:
    run = run_tool([toolchain.tool("llvm-dis"), "-", "-o", "-"], stdin=bitcode, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        error = first_error(run.stderr_text)
        hint = _newer_llvm_hint(toolchain, _newer(toolchain, _PRODUCER_RE.findall(error)))
        raise InputError(f"{name}: malformed bitcode: {error}{hint}")
    return run.stdout.decode(errors="replace")


def assemble(toolchain: Toolchain, text: bytes, name: str) -> bytes:
    """Textual IR as bitcode; InputError naming where it is malformed."""
    run = run_tool([toolchain.tool("llvm-as"), "-", "-o", "-"], stdin=text, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        error = first_error(run.stderr_text)
        source = text.decode(errors="replace")
        newer = _newer(toolchain, _CLANG_VERSION_RE.findall(source))
        where = _LOCATION_RE.search(error)
        if where is None:
            raise InputError(f"{name}: malformed IR: {error}{_newer_llvm_hint(toolchain, newer)}")
        line, column, message = where.groups()
        newer = newer or _stopped_at_a_keyword(source, int(line), int(column))
        hint = _newer_llvm_hint(toolchain, newer)
        raise InputError(f"{name}: malformed IR at line {line}, column {column}: {message}{hint}")
    return run.stdout


def _stopped_at_a_keyword(source: str, line: int, column: int) -> bool:
    """Whether the parser stopped at a bare word inside a line, as LLVM 19 does at LLVM 20's `icmp samesign`:
    likely a keyword of a newer LLVM. A word that starts its line is not (`ret` after a line cut short, or C
    code in a .ll file)."""
    lines = source.splitlines()
    if not 0 < line <= len(lines):
        return False
    text = lines[line - 1]
    return bool(text[: column - 1].strip()) and _BARE_WORD_RE.match(text, column - 1) is not None


def _newer(toolchain: Toolchain, majors: list[str]) -> bool:
    """Whether one of these major versions (of the LLVM or clang that wrote the IR) is above the toolchain's."""
    return any(int(major) > toolchain.major for major in majors)


def _newer_llvm_hint(toolchain: Toolchain, newer: bool) -> str:
    """What to do about IR from a newer LLVM (nothing when it is not): the parse error alone reads like a broken
    file."""
    if not newer:
        return ""
    return (
        f" (this IR may come from a newer LLVM than {toolchain.version_string}: produce it with the same LLVM, or "
        "point --llvm at the bin directory of the LLVM that made it)"
    )


def is_source(path: Path) -> bool:
    return path.suffix in C_SUFFIXES | CXX_SUFFIXES


def load_module(
    toolchain: Toolchain, path: Path, extra_args: Sequence[str] = (), level: str = FRONTEND_LEVEL
) -> IRModule:
    """Read a .c/.cc/.cpp/.ll/.bc file as an IRModule, validating IR on the way in.

    `level` picks the front end for sources only: IR files are taken as they are, but for the target (see
    `_with_target`).
    """
    _check_readable(path)
    if path.suffix in IR_SUFFIXES:
        return _load_ir(toolchain, path)
    bitcode = compile_source(toolchain, path, extra_args=extra_args, level=level)
    return module_from_bitcode(toolchain, bitcode, path.stem)


def _load_ir(toolchain: Toolchain, path: Path) -> IRModule:
    """A .ll or .bc file as a module for a definite target: every backend and cache key then sees the same IR."""
    bitcode = assemble(toolchain, path.read_bytes(), str(path)) if path.suffix == ".ll" else path.read_bytes()
    text = disassemble(toolchain, bitcode, str(path))
    has_triple = _TRIPLE_RE.search(text) is not None
    if not has_triple or _DATALAYOUT_RE.search(text) is None:
        bitcode = _with_target(toolchain, bitcode, has_triple)
        text = disassemble(toolchain, bitcode, str(path))
    return module_from_text(toolchain, bitcode, text, path.stem)


def _with_target(toolchain: Toolchain, bitcode: bytes, has_triple: bool) -> bytes:
    """IR given the toolchain's default triple if it has none, and its triple's data layout, as `clang -c
    file.ll` gives them: `opt` infers a missing layout from the triple but the native evaluator does not, so
    without this the two backends measured different objects for one file. IR for a triple LLVM has no target
    for is kept as it is: no backend builds it, and evaluating it says so."""
    triple = [] if has_triple else [f"-mtriple={toolchain.default_triple}"]
    run = run_tool([toolchain.tool("opt"), *triple, "-", "-o", "-"], stdin=bitcode, timeout=FRONTEND_TIMEOUT_S)
    return run.stdout if run.returncode == 0 and not run.timed_out else bitcode


def module_from_bitcode(toolchain: Toolchain, bitcode: bytes, name: str) -> IRModule:
    return module_from_text(toolchain, bitcode, disassemble(toolchain, bitcode, name), name)


def module_from_text(
    toolchain: Toolchain, bitcode: bytes, text: str, name: str, language: Language | None = None
) -> IRModule:
    """The module of `bitcode` whose disassembly `text` the caller already has (its triple, source file name
    and language are read there), compiled as `language` when its compile named one."""
    match = _TRIPLE_RE.search(text)
    source = _SOURCE_FILENAME_RE.search(text)
    return IRModule(
        name=name,
        bitcode=bitcode,
        triple=match.group(1) if match else toolchain.default_triple,
        source_filename=source.group(1) if source else "",
        language=language or ir_language(text),
    )


def write_object(toolchain: Toolchain, module: IRModule, pipeline: str, options: CompileOptions, output: Path) -> None:
    """`opt -passes=P | llc -filetype=obj` to `output`, exactly as the evaluator measures it."""
    opt = run_tool(
        opt_command(toolchain.tool("opt"), pipeline, flags=options.opt_args()),
        stdin=module.bitcode,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if opt.returncode != 0 or opt.timed_out:
        raise InputError(f"{module.name}: opt failed: {_failure(opt)}")
    llc = run_tool(
        llc_command(toolchain.tool("llc"), flags=options.llc_flags(), args=["-", "-o", str(output)]),
        stdin=opt.stdout,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if llc.returncode != 0 or llc.timed_out:
        raise InputError(f"{module.name}: llc failed: {_failure(llc)}")


def _failure(run: ToolRun) -> str:
    return "timed out" if run.timed_out else first_error(run.stderr_text)
