"""`stitchopt-cc` / `stitchopt-c++`: a compiler wrapper that builds as asked and records each TU's unoptimized IR.

Real projects become datasets by building them once with `CC=stitchopt-cc` (or as a CMake compiler launcher).
The real compile always runs first and alone decides the exit status; recording is a best-effort side job
that writes `<record dir>/ir/<sha256>.bc` plus one line in `records.jsonl`, or a line in `errors.jsonl`.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Literal

from stitchopt.errors import ToolchainError
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.process import run_tool

RECORD_DIR_ENV = "STITCHOPT_RECORD_DIR"
REAL_CC_ENV = "STITCHOPT_REAL_CC"
REAL_CXX_ENV = "STITCHOPT_REAL_CXX"
# The exact clang that records IR, set by `datasets build` after it found the toolchain once: a wrapper started
# for every compile of a large build then skips discovery (about 0.15 s of version checks per compile).
RECORD_CLANG_ENV = "STITCHOPT_RECORD_CLANG"
# A flag-tuning model directory (or `default`): rebuild each compiled object with the model's choice.
MODEL_ENV = "STITCHOPT_MODEL"
IR_TIMEOUT_S = 300.0
# `-Oz` rather than `-O0`: `-O0` marks every function `optnone`, which would make the IR useless to `opt`.
IR_FLAGS_TAIL = ("-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c", "-w")
CXX_DRIVER = "--driver-mode=g++"

Language = Literal["c", "c++"]
_EXTENSIONS: dict[str, Language] = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".c++": "c++", ".C": "c++"}
_COMPILER_RE = re.compile(r"(?:[\w.]+-)*(?:cc|gcc|clang|c\+\+|g\+\+|clang\+\+)(?:-\d+(?:\.\d+)*)?")
# Options whose value is the next argument: kept (they shape the IR) or dropped (outputs, linking).
_KEEP_WITH_VALUE = frozenset([
    "-D", "-U", "-I", "-include", "-imacros", "-isystem", "-iquote", "-idirafter", "-iprefix", "-iwithprefix",
    "-iwithprefixbefore", "-isysroot", "--sysroot", "-target", "-arch", "-Xclang", "-Xpreprocessor", "-mllvm",
    "-gcc-toolchain",
])  # fmt: skip
_DROP_WITH_VALUE = frozenset([
    "-o", "-MF", "-MT", "-MQ", "-MJ", "-Xlinker", "-Xassembler", "-L", "-l", "-u", "-T", "-z",
    "--serialize-diagnostics",
])  # fmt: skip
_DROP = frozenset([
    "-c", "-S", "-w", "-MP", "-MG", "-save-temps", "-shared", "-pie", "-no-pie", "-static", "-rdynamic", "-s",
    "-pipe", "-static-libgcc", "-static-libstdc++", "-nostdlib", "-nostartfiles", "-nodefaultlibs", "-pedantic",
    "-pedantic-errors",
])  # fmt: skip
# Joined forms of dropped options, debug info, diagnostics, LTO and linker/assembler pass-through.
_DROP_PREFIXES = (
    "-MF", "-MT", "-MQ", "-MJ", "-o", "-l", "-L", "-g", "-W", "-flto", "-save-temps", "--serialize-diagnostics",
)  # fmt: skip
_MAX_RESPONSE_DEPTH = 16
# Build-system probes compile throwaway programs through the same $CC; they are not part of the project.
_PROBE_NAMES = frozenset({
    "conftest.c", "conftest.cc", "conftest.cpp", "CMakeCCompilerId.c", "CMakeCXXCompilerId.cpp",
    "CMakeCCompilerABI.c", "CMakeCXXCompilerABI.cpp",
})  # fmt: skip
_PROBE_DIRS = ("/CMakeFiles/CMakeScratch/", "/CMakeFiles/CMakeTmp/", "/share/cmake", "/meson-private/")


class Mode(Enum):
    """What one compiler command produces, which decides whether it has anything to record."""

    COMPILE = "compile"  # objects, assembly or a program from at least one C/C++ source
    PREPROCESS = "preprocess"  # no code at all: -E, -M/-MM, -fsyntax-only, -###
    LINK = "link"  # no C/C++ source: linking, assembling, or a query such as --version


@dataclass(frozen=True)
class Source:
    path: str  # as written in the command, relative to its cwd
    language: Language


@dataclass(frozen=True)
class ParsedCommand:
    mode: Mode
    sources: tuple[Source, ...]
    ir_flags: tuple[str, ...]  # the options that shape a TU's IR; no inputs, outputs, -x, -O, -g or warnings
    output: str | None = None  # the `-o` argument
    objects_only: bool = False  # `-c`: objects, no linking


def looks_like_compiler(name: str) -> bool:
    """True for `cc`, `gcc-12`, `clang++-19`, `x86_64-linux-gnu-gcc`; never for our own wrappers."""
    base = os.path.basename(name)
    return not base.startswith("stitchopt-") and _COMPILER_RE.fullmatch(base) is not None


def is_cxx_driver(name: str) -> bool:
    """`g++`, `clang++` and `c++` compile `.c` files as C++, so the language of a source depends on the driver."""
    return "++" in os.path.basename(name)


def split_launcher(
    args: Sequence[str], which: Callable[[str], str | None] = shutil.which
) -> tuple[str | None, list[str]]:
    """(compiler, rest) when used as `CMAKE_<LANG>_COMPILER_LAUNCHER`, where argv[1] is the real compiler."""
    if args and not args[0].startswith(("-", "@")) and looks_like_compiler(args[0]) and which(args[0]):
        return args[0], list(args[1:])
    return None, list(args)


def expand_response_files(args: Sequence[str], cwd: str | None = None, _depth: int = 0) -> list[str]:
    """Replace each readable `@file` by its shell-quoted arguments, as GCC and clang do; others stay literal."""
    expanded: list[str] = []
    for arg in args:
        path = Path(cwd or ".", arg[1:]) if arg.startswith("@") and len(arg) > 1 else None
        if path is None or _depth >= _MAX_RESPONSE_DEPTH or not path.is_file():
            expanded.append(arg)
            continue
        inner = shlex.split(path.read_text(errors="replace"))
        expanded.extend(expand_response_files(inner, cwd, _depth + 1))
    return expanded


def parse_command(args: Sequence[str], *, cxx_driver: bool = False) -> ParsedCommand:
    """Classify an expanded compiler command and keep only what determines each source's IR."""
    flags: list[str] = []
    sources: list[Source] = []
    forced: str | None = None  # the language of a `-x` in force; "none" or None means by extension
    no_code = deps_as_side_effect = depfile_only = objects_only = False
    last_opt: str | None = None
    output: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        value = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if arg.startswith("-x"):  # `-x c++` or `-xc++`
            forced = value if arg == "-x" else arg[2:]
            i += arg == "-x"
        elif arg in _KEEP_WITH_VALUE and value is not None:
            flags += [arg, value]
            i += 1
        elif arg in _DROP_WITH_VALUE:
            output = value if arg == "-o" else output
            i += 1
        elif arg.startswith("-o") and len(arg) > 2:
            output = arg[2:]
        elif arg in ("-E", "-fsyntax-only", "-###"):
            no_code = True
        elif arg in ("-M", "-MM"):
            depfile_only = True
        elif arg in ("-MD", "-MMD"):
            deps_as_side_effect = True
        elif arg.startswith("-O"):
            last_opt = arg
        elif arg in _DROP or _is_dropped_prefix(arg):
            objects_only = objects_only or arg == "-c"
        elif arg.startswith("-") and arg != "-":
            flags.append(arg)
        else:
            language = _language_of(arg, forced, cxx_driver)
            if language is not None:
                sources.append(Source(arg, language))
    if last_opt == "-Ofast":  # -Ofast implies -ffast-math, which changes the IR itself
        flags.append("-ffast-math")
    if no_code or (depfile_only and not deps_as_side_effect):
        mode = Mode.PREPROCESS
    else:
        mode = Mode.COMPILE if sources else Mode.LINK
    return ParsedCommand(mode, tuple(sources), tuple(flags), output, objects_only)


