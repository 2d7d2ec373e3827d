"""Frozen value types shared by every layer: what is evaluated and what came out."""

from __future__ import annotations

import enum
import hashlib
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Literal


class EvalStatus(str, enum.Enum):
    """How one evaluation ended. Only `ok` results carry sizes."""

    OK = "ok"
    COMPILE_ERROR = "compile-error"  # a tool exited non-zero with a diagnostic (bad pipeline, invalid IR)
    CRASH = "crash"  # a tool died on a signal or hit an LLVM fatal error / assertion
    TIMEOUT = "timeout"  # the process group was killed after the time limit
    SCREENED = "screened"  # optimized, but codegen skipped on a search's screen: not a measurement, never stored


@dataclass(frozen=True)
class CompileOptions:
    """How a pipeline is run by `opt` and its result compiled by `llc`. Part of every cache key.

    PIC is the default because Debian's clang builds position-independent executables by default, so
    `clang -Oz -c` objects are PIC code; `llc` alone would assume the static model and `opt` would cost code
    as non-PIC. `opt_flags` carry what clang derives from its -O level but a pipeline string cannot say
    (inliner and unroller thresholds).
    """

    codegen_level: int = 2
    relocation_model: str = "pic"
    opt_flags: tuple[str, ...] = ()
    # GPU code (`toolchain.device`): llc's target options (-mcpu, -mattr, ...), and the assembler that turns
    # llc's assembly into the measured object (ptxas argv, input and output added by the backend) with its
    # version. Empty for host code, whose llc writes the object itself.
    target_flags: tuple[str, ...] = ()
    assembler: tuple[str, ...] = ()
    assembler_version: str = ""

    def opt_args(self) -> tuple[str, ...]:
        return (f"-relocation-model={self.relocation_model}", *self.opt_flags)

    def llc_flags(self) -> tuple[str, ...]:
        return (f"-O{self.codegen_level}", f"-relocation-model={self.relocation_model}", *self.target_flags)

    def codegen_key(self) -> str:
        """The part that decides the object file of a given optimized module."""
        key = f"O{self.codegen_level};reloc={self.relocation_model}"
        if self.target_flags:
            key += f";target={' '.join(self.target_flags)}"
        if self.assembler:
            key += f";as={' '.join(self.assembler[1:])}@{self.assembler_version};m={DEVICE_MEASUREMENT_VERSION}"
        return key

    def key(self) -> str:
        return f"{self.codegen_key()};opt={' '.join(self.opt_flags)}"


# Part of every cache key: bump it when what an evaluation measures changes (which sections count, how
# instructions are counted), so that results measured the old way are never replayed as new ones.
MEASUREMENT_VERSION = 1
# The same for GPU objects alone (cubins: SASS without padding, parameter banks not counted), so that host
# results stay valid when only the device measure changes.
DEVICE_MEASUREMENT_VERSION = 2


@dataclass(frozen=True)
class EvalResult:
    """Metrics of one (IR, pipeline, codegen options) evaluation.

    `size_bytes` sums the allocated, file-backed ELF sections of the object (code, read-only data, data,
    `.eh_frame`; not `.bss`); `text_bytes` sums the executable ones.
    """

    status: EvalStatus
    pipeline: str
    size_bytes: int | None = None
    text_bytes: int | None = None
    ir_instruction_count: int | None = None
    size_estimate: int | None = None  # LLVM's code-size cost model over the optimized module (native backend)
    ir_hash: str | None = None  # sha256 of the optimized module's bitcode as llc reads it, local names dropped
    opt_seconds: float = 0.0
    codegen_seconds: float = 0.0
    stderr_tail: str = ""
    sections: dict[str, int] = field(default_factory=dict)
    codegen_cached: bool = False  # sizes came from an earlier codegen of the same optimized IR
    resumed: bool = False  # optimized from a module state a native worker held (prefix reuse), not from the input
    runtime: float | None = None  # the program's run cost when a runtime probe is attached (unit: the probe's)
    security: float | None = None  # 1 + security-relevant items lost, when a security probe is attached
    # The limits a failure happened under: a timeout or a crash under a memory cap says nothing about a
    # run with a larger limit, so the cache replays it only under the same or tighter limits.
    time_limit_s: float | None = None
    memory_limit_bytes: int | None = None

    @property
    def ok(self) -> bool:
        return self.status is EvalStatus.OK

    def holds_under(self, time_limit_s: float, memory_limit_bytes: int | None) -> bool:
        """Whether this (cached) result would come out again under these limits: a timeout only under the
        same or a shorter limit, a crash under a memory cap only under the same or a smaller cap."""
        if self.status is EvalStatus.TIMEOUT:
            return self.time_limit_s is not None and time_limit_s <= self.time_limit_s
        if self.status is EvalStatus.CRASH and self.memory_limit_bytes is not None:
            return memory_limit_bytes is not None and memory_limit_bytes <= self.memory_limit_bytes
        return True

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        fields = dict(data)
        fields["status"] = EvalStatus(fields["status"])
        return cls(**fields)


