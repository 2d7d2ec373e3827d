"""Cached, parallel evaluation: the one place that turns (IR, pipeline) requests into stored results.

Search strategies and commands only ask; this owns the backend (native workers or subprocesses), the caches,
the time limits and the worker threads. Results are written to the cache as each finishes, so an interrupted
run loses nothing it computed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

from stitchopt.cache.store import CodegenKey, EvalKey, EvaluationStore
from stitchopt.core import PROBED_TERMS, CompileOptions, EvalResult, EvalStatus, IRModule
from stitchopt.errors import StitchoptError
from stitchopt.evaluation.backend import Backend, PrefixReuse, Screen
from stitchopt.evaluation.native.pool import NativeBackend, probe_native
from stitchopt.evaluation.ray_backend import RayBackend
from stitchopt.evaluation.subprocess_backend import SubprocessBackend
from stitchopt.toolchain.baselines import Baseline, load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import ObjectSizes
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S

BACKEND_ENV = "STITCHOPT_BACKEND"
BACKEND_NAMES = ("auto", "native", "subprocess", "ray")
# Per native worker, at most (a quarter of a worker's memory limit, if lower): the module states along a search's
# recent bases (about 60 states a base; a few MB for most units). Only searches give bases, so nothing else pays.
SEARCH_PREFIX_CACHE_MB = 256


@dataclass(frozen=True)
class EvalRequest:
    """`base`: the pipeline this one was derived from (a search's current best), a hint that lets native workers
    with a prefix cache resume from the base's module states: the same object as a whole run, the result marked
    `resumed`, and a stored resumed result is measured again for a request without a base."""

    module: IRModule
    pipeline: str
    options: CompileOptions = CompileOptions()
    base: str | None = None


class MetricProbe(Protocol):
    """Measures one objective term of a module built with a pipeline, beyond what the backends measure: the
    runtime (`perf`: `tune.runtime.RuntimeMeter`), security-relevant code lost (`security`:
    `validate.security_guard.SecurityMeter`). None: the list fails that term."""

    def measure(self, pipeline: str, result: EvalResult) -> float | None: ...


@dataclass
class EvalCounters:
    cache_hits: int = 0
    evaluated: int = 0
    codegen_skipped: int = 0  # codegen found in the codegen cache (same optimized IR)
    screened: int = 0  # codegen ruled out by a search's screen
    by_status: dict[str, int] = field(default_factory=dict)


class CodegenCache:
    """Object sizes by optimized-IR hash: in memory for this run, and in the store across runs."""

    def __init__(self, toolchain: Toolchain, store: EvaluationStore | None) -> None:
        self.toolchain = toolchain
        self.store = store
        self._memory: dict[str, ObjectSizes] = {}
        self._lock = threading.Lock()

    def _key(self, ir_hash: str, triple: str, options: CompileOptions) -> CodegenKey:
        return CodegenKey(ir_hash, self.toolchain.identity, triple, options)

    def get(self, ir_hash: str, triple: str, options: CompileOptions) -> ObjectSizes | None:
        key = self._key(ir_hash, triple, options)
        with self._lock:
            found = self._memory.get(key.digest)
        if found is None and self.store is not None:
            found = self.store.get_codegen(key)
            if found is not None:
                with self._lock:
                    self._memory[key.digest] = found
        return found

    def put(self, ir_hash: str, triple: str, options: CompileOptions, sizes: ObjectSizes) -> None:
        key = self._key(ir_hash, triple, options)
        with self._lock:
            self._memory[key.digest] = sizes
        if self.store is not None:
            self.store.put_codegen(key, sizes)


def select_backend(
    toolchain: Toolchain,
    name: str | None = None,
    *,
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT_S,
    memory_bytes: int | None = None,
    address: str | None = None,
    prefix_cache_mb: int = SEARCH_PREFIX_CACHE_MB,
) -> Backend:
    """`name` (else `$STITCHOPT_BACKEND`, else auto): native when built for this toolchain, else subprocess;
    `ray` runs evaluations on the Ray cluster at `address` (or a local Ray instance). Only native workers
    reuse prefixes (`prefix_cache_mb` each)."""
    choice = name or os.environ.get(BACKEND_ENV) or "auto"
    if choice not in BACKEND_NAMES:
        raise StitchoptError(f"unknown backend {choice!r}: use one of {', '.join(BACKEND_NAMES)}")
    if address is not None and choice != "ray":
        raise StitchoptError(f"an address ({address}) only applies to the ray backend: add --backend ray or drop it")
    if choice == "ray":
        return RayBackend(toolchain, address=address, timeout=timeout, memory_bytes=memory_bytes, num_cpus=jobs)
    if choice == "native" or (choice == "auto" and probe_native(toolchain).available):
        return NativeBackend(
            toolchain, jobs=jobs, timeout=timeout, memory_bytes=memory_bytes, prefix_cache_bytes=prefix_cache_mb << 20
        )
    return SubprocessBackend(toolchain, timeout=timeout, memory_bytes=memory_bytes)


class Evaluator:
    """Evaluate requests through the caches, running misses on up to `jobs` workers at once.

    With `prefix_cache_mb` > 0 (the default), native workers resume requests that name a `base` from the
    base's module states (a search's neighbours share long prefixes with its best): the same objects as whole
    runs, and the same optimized IR but for rare lists (docs/evaluation.md#prefix-reuse-and-screening)."""

    def __init__(
        self,
        toolchain: Toolchain,
        store: EvaluationStore | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        memory_bytes: int | None = None,
        jobs: int | None = None,
        backend: str | None = None,
        address: str | None = None,
        prefix_cache_mb: int = SEARCH_PREFIX_CACHE_MB,
    ) -> None:
        self.toolchain = toolchain
        self.store = store
        self.jobs = jobs or os.cpu_count() or 1
        self.timeout = timeout
        self.memory_bytes = memory_bytes
        self.backend = select_backend(
            toolchain,
            backend,
            jobs=self.jobs,
            timeout=timeout,
            memory_bytes=memory_bytes,
            address=address,
            prefix_cache_mb=prefix_cache_mb,
        )
        if jobs is None and self.backend.parallelism is not None:
            self.jobs = self.backend.parallelism  # keep the whole cluster busy
        # `jobs` bounds the builds of every caller together: callers in threads of their own (kernels labelled
        # side by side) each open a pool of up to `jobs` threads
        self._building = threading.BoundedSemaphore(self.jobs)
        self._counting = threading.Lock()
        self.codegen_cache = CodegenCache(toolchain, store)
        self.counters = EvalCounters()
        self._baselines: dict[str, Baseline] | None = None
        self._probes: dict[str, dict[str, MetricProbe]] = {}  # module sha256 -> term -> probe

    def close(self) -> None:
        self.backend.close()

    @property
    def prefix_reuse(self) -> PrefixReuse | None:
        """What prefix reuse saved so far (None unless the backend reuses prefixes: native workers)."""
        return self.backend.prefix_reuse

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def baselines(self) -> dict[str, Baseline]:
        """clang's -O0/-Oz/-O3 pipelines, read from clang once per evaluator."""
        if self._baselines is None:
            self._baselines = load_baselines(self.toolchain)
        return self._baselines

    def attach_probe(self, module: IRModule, term: str, probe: MetricProbe) -> None:
        """From now on, ok results for `module` carry the objective `term` (a key of PROBED_TERMS) that `probe`
        measures, in the EvalResult field the term names."""
        if term not in PROBED_TERMS:
            raise ValueError(f"{term!r} is measured by the backends, not by a probe")
        self._probes.setdefault(module.sha256, {})[term] = probe

    def key(self, request: EvalRequest) -> EvalKey:
        return EvalKey(
            ir_sha256=request.module.sha256,
            toolchain=self.toolchain.identity,
            pipeline=request.pipeline,
            triple=request.module.triple,
            options=request.options,
        )

    def evaluate(self, module: IRModule, pipeline: str, options: CompileOptions = CompileOptions()) -> EvalResult:
        return self.evaluate_many([EvalRequest(module, pipeline, options)])[0]

    def remeasure(self, module: IRModule, pipeline: str, options: CompileOptions = CompileOptions()) -> EvalResult:
        """The pipeline run whole, replacing what the store holds: for a `resumed` result that decides an answer,
        since a module resumed from bitcode lacks what bitcode cannot carry (dead constant users, which a few
        passes walk; see docs/evaluation.md)."""
        request = EvalRequest(module, pipeline, options)
        result = self._measure(request)
        with self._counting:
            self.counters.evaluated += 1
            self.counters.codegen_skipped += result.codegen_cached
        if self.store is not None:
            self.store.put(self.key(request), result)
        return self._with_probes([request], [result])[0] if self._probes else result

    def evaluate_many(
        self,
        requests: Sequence[EvalRequest],
        on_result: Callable[[int, EvalResult], None] | None = None,
        screen: Screen | None = None,
    ) -> list[EvalResult]:
        """Results in request order; `on_result(index, result)` is called as each one becomes known. With a backend
        that screens (`Backend.screens`), `screen` may rule out codegen of an optimized module: that result is
        SCREENED, has no sizes and is not stored."""
        results: list[EvalResult | None] = [None] * len(requests)
        pending: dict[EvalKey, list[int]] = {}
        for index, request in enumerate(requests):
            key = self.key(request)
            cached = self.store.get(key) if self.store is not None else None
            if cached is not None and cached.resumed and request.base is None:
                cached = None  # a search's resumed result: measured again whole for a caller that wants one
            if cached is not None and cached.holds_under(self.timeout, self.memory_bytes):
                with self._counting:
                    self.counters.cache_hits += 1
                self._finish(index, cached, results, on_result)
            else:
                pending.setdefault(key, []).append(index)
        if pending:
            with ThreadPoolExecutor(max_workers=min(self.jobs, len(pending))) as pool:
                measure = partial(self._measure, screen=screen)
                futures = {pool.submit(measure, requests[indices[0]]): key for key, indices in pending.items()}
                try:
                    for future in as_completed(futures):
                        key = futures[future]
                        result = future.result()
                        with self._counting:
                            self.counters.evaluated += 1
                            self.counters.codegen_skipped += result.codegen_cached
                            self.counters.screened += result.status is EvalStatus.SCREENED
                        if self.store is not None and result.status is not EvalStatus.SCREENED:
                            self.store.put(key, result)
                        for index in pending[key]:
                            self._finish(index, result, results, on_result)
                except BaseException:
                    # Interrupted (Ctrl-C, or a caller's callback failed): drop queued work and stop workers in
                    # flight rather than wait for them; what finished is already in the cache.
                    pool.shutdown(wait=False, cancel_futures=True)
                    self.backend.close()
                    raise
        finished = [result for result in results if result is not None]
        return self._with_probes(requests, finished) if self._probes else finished

    def _with_probes(self, requests: Sequence[EvalRequest], results: list[EvalResult]) -> list[EvalResult]:
        """Probed terms for ok results of modules with probes (not cached with the result: each probe caches)."""

        def add(pair: tuple[EvalRequest, EvalResult]) -> EvalResult:
            request, result = pair
            probes = self._probes.get(request.module.sha256, {})
            if not probes or not result.ok:
                return result
            measured: dict[str, Any] = {
                PROBED_TERMS[t]: probe.measure(request.pipeline, result) for t, probe in probes.items()
            }
            return replace(result, **measured)

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            return list(pool.map(add, zip(requests, results, strict=True)))

    def _measure(self, request: EvalRequest, screen: Screen | None = None) -> EvalResult:
        with self._building:
            result = self.backend.evaluate(
                request.module, request.pipeline, request.options, self.codegen_cache, base=request.base, screen=screen
            )
        return self._limits(result)

    def _limits(self, result: EvalResult) -> EvalResult:
        """A failure carries the limits it happened under."""
        if result.status is EvalStatus.TIMEOUT:
            return replace(result, time_limit_s=self.timeout)
        if result.status is EvalStatus.CRASH and self.memory_bytes is not None:
            return replace(result, memory_limit_bytes=self.memory_bytes)
        return result

    def _finish(
        self,
        index: int,
        result: EvalResult,
        results: list[EvalResult | None],
        on_result: Callable[[int, EvalResult], None] | None,
    ) -> None:
        results[index] = result
        with self._counting:
            self.counters.by_status[result.status.value] = self.counters.by_status.get(result.status.value, 0) + 1
        if on_result is not None:
            on_result(index, result)
