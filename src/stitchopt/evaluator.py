"""Cached, parallel evaluation: the one place that turns (IR, pipeline) requests into stored results.

Search strategies and commands only ask; this owns the cache, the time limits and the worker threads.
Results are written to the cache as each finishes, so an interrupted run loses nothing it computed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from stitchopt.cache.store import EvalKey, EvaluationStore
from stitchopt.core import CompileOptions, EvalResult, IRModule
from stitchopt.toolchain.baselines import Baseline, load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.measure import measure
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class EvalRequest:
    module: IRModule
    pipeline: str
    options: CompileOptions = CompileOptions()


@dataclass
class EvalCounters:
    cache_hits: int = 0
    evaluated: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


class Evaluator:
    """Evaluate requests through the cache, running misses in up to `jobs` concurrent tool processes."""

    def __init__(
        self,
        toolchain: Toolchain,
        store: EvaluationStore | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        memory_bytes: int | None = None,
        jobs: int | None = None,
    ) -> None:
        self.toolchain = toolchain
        self.store = store
        self.timeout = timeout
        self.memory_bytes = memory_bytes
        self.jobs = jobs or os.cpu_count() or 1
        self.counters = EvalCounters()
        self._baselines: dict[str, Baseline] | None = None

    @property
    def baselines(self) -> dict[str, Baseline]:
        """clang's -O0/-Oz/-O3 pipelines, read from clang once per evaluator."""
        if self._baselines is None:
            self._baselines = load_baselines(self.toolchain)
        return self._baselines

    def key(self, request: EvalRequest) -> EvalKey:
        return EvalKey(
            ir_sha256=request.module.sha256,
            toolchain=self.toolchain.identity,
            pipeline=request.pipeline,
            triple=request.module.triple,
            options=request.options,
        )

    def evaluate(
        self, module: IRModule, pipeline: str, options: CompileOptions = CompileOptions()
    ) -> EvalResult:
        return self.evaluate_many([EvalRequest(module, pipeline, options)])[0]

    def evaluate_many(
        self,
        requests: Sequence[EvalRequest],
        on_result: Callable[[int, EvalResult], None] | None = None,
    ) -> list[EvalResult]:
        """Results in request order; `on_result(index, result)` is called as each one becomes known."""
        results: list[EvalResult | None] = [None] * len(requests)
        pending: dict[EvalKey, list[int]] = {}
        for index, request in enumerate(requests):
            key = self.key(request)
            cached = self.store.get(key) if self.store is not None else None
            if cached is not None:
                self.counters.cache_hits += 1
                self._finish(index, cached, results, on_result)
            else:
                pending.setdefault(key, []).append(index)
        if pending:
            with ThreadPoolExecutor(max_workers=min(self.jobs, len(pending))) as pool:
                futures = {
                    pool.submit(self._measure, requests[indices[0]]): key for key, indices in pending.items()
                }
                for future in as_completed(futures):
                    key = futures[future]
                    result = future.result()
                    self.counters.evaluated += 1
                    if self.store is not None:
                        self.store.put(key, result)
                    for index in pending[key]:
                        self._finish(index, result, results, on_result)
        return [result for result in results if result is not None]

    def _measure(self, request: EvalRequest) -> EvalResult:
        return measure(
            self.toolchain,
            request.module,
            request.pipeline,
            request.options,
            timeout=self.timeout,
            memory_bytes=self.memory_bytes,
        )

    def _finish(
        self,
        index: int,
        result: EvalResult,
        results: list[EvalResult | None],
        on_result: Callable[[int, EvalResult], None] | None,
    ) -> None:
        results[index] = result
        self.counters.by_status[result.status.value] = self.counters.by_status.get(result.status.value, 0) + 1
        if on_result is not None:
            on_result(index, result)