def _is_dropped_prefix(arg: str) -> bool:
    """Prefix matches, less the two kept options that share a dropped prefix."""
    if arg.startswith(("-Wp,", "-gcc-toolchain")):  # -Wp, passes -D/-U to the preprocessor
        return False
    return arg.startswith(_DROP_PREFIXES)


def _language_of(arg: str, forced: str | None, cxx_driver: bool) -> Language | None:
    """The language a driver compiles this input as, or None for anything that is not a C/C++ TU."""
    if arg == "-":  # stdin cannot be read a second time
        return None
    if forced not in (None, "none"):
        return "c" if forced == "c" else "c++" if forced == "c++" else None
    language = _EXTENSIONS.get(os.path.splitext(arg)[1])
    return "c++" if language == "c" and cxx_driver else language


def is_probe_source(path: str) -> bool:
    """Autoconf, CMake, meson and setup.py configure checks compile throwaway programs with the same compiler
    (`conftest.c`, `conftest-0.c`, CMake's compiler-id and ABI files, meson's `sanity_check_for_c.c` and the
    `testfile.c` of its checks): skip those."""
    name = os.path.basename(path)
    return (
        name in _PROBE_NAMES
        or name.startswith(("conftest", "sanity_check_for_"))
        or any(d in path for d in _PROBE_DIRS)
    )


