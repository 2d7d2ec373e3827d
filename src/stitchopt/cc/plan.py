"""How a model build runs one compiler command: exactly the user's compile, with only the pass pipeline swapped.

Each C/C++ source goes through the user's clang with the user's flags twice: the front end to unoptimized
bitcode (`-Xclang -disable-llvm-passes -emit-llvm`), then, after `opt` ran the chosen list, code generation from
that bitcode with the LLVM pipeline disabled. Everything but the pipeline (section flags, debug info, unwind
tables, code model, target features, frame pointers, PIC/PIE, stack protectors) is therefore the compiler's own,
and with clang's -Oz pipeline as the list the object is byte-identical to `clang -Oz -c`. The optimization level
is always -Oz, the baseline every list is measured against. A compile-and-link command (`cc a.c b.c -o prog -lm`)
becomes one such compile per source and the user's link of those objects.

Anything else is left to the real compiler, with the reason (`PassThrough`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.cc.passthrough import flag_reason
from stitchopt.toolchain.commands import CXX_DRIVER, Source, is_probe_source, language_of, takes_value
from stitchopt.toolchain.llvm import NO_LLVM_PASSES, frontend_command

LEVEL = "-Oz"
QUIET_UNUSED = "-Wno-unused-command-line-argument"  # the front end's flags, read again by code generation
_DEPENDENCY_FLAGS = frozenset({"-MD", "-MMD", "-MP", "-MG"})
_DEPENDENCY_WITH_VALUE = frozenset({"-MF", "-MT", "-MQ"})
_LINKER_INPUT_SUFFIXES = (".o", ".a", ".so", ".lo", ".obj")


@dataclass(frozen=True)
class PassThrough:
    """The command is left to the real compiler; `reason` is what the build log counts."""

    reason: str
    sources: tuple[Source, ...]
    output: str | None = None


@dataclass(frozen=True)
class Unit:
    """One translation unit: its source and where its object goes (None: a scratch object for the link)."""

    source: Source
    output: Path | None
    dependency_flags: tuple[str, ...]  # the user's -MD/-MF/-MT..., completed to name the user's files


@dataclass(frozen=True)
class CompilePlan:
    clang: tuple[str, ...]  # the toolchain's clang, with the C++ driver mode when the command is C++
    flags: tuple[str, ...]  # the user's options (each -O as -Oz) less inputs, output, -x, -c and dependency files
    units: tuple[Unit, ...]
    link: tuple[str | int, ...] | None  # the user's link arguments; an int stands for that unit's object

    def frontend_argv(self, unit: Unit, bitcode: Path) -> list[str]:
        """Unoptimized bitcode with the user's flags; diagnostics and dependency files as the user's compile."""
        quiet = (QUIET_UNUSED,) if self.link is not None else ()  # the link's flags, unused here
        return frontend_command(
            [*self.clang, *self.flags, *unit.dependency_flags, *quiet],
            None,  # the user's own -O, made -Oz
            args=["-o", str(bitcode), "-x", unit.source.language, unit.source.path],
        )

    def codegen_argv(self, bitcode: Path, output: Path, *, optimize: bool) -> list[str]:
        """The object of `bitcode` as the user's flags make it; `optimize` runs clang's own -Oz pipeline first
        (the -Oz candidate), otherwise the bitcode is already optimized and only code generation runs."""
        pipeline = () if optimize else NO_LLVM_PASSES
        return [
            *self.clang,
            *self.flags,
            *pipeline,
            QUIET_UNUSED,
            "-c",
            "-o",
            str(output),
            "-x",
            "ir",
            str(bitcode),
        ]

    def link_argv(self, compiler: Sequence[str], objects: Sequence[Path]) -> list[str]:
        """The user's compile-and-link with each source replaced by its object."""
        assert self.link is not None
        args = [str(objects[part]) if isinstance(part, int) else part for part in self.link]
        return [*compiler, *args, QUIET_UNUSED]


