"""Profiles of runnable programs mapped onto their unoptimized IR.

A program is built with clang's front-end instrumentation (`-fprofile-instr-generate`), run once in a
scratch directory under time and memory limits, and its counters merged with `llvm-profdata`; the same source
is then compiled to unoptimized IR twice by the autotuner's front end: as is, and with `-fprofile-instr-use`,
which adds branch weights and function entry counts without changing a block. `print<block-freq>` on the second
gives each block's execution count; the first is what the models read.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import FRONTEND_TIMEOUT_S
from stitchopt.toolchain.llvm import FRONTEND_LEVEL, frontend_command
from stitchopt.toolchain.process import run_tool
from stitchopt.toolchain.runtimes import require_profile_runtime
from stitchopt.validate.suites import SuiteProgram

KIND = "hot-profile"
RUN_MEMORY_BYTES = 2 * 2**30
RUN_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ProfiledModule:
    plain_ir: str  # what models read
    annotated_ir: str | None  # with the profile's weights; None when the run wrote no profile


def _suffix(program: SuiteProgram) -> str:
    return ".cpp" if program.language == "c++" else ".c"


def _driver(toolchain: Toolchain, program: SuiteProgram) -> list[str]:
    return [
        toolchain.tool("clang"),
        *(["--driver-mode=g++"] if program.language == "c++" else []),
        "-w",
        *program.compile_args,
    ]


def front_end_ir(toolchain: Toolchain, program: SuiteProgram, source: Path, profile: Path | None = None) -> str:
    """Unoptimized IR text as the autotuner's front end makes it (optionally annotated with `profile`)."""
    use = [f"-fprofile-instr-use={profile}"] if profile is not None else []
    done = run_tool(
        frontend_command(
            _driver(toolchain, program), FRONTEND_LEVEL, flags=use, text=True, args=[str(source), "-o", "-"]
        ),
        timeout=FRONTEND_TIMEOUT_S,
    )
    if done.returncode != 0 or done.timed_out:
        raise InputError(f"{program.name}: front end failed: {first_error(done.stderr_text) or 'timed out'}")
    return done.stdout.decode(errors="replace")


@dataclass(frozen=True)
class InstrumentedRun:
    profile: Path | None  # the merged counters; None when the run wrote none (killed before exit)
    timed_out: bool


def instrumented_run(
    toolchain: Toolchain,
    driver: Sequence[str],
    source: Path,
    link_args: Sequence[str],
    argv: Sequence[str],
    work: Path,
    *,
    stdin: bytes | None = None,
    timeout: float = RUN_TIMEOUT_S,
) -> InstrumentedRun:
    """Build `source` with front-end instrumentation, run `argv` (`{exe}` stands for the program) in `work` under
    time and memory limits, and merge its counters into `work/run.profdata`."""
    require_profile_runtime(toolchain)
    exe, raw, merged = work / "program", work / "run.profraw", work / "run.profdata"
    build = run_tool(
        [*driver, "-O0", "-fprofile-instr-generate", str(source), "-o", str(exe), *link_args],
        timeout=FRONTEND_TIMEOUT_S,
    )
    if build.returncode != 0:
        raise InputError(f"{source.name}: profiling build failed: {first_error(build.stderr_text)}")
    command = [str(exe) if word == "{exe}" else word for word in argv] or [str(exe)]
    done = run_tool(
        command,
        stdin=stdin,
        timeout=timeout,
        memory_bytes=RUN_MEMORY_BYTES,
        cwd=str(work),
        env={**os.environ, "LLVM_PROFILE_FILE": str(raw)},
    )
    if not raw.is_file():
        return InstrumentedRun(None, done.timed_out)
    merge = run_tool(
        [toolchain.tool("llvm-profdata"), "merge", "-o", str(merged), str(raw)], timeout=FRONTEND_TIMEOUT_S
    )
    if merge.returncode != 0:
        raise InputError(f"llvm-profdata merge failed: {first_error(merge.stderr_text)}")
    return InstrumentedRun(merged, done.timed_out)


def profile_program(toolchain: Toolchain, program: SuiteProgram, timeout: float = RUN_TIMEOUT_S) -> ProfiledModule:
    """Build instrumented, run once (its arguments and stdin), merge, and annotate the IR with the counts."""
    with tempfile.TemporaryDirectory(prefix="stitchopt-hot-") as scratch:
        work = Path(scratch)
        source = work / f"program{_suffix(program)}"
        source.write_text(program.source)
        run = instrumented_run(
            toolchain,
            _driver(toolchain, program),
            source,
            program.link_args,
            ["{exe}", *program.run_args],
            work,
            stdin=program.stdin,
            timeout=timeout,
        )
        plain = front_end_ir(toolchain, program, source)
        annotated = front_end_ir(toolchain, program, source, run.profile) if run.profile is not None else None
        return ProfiledModule(plain, annotated)


def program_key(program: SuiteProgram) -> str:
    """Everything that decides the profile: source, flags, arguments and input."""
    parts = [
        program.language,
        program.source,
        *program.compile_args,
        "\0",
        *program.link_args,
        "\0",
        *program.run_args,
        "\0",
        (program.stdin or b"").hex(),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cached_profile(
    toolchain: Toolchain, program: SuiteProgram, store: EvaluationStore | None, timeout: float = RUN_TIMEOUT_S
) -> ProfiledModule:
    """`profile_program` through the evaluation store (profiles cost a build and a run; reading one, nothing)."""
    key = (toolchain.identity, program_key(program))
    data = store.get_artifact(KIND, *key) if store is not None else None
    if data is not None:
        try:
            saved = json.loads(zlib.decompress(data))
            return ProfiledModule(saved["plain"], saved["annotated"])
        except (zlib.error, ValueError, KeyError):
            pass  # unreadable: profile again
    profiled = profile_program(toolchain, program, timeout)
    if store is not None:
        payload = {"plain": profiled.plain_ir, "annotated": profiled.annotated_ir}
        store.put_artifact(KIND, zlib.compress(json.dumps(payload).encode()), *key)
    return profiled