Language = Literal["c", "c++"]  # the source languages a unit is compiled from


@dataclass(frozen=True)
class IRModule:
    """Unoptimized IR as bitcode (bitcode keeps use-list order, which codegen can see; text loses it)."""

    name: str
    bitcode: bytes
    triple: str
    source_filename: str = ""  # as the IR names its source (clang: the file compiled); "": unknown
    language: Language | None = None  # the compile's (`-x c++`, a C++ driver), else the IR's; None: unknown

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.bitcode).hexdigest()


OBJECTIVE_TERMS = ("size", "instructions", "compile-time", "perf", "security")
# Terms measured by a probe attached to the evaluator per module (not by the backends), and the EvalResult
# field each one fills.
PROBED_TERMS = {"perf": "runtime", "security": "security"}


@dataclass(frozen=True)
class Objective:
    """`L = sum(w * metric / metric at -Oz) / sum(w)`: 1.0 is -Oz, lower is better, failures are infinite.

    Terms: `size` (object bytes), `instructions` (IR instructions), `compile-time` (opt + codegen seconds),
    `perf` (the program's runtime, needs a runtime probe: a result without one scores infinite), `security`
    (1 + the security-relevant items of the unoptimized module that the list's output lost, summed over kinds:
    clearing writes, stack protection, fortified calls, overflow checks, ...; needs a security probe,
    `validate.security_guard.SecurityMeter`). So `security` is 1.0 at -Oz's loss, below 1 where a list keeps more
    than -Oz and above where it keeps less: deterministic, one `opt -S` per list, no model needed.
    """

    weights: tuple[tuple[str, float], ...] = (("size", 1.0),)

    @property
    def size_only(self) -> bool:
        """Whether object size is the only term (what a code-size estimate can screen for)."""
        return all(name == "size" for name, _ in self.weights)

    def weighs(self, term: str) -> bool:
        return any(name == term and weight for name, weight in self.weights)

    @classmethod
    def parse(cls, text: str) -> Objective:
        """`size=1,compile-time=0.1` -> Objective; unknown or repeated terms and bad weights raise ValueError,
        naming the term."""
        weights: list[tuple[str, float]] = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, _, value = (s.strip() for s in part.partition("="))
            if name not in OBJECTIVE_TERMS:
                raise ValueError(f"unknown objective term {name!r}: use {', '.join(OBJECTIVE_TERMS)}")
            if any(name == seen for seen, _ in weights):
                raise ValueError(f"{name} is given twice: give each term once")
            weights.append((name, _weight(part, value)))
        if not weights or sum(w for _, w in weights) == 0:
            raise ValueError("the objective needs at least one term with a positive weight")
        return cls(tuple(weights))

    def __str__(self) -> str:
        return ",".join(f"{name}={weight:g}" for name, weight in self.weights)

    @property
    def needs_runtime(self) -> bool:
        return self.weighs("perf")

    @property
    def probed_terms(self) -> tuple[str, ...]:
        """The weighted terms that need a probe attached to the evaluator (PROBED_TERMS)."""
        return tuple(name for name, weight in self.weights if weight > 0 and name in PROBED_TERMS)

    def score(self, result: EvalResult, reference: EvalResult) -> float:
        if not result.ok or not reference.ok:
            return math.inf
        total = sum(weight for _, weight in self.weights)
        terms = (weight * _ratio(_metric(result, name), _metric(reference, name)) for name, weight in self.weights)
        return sum(terms) / total


def _weight(term: str, value: str) -> float:
    """The weight of one objective term (`size=0.5`; `size` alone weighs 1): a finite number, 0 or more."""
    try:
        weight = float(value or 1)
    except ValueError:
        raise ValueError(f"{term}: the weight is not a number (e.g. size=1,compile-time=0.1)") from None
    if not (math.isfinite(weight) and weight >= 0):
        raise ValueError(f"{term}: the weight must be a finite number, 0 or more")
    return weight


def _metric(result: EvalResult, name: str) -> float:
    if name == "size":
        return float(result.size_bytes or 0)
    if name == "instructions":
        return float(result.ir_instruction_count or 0)
    if name in PROBED_TERMS:
        value = getattr(result, PROBED_TERMS[name])
        return float(value) if value is not None else math.inf
    return result.opt_seconds + result.codegen_seconds


def _ratio(value: float, reference: float) -> float:
    if math.isinf(value) or math.isinf(reference):
        return math.inf  # e.g. no runtime: the program failed to run
    return value / reference if reference > 0 else (1.0 if value == 0 else math.inf)
