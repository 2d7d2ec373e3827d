"""LLVM command lines, spelled in one place: `opt` with a pipeline, `llc` code generation, clang's front end.

Every caller builds its argv here, whether it runs it or shows it to a user to replay, so that what is
measured, what is built and what is shown are the same words. Arguments keep the order callers gave them:
`flags` come before the pipeline or the file type, `args` (inputs, outputs, options read after) after it.
"""

from __future__ import annotations

from collections.abc import Sequence

FRONTEND_LEVEL = "Oz"  # the level whose front end writes the IR every list is measured on
STDIN_TO_STDOUT = ("-", "-o", "-")
PASSES_OPTION = "-passes="
NO_LLVM_PASSES = ("-Xclang", "-disable-llvm-passes")


def passes_option(pipeline: str) -> str:
    """`-passes=PIPELINE`: how opt is given a pipeline, and how one is shown to a user to paste."""
    return PASSES_OPTION + pipeline


def opt_command(
    opt: str, pipeline: str, *, flags: Sequence[str] = (), args: Sequence[str] = STDIN_TO_STDOUT
) -> list[str]:
    """`opt [flags] -passes=PIPELINE [args]`; by default a filter from stdin to stdout."""
    return [opt, *flags, passes_option(pipeline), *args]


def llc_command(
    llc: str, *, flags: Sequence[str] = (), filetype: str = "obj", args: Sequence[str] = STDIN_TO_STDOUT
) -> list[str]:
    """`llc [flags] -filetype=FILETYPE [args]`: an object (or `asm`), by default from stdin to stdout."""
    return [llc, *flags, f"-filetype={filetype}", *args]


def frontend_command(
    driver: Sequence[str],
    level: str | None,
    *,
    flags: Sequence[str] = (),
    text: bool = False,
    args: Sequence[str] = (),
) -> list[str]:
    """`DRIVER -LEVEL -Xclang -disable-llvm-passes FLAGS -emit-llvm -c|-S ARGS`: the IR that `clang -LEVEL`
    hands its optimizer, unoptimized, as bitcode or `text`. `driver` is clang with the options that come
    before the level; `level` None: those options name it."""
    optimization = [f"-{level}"] if level is not None else []
    return [*driver, *optimization, *NO_LLVM_PASSES, *flags, "-emit-llvm", "-S" if text else "-c", *args]
