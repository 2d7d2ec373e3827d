"""Evaluation on a Ray cluster: the reference (subprocess) evaluation, run as one Ray task per request.

Search, caching and budgets stay in the driver process; only `opt`/`llc` runs move to the cluster. Every
node needs the same LLVM at the same paths: a task first checks that the toolchain's tools exist there, so a
misconfigured node fails loudly instead of measuring with another compiler. Ray is an optional extra
(`pip install 'stitchopt[ray]'`); on one machine the local process pool is faster (Ray's task overhead is
about 1 ms per task, its start-up a few seconds).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from stitchopt.core import CompileOptions, EvalResult, IRModule
from stitchopt.diagnostics import exception_line
from stitchopt.errors import ToolchainError
from stitchopt.evaluation.backend import CodegenLookup, Screen
from stitchopt.evaluation.subprocess_backend import SubprocessBackend
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S


def _evaluate_on_node(
    toolchain: Toolchain,
    module: IRModule,
    pipeline: str,
    options: CompileOptions,
    timeout: float,
    memory_bytes: int | None,
) -> EvalResult:
    missing = [str(path) for path in toolchain.tools.values() if not Path(path).is_file()]
    if missing:
        raise ToolchainError(f"this Ray node lacks the driver's LLVM: {', '.join(missing)}")
    return SubprocessBackend(toolchain, timeout=timeout, memory_bytes=memory_bytes).evaluate(module, pipeline, options)


class RayBackend:
    """Runs evaluations as Ray tasks; `address` joins a cluster (None: Ray's own default, or a local one)."""

    name = "ray"
    screens = False  # each task is the reference evaluation, which runs lists whole
    prefix_reuse = None

    def __init__(
        self,
        toolchain: Toolchain,
        *,
        address: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        memory_bytes: int | None = None,
        num_cpus: int | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ToolchainError("the ray backend needs Ray: pip install 'stitchopt[ray]'") from exc
        self._ray: Any = ray  # typed loosely: Ray ships partial annotations and is an optional extra
        self._started = not ray.is_initialized()
        if self._started:
            try:
                ray.init(
                    address=address,
                    num_cpus=num_cpus if address is None else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ToolchainError(f"cannot start or join Ray at {address or 'a local instance'}: {exc}") from exc
        self.toolchain = toolchain
        self.timeout = timeout
        self.memory_bytes = memory_bytes
        self._task = ray.remote(num_cpus=1, max_retries=0)(_evaluate_on_node)
        self._modules: dict[str, Any] = {}  # module sha256 -> object ref, so bitcode is shipped once
        self._lock = threading.Lock()

    @property
    def parallelism(self) -> int:
        """CPUs in the cluster: how many evaluations to keep in flight."""
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

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
        """Codegen is not skipped by hash here: the object is generated on the node that optimized it."""
        with self._lock:
            if module.sha256 not in self._modules:
                self._modules[module.sha256] = self._ray.put(module)
            module_ref = self._modules[module.sha256]
        ref = self._task.remote(self.toolchain, module_ref, pipeline, options, self.timeout, self.memory_bytes)
        try:
            result: EvalResult = self._ray.get(ref)
        except self._ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, ToolchainError) else exc
            raise ToolchainError(exception_line(cause)) from exc
        return result

    def close(self) -> None:
        """Shut down the Ray instance this backend started (a cluster it joined keeps running)."""
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._modules.clear()
