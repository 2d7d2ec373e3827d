"""The native backend: long-lived worker processes that hold the in-process evaluator, behind a watchdog.

A worker that does not answer in time is killed (its whole process group) and replaced; one that dies is
replaced too; either way the evaluation is recorded with its status (timeout or crash). LLVM's fatal errors
are recovered inside the worker and cost no restart; after a signal (abort, segfault) the worker answers and
exits, and is replaced, so that no later result comes from a process in a suspect state.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from stitchopt.core import CompileOptions, EvalResult, EvalStatus, IRModule
from stitchopt.errors import ToolchainError
from stitchopt.evaluation.backend import CodegenLookup, Emitted, PrefixReuse, Screen, complete_with_codegen, tail
from stitchopt.evaluation.native.library import SO_COMPILE_ERROR, SO_OK, SO_SIGNAL, NativeLibrary, built_library
from stitchopt.evaluation.native.protocol import Deadline, WorkerGone, receive, send
from stitchopt.evaluation.subprocess_backend import SubprocessBackend
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S, STDERR_TAIL_CHARS, memory_limits, rlimited

START_TIMEOUT_S = 60.0
NATIVE_ENV = "STITCHOPT_NATIVE"  # "off": build and run as if the extension did not exist
_STATUS = {SO_OK: EvalStatus.OK, SO_COMPILE_ERROR: EvalStatus.COMPILE_ERROR}


@dataclass(frozen=True)
class NativeProbe:
    """Whether the native evaluator can stand in for this toolchain's opt and llc, and why not."""

    available: bool
    reason: str
    library: Path | None = None


@lru_cache(maxsize=4)
def _library_identity(path: Path) -> tuple[str, str]:
    library = NativeLibrary(path)
    return library.llvm_version, library.llvm_bindir


def probe_native(toolchain: Toolchain) -> NativeProbe:
    """The extension must exist and be built against this very LLVM (same version, same bin directory)."""
    if os.environ.get(NATIVE_ENV) == "off":
        return NativeProbe(False, f"disabled by {NATIVE_ENV}=off")
    path = built_library()
    if path is None:
        return NativeProbe(False, "not built (needs llvm-config and LLVM headers at install time)")
    try:
        version, bindir = _library_identity(path)
    except OSError as exc:
        return NativeProbe(False, f"cannot load {path.name}: {exc}")
    toolchain_bindir = toolchain.tools["opt"].resolve().parent
    if version != toolchain.version_string or Path(bindir).resolve() != toolchain_bindir:
        return NativeProbe(False, f"built for LLVM {version} in {bindir}, not this toolchain", path)
    return NativeProbe(True, f"LLVM {version}", path)


class _Worker:
    """One worker process and the modules it has already received."""

    def __init__(self, library: Path, memory_bytes: int | None, prefix_cache_bytes: int) -> None:
        worker = [sys.executable, "-m", "stitchopt.evaluation.native.worker", str(library), str(prefix_cache_bytes)]
        argv = rlimited(worker, memory_limits(memory_bytes))
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by kill())
        self._reaping = threading.Lock()
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            start_new_session=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.write_fd = self.process.stdin.fileno()
        self.read_fd = self.process.stdout.fileno()
        try:
            receive(self.read_fd, time.monotonic() + START_TIMEOUT_S)  # the worker's ready message
        except (Deadline, WorkerGone) as exc:
            detail = self.stderr_tail().strip().splitlines()
            self.kill()
            reason = detail[-1] if detail else type(exc).__name__
            raise ToolchainError(f"a native worker failed to start ({reason}); use --backend subprocess") from exc

    def request(self, header: dict[str, Any], payload: bytes, timeout: float) -> tuple[dict[str, Any], bytes]:
        send(self.write_fd, header, payload)
        return receive(self.read_fd, time.monotonic() + timeout)

    def stderr_tail(self) -> str:
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(0, size - STDERR_TAIL_CHARS))
        return self.stderr.read().decode(errors="replace")

    def reap(self, timeout: float) -> str:
        """Wait up to `timeout` for the worker to end (after it went silent), so that its exit status is known;
        the end of its stderr (empty once `kill` closed it)."""
        with self._reaping:
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)
            return "" if self.stderr.closed else self.stderr_tail()

    def kill(self) -> None:
        # A reaped worker's pid may be another process group's id by now (the worker forks nothing to kill); the
        # lock keeps `reap` in another thread from reaping it between the check and the kill.
        with self._reaping:
            if self.process.returncode is None:
                with suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.stderr):
            if stream is not None:
                stream.close()