def ir_command(clang: str, flags: Sequence[str], source: Source, output: str) -> list[str]:
    """The clang command for one TU's unoptimized IR; `-x` right before the source pins its language."""
    driver = [CXX_DRIVER] if source.language == "c++" else []
    return [clang, *driver, *flags, *IR_FLAGS_TAIL, "-o", output, "-x", source.language, source.path]


def main_cc() -> int:
    return run_wrapper(sys.argv[1:], cxx=False)


def main_cxx() -> int:
    return run_wrapper(sys.argv[1:], cxx=True)


def run_wrapper(args: Sequence[str], *, cxx: bool) -> int:
    """Compile exactly as asked, then record when asked to and the compile succeeded; return its status."""
    launcher, rest = split_launcher(args)
    try:
        compiler = [launcher] if launcher else _default_compiler(cxx)
    except (ToolchainError, ValueError) as error:  # no compiler at all: the build cannot go on
        print(f"stitchopt-{'c++' if cxx else 'cc'}: no real compiler: {error}", file=sys.stderr)
        return 127
    status = _passthrough([*compiler, *rest])
    record_dir = os.environ.get(RECORD_DIR_ENV)
    cxx_driver = is_cxx_driver(launcher) if launcher else cxx
    if status == 0 and record_dir:
        _record_all(Path(record_dir), compiler, rest, cxx_driver)
    if status == 0 and os.environ.get(MODEL_ENV):
        _apply_model(os.environ[MODEL_ENV], rest, cxx_driver)
    return status


def _default_compiler(cxx: bool) -> list[str]:
    configured = os.environ.get(REAL_CXX_ENV if cxx else REAL_CC_ENV)
    if configured:
        return shlex.split(configured)
    return [_clang(), CXX_DRIVER] if cxx else [_clang()]


@cache
def _clang() -> str:
    pinned = os.environ.get(RECORD_CLANG_ENV)
    if pinned and os.access(pinned, os.X_OK):
        return pinned
    return find_toolchain().tool("clang")


def _passthrough(argv: list[str]) -> int:
    """The real compile, with our stdio; a signal death becomes the shell's 128+N status."""
    try:
        returncode = subprocess.run(argv).returncode
    except OSError as error:
        print(f"stitchopt: cannot run {argv[0]}: {error}", file=sys.stderr)
        return 127
    return 128 - returncode if returncode < 0 else returncode


