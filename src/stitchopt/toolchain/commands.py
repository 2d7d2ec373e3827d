"""Compiler command lines (gcc/clang style) read for what they compile: mode, sources, the options that shape
each translation unit's IR, output. Shared by the recording of datasets and the build wrapper."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from stitchopt.core import Language
from stitchopt.toolchain.frontend import source_language
from stitchopt.toolchain.llvm import FRONTEND_LEVEL, frontend_command

IR_TIMEOUT_S = 300.0
CXX_DRIVER = "--driver-mode=g++"

_COMPILER_RE = re.compile(r"(?:[\w.]+-)*(?:cc|gcc|clang|c\+\+|g\+\+|clang\+\+)(?:-\d+(?:\.\d+)*)?")
# Options whose value is the next argument: kept (they shape the IR) or dropped (outputs, linking).
_KEEP_WITH_VALUE = frozenset(
    [
        "-D",
        "-U",
        "-I",
        "-include",
        "-imacros",
        "-isystem",
        "-iquote",
        "-idirafter",
        "-iprefix",
        "-iwithprefix",
        "-iwithprefixbefore",
        "-isysroot",
        "--sysroot",
        "-target",
        "-arch",
        "-Xclang",
        "-Xpreprocessor",
        "-mllvm",
        "-gcc-toolchain",
        "-include-pch",
        "--param",
        "-iwithsysroot",
        "-ivfsoverlay",
        "-cxx-isystem",
        "-imultilib",
    ]
)
_DROP_WITH_VALUE = frozenset(
    [
        "-o",
        "-MF",
        "-MT",
        "-MQ",
        "-MJ",
        "-Xlinker",
        "-Xassembler",
        "-L",
        "-l",
        "-u",
        "-T",
        "-z",
        "--serialize-diagnostics",
    ]
)
_DROP = frozenset(
    [
        "-c",
        "-S",
        "-w",
        "-MP",
        "-MG",
        "-save-temps",
        "-shared",
        "-pie",
        "-no-pie",
        "-static",
        "-rdynamic",
        "-s",
        "-pipe",
        "-static-libgcc",
        "-static-libstdc++",
        "-nostdlib",
        "-nostartfiles",
        "-nodefaultlibs",
        "-pedantic",
        "-pedantic-errors",
    ]
)
# Joined forms of dropped options, debug info, diagnostics, LTO and linker/assembler pass-through.
_DROP_PREFIXES = (
    "-MF",
    "-MT",
    "-MQ",
    "-MJ",
    "-o",
    "-l",
    "-L",
    "-g",
    "-W",
    "-flto",
    "-save-temps",
    "--serialize-diagnostics",
)
_MAX_RESPONSE_DEPTH = 16
# Build-system probes compile throwaway programs through the same $CC; they are not part of the project.
_PROBE_NAMES = frozenset(
    {
        "conftest.c",
        "conftest.cc",
        "conftest.cpp",
        "CMakeCCompilerId.c",
        "CMakeCXXCompilerId.cpp",
        "CMakeCCompilerABI.c",
        "CMakeCXXCompilerABI.cpp",
    }
)
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
            language = language_of(arg, forced, cxx_driver)
            if language is not None:
                sources.append(Source(arg, language))
    if last_opt == "-Ofast":  # -Ofast implies -ffast-math, which changes the IR itself
        flags.append("-ffast-math")
    if no_code or (depfile_only and not deps_as_side_effect):
        mode = Mode.PREPROCESS
    else:
        mode = Mode.COMPILE if sources else Mode.LINK
    return ParsedCommand(mode, tuple(sources), tuple(flags), output, objects_only)


def takes_value(arg: str) -> bool:
    """Whether the next argument is this option's value (`-o out.o`, `-I dir`, `-MF deps.d`)."""
    return arg in _KEEP_WITH_VALUE or arg in _DROP_WITH_VALUE


def _is_dropped_prefix(arg: str) -> bool:
    """Prefix matches, less the two kept options that share a dropped prefix."""
    if arg.startswith(("-Wp,", "-gcc-toolchain")):  # -Wp, passes -D/-U to the preprocessor
        return False
    return arg.startswith(_DROP_PREFIXES)


def language_of(arg: str, forced: str | None, cxx_driver: bool) -> Language | None:
    """The language a driver compiles this input as, or None for anything that is not a C/C++ TU."""
    if arg == "-":  # stdin cannot be read a second time
        return None
    if forced not in (None, "none"):
        return "c" if forced == "c" else "c++" if forced == "c++" else None
    language = source_language(arg)
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
    """The clang command for one TU's unoptimized IR; `-x` right before the source pins its language. At -Oz,
    not -O0: -O0 marks every function `optnone`, which would make the IR useless to `opt`."""
    driver = [CXX_DRIVER] if source.language == "c++" else []
    return frontend_command(
        [clang, *driver, *flags], FRONTEND_LEVEL, args=["-w", "-o", output, "-x", source.language, source.path]
    )