class NativeBackend:
    """Up to `jobs` workers; `evaluate` may be called from that many threads at once. With
    `prefix_cache_bytes`, each worker keeps the module states along the base pipelines it is given, up to that
    many bytes, and resumes the pipelines derived from a base from them (same answers; see evaluator.cpp)."""

    name = "native"
    screens = True  # workers estimate code size before codegen
    parallelism = None

    def __init__(
        self,
        toolchain: Toolchain,
        *,
        jobs: int = 1,
        timeout: float = DEFAULT_TIMEOUT_S,
        memory_bytes: int | None = None,
        prefix_cache_bytes: int = 0,
    ) -> None:
        probe = probe_native(toolchain)
        if not probe.available or probe.library is None:
            raise ToolchainError(f"the native evaluator is unavailable: {probe.reason}; use --backend subprocess")
        self.library = probe.library
        self.timeout = timeout
        self.memory_bytes = memory_bytes
        # A worker under a memory limit keeps at most a quarter of it for module states.
        self.prefix_cache_bytes = min(prefix_cache_bytes, memory_bytes // 4) if memory_bytes else prefix_cache_bytes
        self._prefix_reuse = PrefixReuse()
        self.restarts = 0
        self._live: set[_Worker] = set()  # busy or idle, so that close() can stop evaluations in flight
        self._live_lock = threading.Lock()
        self._device = SubprocessBackend(toolchain, timeout=timeout, memory_bytes=memory_bytes)
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        for _ in range(jobs):
            self._idle.put(None)  # started on first use

    @property
    def prefix_reuse(self) -> PrefixReuse | None:
        """What the workers' prefix caches saved (None without them)."""
        return self._prefix_reuse if self.prefix_cache_bytes else None

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
        """With a prefix cache, `base` (the pipeline this one was derived from) lets the worker resume from the
        base's module states; `screen` may rule out codegen of the optimized module. GPU code (an assembler
        after llc) runs through subprocesses: the workers generate host objects only."""
        if options.assembler:
            return self._device.evaluate(module, pipeline, options, codegen)
        worker = self._idle.get()
        healthy = False
        try:
            if worker is None:
                worker = _Worker(self.library, self.memory_bytes, self.prefix_cache_bytes)
                with self._live_lock:
                    self._live.add(worker)
            result, healthy = self._evaluate_on(worker, module, pipeline, options, codegen, base, screen)
            return result
        finally:
            if not healthy and worker is not None:  # hung, dead, crashed, or interrupted mid-conversation
                self._retire(worker)
                worker = None
            self._idle.put(worker)

    def _retire(self, worker: _Worker) -> None:
        with self._live_lock:
            self._live.discard(worker)
            self.restarts += 1
        worker.kill()

    def _evaluate_on(
        self,
        worker: _Worker,
        module: IRModule,
        pipeline: str,
        options: CompileOptions,
        codegen: CodegenLookup | None,
        base: str | None,
        screen: Screen | None,
    ) -> tuple[EvalResult, bool]:
        """The result, and whether the worker can be used again."""
        header = {
            "module": module.sha256,
            "pipeline": pipeline,
            "base": base if self.prefix_cache_bytes else None,
            "opt_flags": list(options.opt_flags),
            "codegen_level": options.codegen_level,
            "relocation_model": options.relocation_model,
        }
        started = time.monotonic()
        try:
            reply, _ = worker.request(header, b"", self.timeout)
            if reply["op"] == "missing":
                reply, _ = worker.request(header, module.bitcode, self.timeout)
        except (Deadline, WorkerGone) as exc:
            status, message = self._failure(worker, exc, "opt")
            return EvalResult(status, pipeline, opt_seconds=time.monotonic() - started, stderr_tail=message), False
        with self._live_lock:
            self._prefix_reuse.add(reply)
        opt_stderr = tail("opt", reply["error"])
        if reply["status"] != SO_OK:
            status = _STATUS.get(reply["status"], EvalStatus.CRASH)
            result = EvalResult(status, pipeline, opt_seconds=reply["opt_seconds"], stderr_tail=opt_stderr)
            return result, reply["status"] != SO_SIGNAL
        optimized = EvalResult(
            EvalStatus.OK,
            pipeline,
            ir_instruction_count=reply["instructions"],
            size_estimate=reply["size_estimate"],
            ir_hash=reply["ir_hash"],
            opt_seconds=reply["opt_seconds"],
            stderr_tail=opt_stderr,
            resumed=reply["reused_elements"] > 0,
        )
        healthy = True

        def emit() -> Emitted:
            nonlocal healthy
            started = time.monotonic()
            try:
                answer, obj = worker.request({"op": "codegen"}, b"", self.timeout)
            except (Deadline, WorkerGone) as exc:
                healthy = False
                status, message = self._failure(worker, exc, "llc")
                return Emitted(status, b"", time.monotonic() - started, message)
            healthy = answer["status"] != SO_SIGNAL
            status = _STATUS.get(answer["status"], EvalStatus.CRASH)
            return Emitted(status, obj, answer["codegen_seconds"], tail("llc", answer["error"]))

        def skip() -> None:
            send(worker.write_fd, {"op": "skip"})

        result = complete_with_codegen(optimized, module.triple, options, codegen, emit, skip, screen)
        return result, healthy

    def _failure(self, worker: _Worker, exc: Exception, tool: str) -> tuple[EvalStatus, str]:
        if isinstance(exc, Deadline):
            return EvalStatus.TIMEOUT, f"{tool}: killed after {self.timeout:g} s (native worker)\n"
        detail = worker.reap(timeout=5).strip()
        return EvalStatus.CRASH, f"{tool}: native worker died (exit {worker.process.returncode}): {detail}\n"

    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (idle ones only), for diagnostics and tests."""
        workers = list(self._idle.queue)
        return [worker.process.pid for worker in workers if worker is not None]

    def close(self) -> None:
        """Kill every worker, busy ones too: their evaluations end as crashes that nobody stores."""
        with self._live_lock:
            workers, self._live = list(self._live), set()
        for worker in workers:
            worker.kill()
