"""Recording real builds as datasets: each translation unit a build compiles is compiled again to unoptimized
IR, stored as `<record dir>/ir/<sha256>.bc` plus one line in `records.jsonl` (or a line in `errors.jsonl`).
Best effort: recording never changes or fails the build."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from functools import cache
from pathlib import Path

from stitchopt.cache.store import TOOLCHAIN_STATE, default_cache_dir
from stitchopt.jsonlines import append_json_line
from stitchopt.toolchain.commands import (
    IR_TIMEOUT_S,
    Mode,
    expand_response_files,
    ir_command,
    is_probe_source,
    parse_command,
)
from stitchopt.toolchain.discovery import Toolchain, remembered_toolchain
from stitchopt.toolchain.process import run_tool

RECORD_DIR_ENV = "STITCHOPT_RECORD_DIR"
# The exact clang that records IR, set by `datasets build` after it found the toolchain once: a wrapper started
# for every compile of a large build then skips discovery (about 0.15 s of version checks per compile).
RECORD_CLANG_ENV = "STITCHOPT_RECORD_CLANG"


@cache
def recording_clang() -> str:
    pinned = os.environ.get(RECORD_CLANG_ENV)
    if pinned and os.access(pinned, os.X_OK):
        return pinned
    return wrapper_toolchain().tool("clang")


@cache
def wrapper_toolchain() -> Toolchain:
    """The compiler wrapper's LLVM, remembered in the cache directory across the build's processes and
    discovered at most once per process."""
    return remembered_toolchain(default_cache_dir() / TOOLCHAIN_STATE)


def record_compile(record_dir: Path, compiler: list[str], original: list[str], cxx_driver: bool) -> None:
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
                ir_argv = ir_command(recording_clang(), parsed.ir_flags, source, output)
                digest = _store_ir(ir_argv, output, cwd, record_dir / "ir")
            stored = str(record_dir / "ir" / f"{digest}.bc")
            record: dict[str, object] = {
                "sha256": digest,
                "source": os.path.abspath(source.path),
                "cwd": cwd,
                "argv": args,
                "ir_argv": ir_command(recording_clang(), parsed.ir_flags, source, stored),
                "language": source.language,
                "compiler": compiler,
            }
            append_json_line(record_dir / "records.jsonl", record)
        except Exception as error:
            _log_error(record_dir, source.path, cwd, ir_argv, error)


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
        append_json_line(
            record_dir / "errors.jsonl", {"source": where, "reason": reason, "cwd": cwd, "ir_argv": ir_argv}
        )
    except OSError as unwritable:  # the record directory itself: its reason, once, and what to do
        said = "" if isinstance(error, OSError) else f"{reason}; "
        where = f"{unwritable.filename}: {unwritable.strerror}" if unwritable.filename else str(unwritable)
        print(
            f"stitchopt: cannot record {source or 'command'}: {said}{where}; set {RECORD_DIR_ENV} to a writable "
            "directory",
            file=sys.stderr,
        )
