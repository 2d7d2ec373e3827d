"""`stitchopt-cc` / `stitchopt-c++`: a compiler wrapper for builds. It compiles as asked, or, with
STITCHOPT_MODEL / STITCHOPT_LIST / STITCHOPT_MODE set, builds each unit with the chosen pass pipeline
(`cc.model_builds`); with STITCHOPT_RECORD_DIR it then records each TU's unoptimized IR as a dataset.

Only the compile decides the exit status; model builds and recording never fail a build: anything they cannot
do leaves the command to the real compiler. Every message is one line on stderr, warnings included.

This is the in-process path. The installed commands start in `cc.client` (which cannot be imported from
here: it imports this module), which hands model builds to the compile server (`cc.server`, whose workers run
`run_wrapper`) and calls `run_wrapper` for everything else; `main_cc` and `main_cxx` here always run in
process (scripts that call them, and installs made before the commands moved to `cc.client`).
"""

from __future__ import annotations

import os
import shlex
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from stitchopt.cc.compiler import CANNOT_RUN, REAL_CC_ENV, REAL_CXX_ENV, run_compiler
from stitchopt.cc.settings import LIST_ENV, MODE_ENV, MODEL_ENV
from stitchopt.datasets.recording import RECORD_DIR_ENV, record_compile, recording_clang
from stitchopt.diagnostics import warning_line
from stitchopt.errors import ToolchainError
from stitchopt.toolchain.commands import CXX_DRIVER, expand_response_files, is_cxx_driver, split_launcher

_INTERRUPTED = 130


def main_cc() -> int:
    return run_wrapper(sys.argv[1:], cxx=False)


def main_cxx() -> int:
    return run_wrapper(sys.argv[1:], cxx=True)


def run_wrapper(args: Sequence[str], *, cxx: bool) -> int:
    """Build as asked (the model's way when set), then record when asked to and the compile succeeded."""
    warnings.formatwarning = warning_line
    launcher, rest = split_launcher(args)
    name = f"stitchopt-{'c++' if cxx else 'cc'}"
    try:
        compiler = [launcher] if launcher else _default_compiler(cxx)
    except ToolchainError as error:  # no compiler at all: the build cannot go on
        print(f"{name}: no real compiler: {error}", file=sys.stderr)
        return CANNOT_RUN
    except ValueError as error:  # shlex: an unclosed quote
        variable = REAL_CXX_ENV if cxx else REAL_CC_ENV
        print(f"{name}: {variable}: {error}; write it as shell words, e.g. 'clang-19 -m32'", file=sys.stderr)
        return CANNOT_RUN
    cxx_driver = is_cxx_driver(launcher) if launcher else cxx
    try:
        status = _model_build(compiler, rest, cxx_driver)
        if status is None:
            status = run_compiler([*compiler, *rest])
        record_dir = os.environ.get(RECORD_DIR_ENV)
        if status == 0 and record_dir:
            record_compile(Path(record_dir), compiler, rest, cxx_driver)
    except KeyboardInterrupt:
        return _INTERRUPTED
    return status


def _model_build(compiler: list[str], args: list[str], cxx_driver: bool) -> int | None:
    """The model build's exit status, or None when the real compiler should run the command as asked."""
    if not any(os.environ.get(name) for name in (MODEL_ENV, LIST_ENV, MODE_ENV)):
        return None
    try:
        expanded = expand_response_files(args)
    except (OSError, ValueError) as error:  # an unreadable response file, or an unclosed quote in one
        reason = error.strerror if isinstance(error, OSError) else error
        print(f"stitchopt: cannot read the command's response files ({reason}); building as asked", file=sys.stderr)
        return None
    try:
        clang = recording_clang()
    except ToolchainError as error:
        print(f"stitchopt: {error}; building as asked", file=sys.stderr)
        return None
    # Imported here: every other wrapper call stays at the Python start-up cost.
    from stitchopt.cc.model_builds import model_build

    return model_build(os.environ, compiler, expanded, clang, cxx_driver)


def _default_compiler(cxx: bool) -> list[str]:
    configured = shlex.split(os.environ.get(REAL_CXX_ENV if cxx else REAL_CC_ENV, ""))
    if configured:
        return configured
    return [recording_clang(), CXX_DRIVER] if cxx else [recording_clang()]