def _record_all(record_dir: Path, compiler: list[str], original: list[str], cxx_driver: bool) -> None:
    """Record every TU of a successful compile; a failure is logged, never raised, never fatal."""
    cwd = os.getcwd()
    try:
        args = expand_response_files(original)
        parsed = parse_command(args, cxx_driver=cxx_driver)
    except Exception as error:  # e.g. an unreadable response file or unbalanced quotes in it
        _log_error(record_dir, None, cwd, None, error)
        return
    if parsed.mode is not Mode.COMPILE:
        return
    for source in parsed.sources:
        if is_probe_source(os.path.abspath(source.path)):
            continue
        ir_argv: list[str] | None = None
        try:
            (record_dir / "ir").mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=record_dir, prefix="tmp-") as scratch:
                output = os.path.join(scratch, "tu.bc")
                ir_argv = ir_command(_clang(), parsed.ir_flags, source, output)
                digest = _store_ir(ir_argv, output, cwd, record_dir / "ir")
            stored = str(record_dir / "ir" / f"{digest}.bc")
            record: dict[str, object] = {
                "sha256": digest,
                "source": os.path.abspath(source.path),
                "cwd": cwd,
                "argv": args,
                "ir_argv": ir_command(_clang(), parsed.ir_flags, source, stored),
                "language": source.language,
                "compiler": compiler,
            }
            _append_line(record_dir / "records.jsonl", record)
        except Exception as error:
            _log_error(record_dir, source.path, cwd, ir_argv, error)


def _apply_model(model: str, original: list[str], cxx_driver: bool) -> None:
    """Rebuild the object of a one-source `-c` compile with the model's choice; on any failure keep the real
    compiler's object and say why in one line."""
    try:
        parsed = parse_command(expand_response_files(original), cxx_driver=cxx_driver)
        if parsed.mode is not Mode.COMPILE or not parsed.objects_only or len(parsed.sources) != 1:
            return
        source = parsed.sources[0]
        output = Path(parsed.output or Path(source.path).with_suffix(".o").name)
        # Imported here: numpy and the model cost ~0.1 s, which every other wrapper call should not pay.
        from stitchopt.models.build_mode import rebuild_object
        from stitchopt.models.flag_model import DEFAULT_MODEL_DIR

        with tempfile.TemporaryDirectory(prefix="stitchopt-ir-") as scratch:
            ir = os.path.join(scratch, "tu.bc")
            run = run_tool(ir_command(_clang(), parsed.ir_flags, source, ir), timeout=IR_TIMEOUT_S)
            if run.returncode != 0:
                raise RuntimeError(f"IR compile exited {run.returncode}")
            directory = DEFAULT_MODEL_DIR if model == "default" else Path(model)
            rebuild_object(find_toolchain(), directory, Path(ir).read_bytes(), output)
    except Exception as error:  # the real object stays: the build must not depend on the model
        reason = " ".join(str(error).split()) or type(error).__name__
        print(f"stitchopt: kept the compiler's object ({reason})", file=sys.stderr)


def _store_ir(ir_argv: list[str], output: str, cwd: str, ir_dir: Path) -> str:
    """Run the IR compile and move its bitcode to `<ir_dir>/<sha256>.bc`; return the digest."""
    run = run_tool(ir_argv, timeout=IR_TIMEOUT_S, cwd=cwd)
    if run.timed_out:
        raise RuntimeError(f"IR compile timed out after {IR_TIMEOUT_S:.0f}s")
    if run.returncode != 0:
        lines = run.stderr_text.splitlines()
        first = next((line for line in lines if "error" in line), lines[0] if lines else "")
        raise RuntimeError(f"IR compile exited {run.returncode}: {first}")
    digest = hashlib.sha256(Path(output).read_bytes()).hexdigest()
    target = ir_dir / f"{digest}.bc"
    if not target.exists():
        os.replace(output, target)  # atomic; a parallel recorder of the same TU writes the same bytes
    return digest


def _log_error(record_dir: Path, source: str | None, cwd: str, ir_argv: list[str] | None, error: Exception) -> None:
    reason = " ".join(str(error).split()) or type(error).__name__
    where = os.path.abspath(source) if source else None
    try:
        _append_line(record_dir / "errors.jsonl", {"source": where, "reason": reason, "cwd": cwd, "ir_argv": ir_argv})
    except OSError as unwritable:
        print(f"stitchopt: cannot record {source or 'command'}: {reason} ({unwritable})", file=sys.stderr)


def _append_line(path: Path, record: dict[str, object]) -> None:
    """One JSON line under an exclusive lock, so parallel builds (`make -j`) never interleave lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
