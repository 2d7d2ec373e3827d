"""`stitchopt-cc` / `stitchopt-c++`: a compiler wrapper that builds as asked, then records each TU's unoptimized
IR (`STITCHOPT_RECORD_DIR`, for datasets) or rebuilds its object with a model's choice (`STITCHOPT_MODEL`).

The real compile always runs first and alone decides the exit status; recording and model rebuilds are side
jobs that never fail the build.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from stitchopt.build.passthrough import pass_through_reason
from stitchopt.datasets.recording import RECORD_DIR_ENV, record_compile, recording_clang
from stitchopt.errors import ToolchainError
from stitchopt.toolchain.commands import (
    CXX_DRIVER,
    IR_TIMEOUT_S,
    Mode,
    expand_response_files,
    ir_command,
    is_cxx_driver,
    parse_command,
    split_launcher,
)
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.process import run_tool

REAL_CC_ENV = "STITCHOPT_REAL_CC"
REAL_CXX_ENV = "STITCHOPT_REAL_CXX"
# A flag-tuning model directory (or `default`): rebuild each compiled object with the model's choice.
MODEL_ENV = "STITCHOPT_MODEL"


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
        record_compile(Path(record_dir), compiler, rest, cxx_driver)
    if status == 0 and os.environ.get(MODEL_ENV):
        _apply_model(os.environ[MODEL_ENV], compiler[0], rest, cxx_driver)
    return status


def _default_compiler(cxx: bool) -> list[str]:
    configured = os.environ.get(REAL_CXX_ENV if cxx else REAL_CC_ENV)
    if configured:
        return shlex.split(configured)
    return [recording_clang(), CXX_DRIVER] if cxx else [recording_clang()]


def _is_clang(compiler: str) -> bool:
    """Whether the real compile ran the toolchain's own clang (a model object is a clang object)."""
    found = shutil.which(compiler)
    return found is not None and os.path.realpath(found) == os.path.realpath(recording_clang())


def _passthrough(argv: list[str]) -> int:
    """The real compile, with our stdio; a signal death becomes the shell's 128+N status."""
    try:
        returncode = subprocess.run(argv).returncode
    except OSError as error:
        print(f"stitchopt: cannot run {argv[0]}: {error}", file=sys.stderr)
        return 127
    return 128 - returncode if returncode < 0 else returncode


def _apply_model(model: str, compiler: str, original: list[str], cxx_driver: bool) -> None:
    """Rebuild the object of a one-source `-c` compile with the model's choice; on any failure keep the real
    compiler's object and say why in one line."""
    try:
        args = expand_response_files(original)
        parsed = parse_command(args, cxx_driver=cxx_driver)
        if parsed.mode is not Mode.COMPILE or not parsed.objects_only or len(parsed.sources) != 1:
            return
        source = parsed.sources[0]
        output = Path(parsed.output or Path(source.path).with_suffix(".o").name)
        if pass_through_reason(args, parsed, output, real_compiler_is_clang=_is_clang(compiler)) is not None:
            return  # the real object stays
        # Imported here: numpy and the model cost ~0.1 s, which every other wrapper call should not pay.
        from stitchopt.build.model_builds import rebuild_object
        from stitchopt.models.flag_model import DEFAULT_MODEL_DIR

        with tempfile.TemporaryDirectory(prefix="stitchopt-ir-") as scratch:
            ir = os.path.join(scratch, "tu.bc")
            run = run_tool(ir_command(recording_clang(), parsed.ir_flags, source, ir), timeout=IR_TIMEOUT_S)
            if run.returncode != 0:
                raise RuntimeError(f"IR compile exited {run.returncode}")
            directory = DEFAULT_MODEL_DIR if model == "default" else Path(model)
            rebuild_object(find_toolchain(), directory, Path(ir).read_bytes(), output)
    except Exception as error:  # the real object stays: the build must not depend on the model
        reason = " ".join(str(error).split()) or type(error).__name__
        print(f"stitchopt: kept the compiler's object ({reason})", file=sys.stderr)
