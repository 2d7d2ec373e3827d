"""Validation results as data: one verdict per program, one report per (pass list, suite)."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass
from typing import Any


class VerdictStatus(str, enum.Enum):
    PASSED = "passed"
    EXCLUDED = "excluded"  # the program itself is broken (does not build or pass at its reference levels)
    OPT_FAILED = "opt-failed"  # opt rejected, crashed on or hung on the list
    CODEGEN_FAILED = "codegen-failed"
    LINK_FAILED = "link-failed"
    CRASHED = "crashed"  # the test program died on a signal
    TIMEOUT = "timeout"  # the test program ran past its limit
    TEST_FAILED = "test-failed"  # a self-test exited non-zero
    WRONG_OUTPUT = "wrong-output"  # exit status or output differ from the reference builds

    @property
    def counts_against(self) -> bool:
        return self not in (VerdictStatus.PASSED, VerdictStatus.EXCLUDED)

    @property
    def miscompiled(self) -> bool:
        """The list built a program that misbehaves (the dangerous kind: a compiler crash is at least loud)."""
        return self in (
            VerdictStatus.CRASHED,
            VerdictStatus.TIMEOUT,
            VerdictStatus.TEST_FAILED,
            VerdictStatus.WRONG_OUTPUT,
        )

    @property
    def repeatable(self) -> bool:
        """Worth caching: a timeout may be the machine's load, not the list."""
        return self is not VerdictStatus.TIMEOUT


@dataclass(frozen=True)
class Verdict:
    program: str
    status: VerdictStatus
    detail: str = ""
    seconds: float = 0.0
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"program": self.program, "status": self.status.value, "detail": self.detail, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: dict[str, Any], cached: bool = False) -> Verdict:
        return cls(data["program"], VerdictStatus(data["status"]), data["detail"], data["seconds"], cached)


@dataclass(frozen=True)
class ValidationReport:
    """How one pass list fared on one suite. `complete` is False when a fail-fast run stopped early."""

    suite: str
    pipeline: str
    toolchain: str
    verdicts: tuple[Verdict, ...]
    seconds: float
    complete: bool = True

    @property
    def failures(self) -> list[Verdict]:
        """Failing programs, miscompiles first."""
        failing = [v for v in self.verdicts if v.status.counts_against]
        return sorted(failing, key=lambda v: not v.status.miscompiled)

    @property
    def excluded(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status is VerdictStatus.EXCLUDED]

    @property
    def counted(self) -> int:
        return len(self.verdicts) - len(self.excluded)

    @property
    def passed(self) -> bool:
        """Every counted program passed, and there was at least one."""
        return self.complete and self.counted > 0 and not self.failures

    def summary(self) -> str:
        counts = Counter(v.status.value for v in self.verdicts)
        parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        verdict = "PASSED" if self.passed else "NO VERDICT" if self.complete and not self.counted else "FAILED"
        return f"{verdict}: {self.suite}, {len(self.verdicts)} programs ({parts}) in {self.seconds:.1f} s"

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "pipeline": self.pipeline,
            "toolchain": self.toolchain,
            "passed": self.passed,
            "complete": self.complete,
            "seconds": self.seconds,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ValidationReport:
        verdicts = tuple(Verdict.from_dict(v) for v in data["verdicts"])
        return cls(data["suite"], data["pipeline"], data["toolchain"], verdicts, data["seconds"], data["complete"])
