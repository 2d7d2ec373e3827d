"""OpenMP target offload programs built to be run on any machine: the host CPU as the offload device.

LLVM 19's libomptarget has a host plugin (generic ELF64) that runs target regions as a device would: its own
device memory, and copies between it and the host decided by the same runtime calls and reference counts as on
a GPU. A program built with `-fopenmp-targets=x86_64-pc-linux-gnu` therefore makes the same copies, of the same
sizes, as its GPU build (which copies depend on the host code, not on the device), and `LIBOMPTARGET_INFO=32`
logs each one. That is how host lists that change map lists are measured and checked without a GPU.

The host module is clang -O3's front end's (LLVM passes disabled) with the device image embedded as clang
embeds a GPU's (`.llvm.offloading`); a host pipeline runs on it with `opt` (pass plugins loaded), and clang
compiles and links the result, its linker wrapper building the device code.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError, PipelineError, ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import NO_LLVM_PASSES, opt_command
from stitchopt.toolchain.offload import openmp_front_end
from stitchopt.toolchain.process import run_tool

HOST_AS_DEVICE = "x86_64-pc-linux-gnu"
OFFLOAD_FLAGS = ("-fopenmp", f"-fopenmp-targets={HOST_AS_DEVICE}")
HOST_BASELINE = "default<O3>"  # what clang -O3 runs on the host module
HOISTING_PIPELINE = f"{HOST_BASELINE},stitchopt-hoist-target-data"  # -O3, then the plugin's pass keeping data
BUILD_TIMEOUT_S = 300.0
RUNTIME_LIBRARY = "libomptarget.so"
_REMARK_RE = re.compile(r"^remark: (?P<file>.+?):(?P<line>\d+):\d+: (?P<message>.*)$")  # line 0: not known
# The pipeline given is the host's whole optimization: stitchopt's plugin adds no pass of its own to opt's
# default<O3> even where the user's environment asks clang to (STITCHOPT_OFFLOAD=keep).
_OPT_ENV = {**os.environ, "STITCHOPT_OFFLOAD": "off"}


def runtime_directory(toolchain: Toolchain) -> Path:
    """Where this LLVM's offload runtime (libomptarget) lives; ToolchainError saying what to install."""
    lib = Path(toolchain.tool("clang")).resolve().parent.parent / "lib"
    if not (lib / RUNTIME_LIBRARY).is_file():
        raise ToolchainError(
            f"running OpenMP offload programs needs LLVM's {RUNTIME_LIBRARY} in {lib}: install libomp-19-dev "
            "(scripts/install-system-deps.sh --gpu)"
        )
    return lib


def offload_host_module(toolchain: Toolchain, source: Path, extra_args: Sequence[str] = ()) -> bytes:
    """Unoptimized host bitcode of a C/C++ file, its target regions compiled for the host as the device and
    embedded."""
    return openmp_front_end(toolchain, source, OFFLOAD_FLAGS, extra_args)


@dataclass(frozen=True)
class HoistingReport:
    """What the hoisting pass does to a program, read from its optimization remarks (`file:line: message`)."""

    kept: tuple[str, ...]  # loops whose mapped arrays it keeps on the device
    not_kept: tuple[str, ...]  # loops of launches it leaves as they are, with why

    @property
    def pipeline(self) -> str:
        """The host pipeline to build with, decided statically: the hoisting one where it keeps something (its
        rules admit only what the program cannot tell), else -O3's."""
        return HOISTING_PIPELINE if self.kept else HOST_BASELINE


def hoisting_report(toolchain: Toolchain, source: Path, plugin: Path, extra_args: Sequence[str] = ()) -> HoistingReport:
    """The hoisting pipeline run on `source`'s host module as a run would build it, with line tables (they
    change no decision: they give the remarks their lines, and clang then writes each map clause's text, which
    names the arrays) and the pass's remarks."""
    module = offload_host_module(toolchain, source, ["-gline-tables-only", *extra_args])
    flags = [f"-load-pass-plugin={plugin}", "-pass-remarks=stitchopt", "-pass-remarks-missed=stitchopt"]
    run = run_tool(
        opt_command(toolchain.tool("opt"), HOISTING_PIPELINE, flags=flags, args=["-o", os.devnull]),
        stdin=module,
        env=_OPT_ENV,
        timeout=BUILD_TIMEOUT_S,
    )
    if run.returncode != 0:
        raise ToolchainError(f"{source}: the hoisting pipeline failed: {first_error(run.stderr_text)}")
    # Sets (a loop comes twice where its function is inlined into a caller), in source order: the pass visits
    # loops last first; remarks without a line go last.
    kept: dict[str, tuple[bool, str, int]] = {}
    not_kept: dict[str, tuple[bool, str, int]] = {}
    for match in filter(None, map(_REMARK_RE.match, run.stderr_text.splitlines())):
        line = int(match["line"])
        where = f"{Path(match['file']).name}:{line}: " if line else ""
        remarks = kept if match["message"].startswith("kept ") else not_kept
        remarks[where + match["message"]] = (not line, match["file"], line)
    return HoistingReport(tuple(sorted(kept, key=kept.__getitem__)), tuple(sorted(not_kept, key=not_kept.__getitem__)))


def build_offload_program(
    toolchain: Toolchain,
    host_modules: Sequence[bytes],
    pipeline: str,
    output: Path,
    *,
    pass_plugins: Sequence[Path] = (),
    cxx: bool = False,
) -> None:
    """Runs `pipeline` on each host module (`opt`, with `pass_plugins` loaded), then compiles them (code
    generation only: the pipeline is the whole of the host's optimization) and links them, as C++ if `cxx`,
    into `output`, an executable that finds this LLVM's offload runtime. A pipeline opt refuses is a
    PipelineError; a failed compile or link is a ToolchainError."""
    runtime = runtime_directory(toolchain)
    plugins = [f"-load-pass-plugin={plugin}" for plugin in pass_plugins]
    objects = []
    for index, module in enumerate(host_modules):
        optimized = run_tool(opt_command(toolchain.tool("opt"), pipeline, flags=plugins), stdin=module, env=_OPT_ENV)
        if optimized.returncode != 0:
            raise PipelineError(f"opt refuses host pipeline {pipeline!r}: {first_error(optimized.stderr_text)}")
        bitcode = output.with_name(f"{output.name}.{index}.bc")
        bitcode.write_bytes(optimized.stdout)
        objects.append(bitcode.with_suffix(".o"))
        _clang(toolchain, [*OFFLOAD_FLAGS, "-O3", *NO_LLVM_PASSES, "-c", str(bitcode), "-o", str(objects[-1])])
    driver = ["--driver-mode=g++"] if cxx else []
    _clang(toolchain, [*driver, *OFFLOAD_FLAGS, *map(str, objects), "-lm", f"-Wl,-rpath,{runtime}", "-o", str(output)])


def _clang(toolchain: Toolchain, args: Sequence[str]) -> None:
    # clang's linker wrapper leaves its device image object in TMPDIR when the link fails: a scratch TMPDIR
    # keeps it from piling up in the user's.
    with tempfile.TemporaryDirectory(prefix="stitchopt-offload-") as scratch:
        env = {**os.environ, "TMPDIR": scratch}
        run = run_tool([toolchain.tool("clang"), *args], env=env, timeout=BUILD_TIMEOUT_S)
    if "undefined reference to `main'" in run.stderr_text:
        raise InputError("the program has no main: a run builds and runs a whole program")
    if run.returncode != 0:
        raise ToolchainError(f"building the offload program failed: {first_error(run.stderr_text)}")
