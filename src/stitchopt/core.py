"""Frozen value types shared by every layer: what is evaluated and what came out."""

from __future__ import annotations

import enum
import hashlib
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any


class EvalStatus(str, enum.Enum):
    """How one evaluation ended. Only `ok` results carry sizes."""

    OK = "ok"
    COMPILE_ERROR = "compile-error"  # a tool exited non-zero with a diagnostic (bad pipeline, invalid IR)
    CRASH = "crash"  # a tool died on a signal or hit an LLVM fatal error / assertion
    TIMEOUT = "timeout"  # the process group was killed after the time limit


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

    def opt_args(self) -> tuple[str, ...]:
        return (f"-relocation-model={self.relocation_model}", *self.opt_flags)

    def llc_flags(self) -> tuple[str, ...]:
        return (f"-O{self.codegen_level}", f"-relocation-model={self.relocation_model}")

    def codegen_key(self) -> str:
        """The part that decides the object file of a given optimized module."""
        return f"O{self.codegen_level};reloc={self.relocation_model}"

    def key(self) -> str:
        return f"{self.codegen_key()};opt={' '.join(self.opt_flags)}"


@dataclass(frozen=True)
class PassList:
    """An ordered list of catalogue pass spellings, e.g. ("sroa", "instcombine<no-verify-fixpoint>")."""

    passes: tuple[str, ...]

    def __str__(self) -> str:
        return ",".join(self.passes)

    def __len__(self) -> int:
        return len(self.passes)


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
    ir_hash: str | None = None  # sha256 of the optimized bitcode
    opt_seconds: float = 0.0
    codegen_seconds: float = 0.0
    stderr_tail: str = ""
    sections: dict[str, int] = field(default_factory=dict)
    codegen_cached: bool = False  # sizes came from an earlier codegen of the same optimized IR

    @property
    def ok(self) -> bool:
        return self.status is EvalStatus.OK

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        fields = dict(data)
        fields["status"] = EvalStatus(fields["status"])
        return cls(**fields)


@dataclass(frozen=True)
class IRModule:
    """Unoptimized IR as bitcode (bitcode keeps use-list order, which codegen can see; text loses it)."""

    name: str
    bitcode: bytes
    triple: str

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.bitcode).hexdigest()
