"""Measure one (IR, pipeline, compile options) triple with `opt` and `llc` as subprocesses.

Both tools read and write bitcode through pipes: no scratch files, and bitcode (unlike text) keeps the
use-list order that codegen can see, so sizes match `clang -c` exactly.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from stitchopt.core import CompileOptions, EvalResult, EvalStatus, IRModule
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S, STDERR_TAIL_CHARS, ToolRun, run_tool

# Appended to every pipeline: prints per-function properties (instruction counts) without changing the IR.
INSTRUCTION_COUNTER = "function(print<func-properties>)"
_INSTRUCTIONS_RE = re.compile(r"^TotalInstructionCount: (\d+)$", re.MULTILINE)
_FUNCTION_HEADER = "Printing analysis results of CFA"
_COUNTER_LINE_RE = re.compile(r"^[A-Za-z]+: \d+$")
_CRASH_MARKERS = ("LLVM ERROR:", "Stack dump:", "PLEASE submit a bug report")


def classify(run: ToolRun) -> EvalStatus:
    if run.timed_out:
        return EvalStatus.TIMEOUT
    if run.returncode < 0 or any(marker in run.stderr_text for marker in _CRASH_MARKERS):
        return EvalStatus.CRASH
    return EvalStatus.OK if run.returncode == 0 else EvalStatus.COMPILE_ERROR


def _without_counter_output(stderr: str) -> str:
    lines = stderr.splitlines()
    return "\n".join(
        line
        for line in lines
        if line.strip()
        and not (line.startswith("Printing analysis results of CFA") or _COUNTER_LINE_RE.match(line))
    )


def measure(
    toolchain: Toolchain,
    module: IRModule,
    pipeline: str,
    options: CompileOptions = CompileOptions(),
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    memory_bytes: int | None = None,
) -> EvalResult:
    """Optimize, count IR instructions, generate an object in memory and read its section sizes."""
    opt_run = run_tool(
        [
            toolchain.tool("opt"),
            *options.opt_args(),
            f"-passes={pipeline},{INSTRUCTION_COUNTER}" if pipeline else f"-passes={INSTRUCTION_COUNTER}",
            "-",
            "-o",
            "-",
        ],
        stdin=module.bitcode,
        timeout=timeout,
        memory_bytes=memory_bytes,
    )
    opt_stderr = _without_counter_output(opt_run.stderr_text)
    status = classify(opt_run)
    if status is not EvalStatus.OK:
        return EvalResult(status, pipeline, opt_seconds=opt_run.seconds, stderr_tail=_tail("opt", opt_stderr))
    llc_run = run_tool(
        [toolchain.tool("llc"), *options.llc_flags(), "-filetype=obj", "-", "-o", "-"],
        stdin=opt_run.stdout,
        timeout=timeout,
        memory_bytes=memory_bytes,
    )
    optimized = EvalResult(
        status=classify(llc_run),
        pipeline=pipeline,
        ir_instruction_count=_instruction_count(opt_run.stderr_text),
        ir_hash=hashlib.sha256(opt_run.stdout).hexdigest(),
        opt_seconds=opt_run.seconds,
        codegen_seconds=llc_run.seconds,
        stderr_tail=_tail("opt", opt_stderr) + _tail("llc", llc_run.stderr_text),
    )
    if not optimized.ok:
        return optimized
    sizes = object_sizes(llc_run.stdout)
    return replace(
        optimized, size_bytes=sizes.size_bytes, text_bytes=sizes.text_bytes, sections=sizes.sections
    )


def _instruction_count(stderr: str) -> int | None:
    """Sum of per-function counts; None if functions were printed without counts (an LLVM that lacks them)."""
    counts = _INSTRUCTIONS_RE.findall(stderr)
    if not counts and _FUNCTION_HEADER in stderr:
        return None
    return sum(int(n) for n in counts)


def _tail(tool: str, stderr: str) -> str:
    stderr = stderr.strip()
    return f"{tool}: {stderr[-STDERR_TAIL_CHARS:]}\n" if stderr else ""
