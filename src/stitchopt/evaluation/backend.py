"""What every evaluation backend shares: the interface, status rules and the codegen skip.

An evaluation has two phases. Optimization yields the optimized module's hash; many different pass lists
produce the same module, so code generation is looked up by that hash and skipped on a hit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from stitchopt.core import CompileOptions, EvalResult, EvalStatus, IRModule
from stitchopt.toolchain.elf import ObjectSizes, object_sizes
from stitchopt.toolchain.process import STDERR_TAIL_CHARS

CRASH_MARKERS = ("LLVM ERROR:", "Stack dump:", "PLEASE submit a bug report")

# Whether codegen is worth running for an optimized (not yet compiled) result: a search's cheap screen.
Screen = Callable[[EvalResult], bool]


class CodegenLookup(Protocol):
    """Object sizes by optimized-module hash (see `evaluator.CodegenCache`)."""

    def get(self, ir_hash: str, triple: str, options: CompileOptions) -> ObjectSizes | None: ...

    def put(self, ir_hash: str, triple: str, options: CompileOptions, sizes: ObjectSizes) -> None: ...


@dataclass
class PrefixReuse:
    """How much pipeline work the workers' prefix caches saved: top-level elements resumed from a cached
    module state rather than run, and the caches' size (the largest worker's; each is bounded by its limit)."""

    evaluations: int = 0  # evaluations that ran element by element
    elements: int = 0
    reused_elements: int = 0
    cache_bytes: int = 0
    cache_limit_bytes: int = 0
    evictions: int = 0

    @property
    def reused_share(self) -> float:
        return self.reused_elements / self.elements if self.elements else 0.0

    def add(self, reply: dict[str, Any]) -> None:
        """Count one native worker's reply."""
        if not reply.get("elements"):
            return
        self.evaluations += 1
        self.elements += reply["elements"]
        self.reused_elements += reply["reused_elements"]
        cache = reply["prefix_cache"]
        self.cache_bytes = max(self.cache_bytes, cache["bytes"])
        self.cache_limit_bytes = cache["max_bytes"]
        self.evictions = max(self.evictions, cache["evictions"])


class Backend(Protocol):
    """One way of running (IR, pipeline, options) through LLVM. Implementations must agree exactly.

    What a backend can do beyond that it declares, so that callers never ask for its class."""

    name: str

    @property
    def screens(self) -> bool:
        """Whether `evaluate` estimates code size before codegen, so that a `screen` can rule codegen out."""
        ...

    @property
    def parallelism(self) -> int | None:
        """Evaluations to keep in flight when the caller names no number (a cluster's CPUs); None: the caller's
        own CPU count."""
        ...

    @property
    def prefix_reuse(self) -> PrefixReuse | None:
        """What resuming lists from their `base` saved so far; None for a backend that runs every list whole."""
        ...

    def evaluate(
        self,
        module: IRModule,
        pipeline: str,
        options: CompileOptions,
        codegen: CodegenLookup | None,
        *,
        base: str | None = None,
        screen: Screen | None = None,
    ) -> EvalResult:
        """`base` (the pipeline this one was derived from) and `screen` are hints a backend may ignore: see
        `prefix_reuse` and `screens`."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Emitted:
    """The outcome of code generation: an object file, or a status and LLVM's message."""

    status: EvalStatus
    object: bytes
    seconds: float
    stderr_tail: str


def tail(tool: str, stderr: str) -> str:
    stderr = stderr.strip()
    return f"{tool}: {stderr[-STDERR_TAIL_CHARS:]}\n" if stderr else ""


def complete_with_codegen(
    optimized: EvalResult,
    triple: str,
    options: CompileOptions,
    codegen: CodegenLookup | None,
    emit: Callable[[], Emitted],
    skip: Callable[[], None] = lambda: None,
    screen: Screen | None = None,
) -> EvalResult:
    """Add object sizes to an optimized result: from the codegen cache when the same IR was seen, else `emit`,
    unless `screen` rules codegen out (the result is then SCREENED and has no sizes)."""
    assert optimized.ok and optimized.ir_hash is not None
    cached = codegen.get(optimized.ir_hash, triple, options) if codegen is not None else None
    if cached is not None:
        skip()
        return _with_sizes(replace(optimized, codegen_cached=True), cached)
    if screen is not None and not screen(optimized):
        skip()
        return replace(optimized, status=EvalStatus.SCREENED)
    emitted = emit()
    result = replace(
        optimized,
        status=emitted.status,
        codegen_seconds=emitted.seconds,
        stderr_tail=optimized.stderr_tail + emitted.stderr_tail,
    )
    if not result.ok:
        return result
    sizes = object_sizes(emitted.object)
    if codegen is not None:
        codegen.put(optimized.ir_hash, triple, options, sizes)
    return _with_sizes(result, sizes)


def _with_sizes(result: EvalResult, sizes: ObjectSizes) -> EvalResult:
    return replace(result, size_bytes=sizes.size_bytes, text_bytes=sizes.text_bytes, sections=sizes.sections)