def plan_command(
    args: Sequence[str], *, cxx_driver: bool, clang: str, real_compiler_is_clang: bool
) -> CompilePlan | PassThrough | None:
    """The plan for an expanded command line; None when it compiles no C/C++ source (a link, a query)."""
    flags: list[str] = []
    dependency: list[str] = []
    sources: list[Source] = []
    link: list[str | int] = []
    forced: str | None = None
    output: str | None = None
    objects_only = False
    other_inputs: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        value = args[i + 1] if i + 1 < len(args) else None
        i += 1
        if arg.startswith("-x"):
            forced = value if arg == "-x" else arg[2:]
            i += arg == "-x"
            continue
        if arg == "-o" or (arg.startswith("-o") and not takes_value(arg)):
            output = value if arg == "-o" else arg[2:]
            link += [arg, value] if arg == "-o" and value is not None else [arg]
            i += arg == "-o"
            continue
        if arg in _DEPENDENCY_WITH_VALUE and value is not None:
            dependency += [arg, value]
            i += 1
        elif arg in _DEPENDENCY_FLAGS or arg.startswith(("-MF", "-MT", "-MQ")):
            dependency.append(arg)
        elif arg.startswith("-O"):  # -Oz where the user's level was: later flags still override it
            flags += [LEVEL, "-ffast-math"] if arg == "-Ofast" else [LEVEL]
            link.append(arg)
        elif arg == "-c":
            objects_only = True
        elif arg.startswith("-") and arg != "-":
            taken = [arg, value] if takes_value(arg) and value is not None else [arg]
            i += len(taken) - 1
            flags += taken
            link += taken
        else:
            language = language_of(arg, forced, cxx_driver)
            if language is not None:
                link.append(len(sources))  # this source's object takes its place in the link
                sources.append(Source(arg, language))
            else:
                other_inputs.append(arg)
                link.append(arg)
    if not sources:
        return None
    reason = _structural_reason(
        args, sources, other_inputs, output, objects_only, dependency, forced, real_compiler_is_clang
    )
    if reason is not None:
        return PassThrough(reason, tuple(sources), output)
    if LEVEL not in flags:
        flags.insert(0, LEVEL)
    driver = (clang, CXX_DRIVER) if cxx_driver or any(s.language == "c++" for s in sources) else (clang,)
    if objects_only:
        units = tuple(
            Unit(source, Path(output or _default_object(source.path)), _dependency_flags(dependency, source, output))
            for source in sources
        )
        return CompilePlan(driver, tuple(flags), units, None)
    units = tuple(Unit(source, None, ()) for source in sources)
    return CompilePlan(driver, tuple(flags), units, tuple(link))


def _structural_reason(
    args: Sequence[str],
    sources: list[Source],
    other_inputs: list[str],
    output: str | None,
    objects_only: bool,
    dependency: list[str],
    forced: str | None,
    real_compiler_is_clang: bool,
) -> str | None:
    if not real_compiler_is_clang:
        return "the real compiler is not the toolchain's clang"
    if any(is_probe_source(os.path.abspath(source.path)) for source in sources):
        return "a build-system probe"
    flagged = flag_reason(args)
    if flagged is not None:
        return flagged
    if output == "-":
        return "the output is standard output"
    if output is not None and os.path.lexists(output) and not Path(output).is_file():
        return f"the output {output} is not a regular file"
    if output is not None and not os.path.isdir(os.path.dirname(output) or "."):
        return f"the directory of {output} does not exist"
    if objects_only and other_inputs:
        return f"an input that is not C/C++ ({other_inputs[0]})"
    if objects_only and output is not None and len(sources) > 1:
        return "several sources with one -o"
    if not objects_only:
        foreign = [name for name in other_inputs if not name.endswith(_LINKER_INPUT_SUFFIXES) and ".so." not in name]
        if foreign:
            return f"an input that is neither C/C++ nor an object or library ({foreign[0]})"
        if forced not in (None, "none") and other_inputs:
            return "-x applies to the objects of a compile-and-link"
        if dependency:
            return "dependency files of a compile-and-link"
    if objects_only and len(sources) > 1 and any(flag.startswith("-MF") for flag in dependency):
        return "one dependency file for several sources"
    return None


def _default_object(source: str) -> str:
    """`cc -c dir/a.c` writes `a.o` in the current directory."""
    return _replace_extension(os.path.basename(source), ".o")


def _replace_extension(path: str, extension: str) -> str:
    """LLVM's `sys::path::replace_extension`: everything from the file name's last dot is the extension, so
    `.hidden` becomes `.d` (Python's splitext would keep `.hidden`)."""
    directory, name = os.path.split(path)
    dot = name.rfind(".")
    stem = name if dot < 0 or name in (".", "..") else name[:dot]
    return os.path.join(directory, stem + extension)


def _dependency_flags(dependency: list[str], source: Source, output: str | None) -> tuple[str, ...]:
    """The user's dependency options, plus the file name and target clang would derive from `-o` (which the
    front end replaces by a scratch bitcode file): `-MF <output>.d` and `-MQ <output>` (quoted as clang does)."""
    if not any(flag in ("-MD", "-MMD") for flag in dependency):
        return tuple(dependency)
    completed = list(dependency)
    if not any(flag.startswith("-MF") for flag in dependency):
        base = output if output is not None else os.path.basename(source.path)
        completed += ["-MF", _replace_extension(base, ".d")]
    if not any(flag.startswith(("-MT", "-MQ")) for flag in dependency):
        completed += ["-MQ", output if output is not None else _default_object(source.path)]
    return tuple(completed)
