"""The reference backend: `opt` and `llc` as subprocesses, bitcode through pipes.

No scratch files, and bitcode (unlike text) keeps the use-list order that codegen can see, so sizes match
`clang -c` exactly. It is the fallback when the native evaluator is not built, and runs exactly what a user
replays: `opt -passes=P` with nothing added, because in LLVM 19 even an extra analysis printer at the end of
the pipeline changes the heap layout and, through pointer-ordered containers in some passes, the result of
about 1.5% of random lists. Instructions are therefore counted by a second `opt` on the output, which also
writes the output back as it read it, without local value names: that module, the one llc reads, is what the
IR hash is of, the same as the native evaluator's.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from stitchopt.core import CompileOptions, EvalResult, EvalStatus, IRModule
from stitchopt.errors import ToolchainError
from stitchopt.evaluation.backend import CRASH_MARKERS, CodegenLookup, Emitted, Screen, complete_with_codegen, tail
from stitchopt.toolchain.device import emit_device, kernel_names, lost_kernels_message
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import llc_command, opt_command
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S, ToolRun, run_tool

# Run on the optimized module: prints each function's properties, among them its instruction count.
INSTRUCTION_COUNTER = "function(print<func-properties>)"
_INSTRUCTIONS_RE = re.compile(r"^TotalInstructionCount: (\d+)$", re.MULTILINE)
_FUNCTION_HEADER = "Printing analysis results of CFA"


def classify(run: ToolRun) -> EvalStatus:
    if run.timed_out:
        return EvalStatus.TIMEOUT
    if run.returncode < 0 or any(marker in run.stderr_text for marker in CRASH_MARKERS):
        return EvalStatus.CRASH
    return EvalStatus.OK if run.returncode == 0 else EvalStatus.COMPILE_ERROR


def _instruction_count(stderr: str) -> int | None:
    """Sum of per-function counts; None if functions were printed without counts (an LLVM that lacks them)."""
    counts = _INSTRUCTIONS_RE.findall(stderr)
    if not counts and _FUNCTION_HEADER in stderr:
        return None
    return sum(int(n) for n in counts)


class SubprocessBackend:
    """Runs every list whole and generates every object: it has no size estimate to screen with."""

    name = "subprocess"
    screens = False
    parallelism = None
    prefix_reuse = None

    def __init__(
        self, toolchain: Toolchain, *, timeout: float = DEFAULT_TIMEOUT_S, memory_bytes: int | None = None
    ) -> None:
        self.toolchain = toolchain
        self.timeout = timeout
        self.memory_bytes = memory_bytes
        self._kernels_of: dict[str, list[str]] = {}

    def evaluate(
        self,
        module: IRModule,
        pipeline: str,
        options: CompileOptions = CompileOptions(),
        codegen: CodegenLookup | None = None,
        *,
        base: str | None = None,
        screen: Screen | None = None,
    ) -> EvalResult:
        """Optimize with exactly `opt -passes=P`, count IR instructions, generate the object unless cached."""
        opt_run = self._run(opt_command(self.toolchain.tool("opt"), pipeline, flags=options.opt_args()), module.bitcode)
        opt_stderr = tail("opt", opt_run.stderr_text)
        status = classify(opt_run)
        if status is not EvalStatus.OK:
            return EvalResult(status, pipeline, opt_seconds=opt_run.seconds, stderr_tail=opt_stderr)
        count, read_back = self._read_back(opt_run.stdout)
        optimized = EvalResult(
            status=EvalStatus.OK,
            pipeline=pipeline,
            ir_instruction_count=count,
            ir_hash=hashlib.sha256(read_back).hexdigest(),
            opt_seconds=opt_run.seconds,
            stderr_tail=opt_stderr,
        )

        if options.assembler:
            return self._device(module, opt_run.stdout, optimized, options, codegen)

        def emit() -> Emitted:
            llc = self._run(llc_command(self.toolchain.tool("llc"), flags=options.llc_flags()), opt_run.stdout)
            return Emitted(classify(llc), llc.stdout, llc.seconds, tail("llc", llc.stderr_text))

        return complete_with_codegen(optimized, module.triple, options, codegen, emit)

    def _device(
        self,
        module: IRModule,
        bitcode: bytes,
        optimized: EvalResult,
        options: CompileOptions,
        codegen: CodegenLookup | None,
    ) -> EvalResult:
        """GPU code: the PTX must still define every kernel of the input, and so must the cubin's sections
        (which also holds for sizes the codegen cache answers: another input may have left them)."""
        kernels = self._kernels(module)

        def emit() -> Emitted:
            emission = emit_device(self.toolchain, bitcode, kernels, options, self._run)
            llc = emission.llc
            if emission.missing:
                return Emitted(
                    EvalStatus.COMPILE_ERROR, b"", llc.seconds, f"llc: {lost_kernels_message(emission.missing)}\n"
                )
            if emission.ptxas is None:
                return Emitted(classify(llc), b"", llc.seconds, tail("llc", llc.stderr_text))
            status = classify(emission.ptxas)
            failure = "" if status is EvalStatus.OK else tail("ptxas", emission.ptxas.stderr_text)
            seconds = llc.seconds + emission.ptxas.seconds
            return Emitted(status, emission.ptxas.stdout, seconds, tail("llc", llc.stderr_text) + failure)

        result = complete_with_codegen(optimized, module.triple, options, codegen, emit)
        lost = [name for name in kernels if f".text.{name}" not in result.sections]
        if result.ok and lost:
            return replace(
                result, status=EvalStatus.COMPILE_ERROR, stderr_tail=f"ptxas: {lost_kernels_message(lost)}\n"
            )
        return result

    def _kernels(self, module: IRModule) -> list[str]:
        """The module's kernels, read once per module (llvm-dis failing on an input opt just read is the
        toolchain's problem, not the list's)."""
        if module.sha256 not in self._kernels_of:
            run = self._run([self.toolchain.tool("llvm-dis"), "-", "-o", "-"], module.bitcode)
            if run.returncode != 0:
                raise ToolchainError(f"llvm-dis cannot read {module.name}: {run.stderr_tail(300).strip()}")
            self._kernels_of[module.sha256] = kernel_names(run.stdout.decode(errors="replace"))
        return self._kernels_of[module.sha256]

    def _read_back(self, bitcode: bytes) -> tuple[int | None, bytes]:
        """The instruction count and the module as read back (the input itself if that fails)."""
        counter = self._run(
            opt_command(self.toolchain.tool("opt"), INSTRUCTION_COUNTER, flags=["-discard-value-names"]),
            bitcode,
        )
        if counter.returncode != 0:
            return None, bitcode
        return _instruction_count(counter.stderr_text), counter.stdout

    def _run(self, argv: list[str], stdin: bytes) -> ToolRun:
        return run_tool(argv, stdin=stdin, timeout=self.timeout, memory_bytes=self.memory_bytes)

    def close(self) -> None:
        """Nothing to release: every evaluation starts its own processes."""
