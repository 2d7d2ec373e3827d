"""Cheap guards: signs of a miscompile visible in the optimized IR itself, checked before a list can be a best.

A size objective rewards deleting code, so the classic miscompiles look like wins: exported functions or
globals gone, whole function bodies reduced to `unreachable`, code proven undefined and replaced by UB
markers (`store ... ptr poison/null`); and so does removing security-relevant code (clears of memory before
free or end of scope, stack canaries, fortified calls, overflow checks: `validate.security_guard`). Each guard
compares with what -Oz does to the same IR, so code that really is dead or undefined under -Oz too is not held
against a list. Guards are necessary, not sufficient: full validation still runs on the final lists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from stitchopt.core import CompileOptions, IRModule
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S
from stitchopt.validate.security_guard import (
    COUNTS_VERSION,
    HardeningCounts,
    HardeningError,
    ModuleHardening,
    counts_of_text,
    describe,
    needs_codegen,
    optimized_text,
    read_counts,
    weakened,
)

# What the guards check, as part of cache keys of answers chosen under them (a build's object cache): bump it
# when a guard is added or changed. 2: security-relevant code (validate.security_guard) joined the guards.
GUARDS_VERSION = f"2.{COUNTS_VERSION}"
_NAME = r'(?:"[^"]*"|[-a-zA-Z$._0-9]+)'
_DEFINE_RE = re.compile(rf"^define\s+(.*?)@({_NAME})\(")
_GLOBAL_RE = re.compile(rf"^@({_NAME})\s*=\s*(.*?)\b(global|constant|alias|ifunc)\b")
_UB_MARKER_RE = re.compile(r"^\s*store\s.*,\s*ptr (?:null|poison)\b")
_LOCAL_LINKAGES = {"private", "internal"}
_DISCARDABLE_LINKAGES = {"linkonce", "linkonce_odr", "available_externally"}
_DECLARATION_LINKAGES = {"external", "extern_weak"}  # written out only on declarations of globals


@dataclass(frozen=True)
class ModuleSummary:
    required: frozenset[str]  # definitions a linker may need: externally visible and not discardable
    exported: frozenset[str]  # every definition visible outside the module
    unreachable_bodies: frozenset[str]  # defined functions whose whole body is `unreachable`
    ub_markers: int  # stores to null or poison: how LLVM marks code it proved undefined
    hardening: ModuleHardening = ModuleHardening(HardeningCounts())  # canaries only from assembly (Guard reads it)


def summarize(ir_text: str) -> ModuleSummary:
    """Read the facts the guards need from textual IR."""
    required: set[str] = set()
    exported: set[str] = set()
    unreachable: set[str] = set()
    ub_markers = 0
    function: str | None = None
    body: list[str] = []
    for line in ir_text.splitlines():
        if function is not None:
            if line.startswith("}"):
                if body == ["unreachable"]:
                    unreachable.add(function)
                function = None
                continue
            stripped = line.split(";", 1)[0].strip()
            if stripped and not stripped.endswith(":"):
                body.append(stripped)
            ub_markers += bool(_UB_MARKER_RE.match(line))
            continue
        if (match := _DEFINE_RE.match(line)) is not None:
            linkage, name = set(match.group(1).split()), match.group(2)
            function, body = name, []
            _classify(name, linkage, required, exported)
        elif (match := _GLOBAL_RE.match(line)) is not None:
            name, linkage = match.group(1), set(match.group(2).split())
            if not linkage & _DECLARATION_LINKAGES:
                _classify(name, linkage, required, exported)
    return ModuleSummary(
        frozenset(required), frozenset(exported), frozenset(unreachable), ub_markers, read_counts(ir_text)
    )


def _classify(name: str, linkage: set[str], required: set[str], exported: set[str]) -> None:
    if linkage & _LOCAL_LINKAGES:
        return
    exported.add(name)
    if not linkage & _DISCARDABLE_LINKAGES:
        required.add(name)


def suspicious_changes(source: ModuleSummary, reference: ModuleSummary, candidate: ModuleSummary) -> list[str]:
    """Why a candidate's output looks miscompiled; `reference` is -Oz on the same `source` IR."""
    reasons = []
    missing = sorted(source.required - candidate.exported)
    if missing:
        reasons.append(f"exported definitions removed: {_names(missing)}")
    emptied = sorted(candidate.unreachable_bodies - reference.unreachable_bodies - source.unreachable_bodies)
    if emptied:
        reasons.append(f"function bodies reduced to unreachable: {_names(emptied)}")
    if candidate.ub_markers > max(reference.ub_markers, source.ub_markers):
        reasons.append(
            f"{candidate.ub_markers} stores to null/poison (code proven undefined), -Oz has {reference.ub_markers}"
        )
    removed = weakened(reference.hardening.own, candidate.hardening.against(reference.hardening))
    if removed:
        reasons.append(f"security-relevant code removed relative to -Oz: {describe(removed)}")
    return reasons


def _names(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


class Guard:
    """The guards for one program: summaries of its IR and of -Oz on it, computed once. `oz_removed` is the
    security-relevant code of the program that -Oz itself removes (a warning: the guard only holds lists to -Oz)."""

    def __init__(
        self,
        toolchain: Toolchain,
        module: IRModule,
        options: CompileOptions,
        oz_pipeline: str,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.toolchain = toolchain
        self.module = module
        self.options = options
        self.timeout = timeout
        self.oz_pipeline = oz_pipeline
        try:
            self.source = self._summary(None)
            self.reference = self._summary(oz_pipeline)
        except HardeningError as exc:
            raise InputError(f"{module.name}: cannot read the module for the guards: {exc}") from exc
        self.oz_removed = weakened(self.source.hardening.own, self.reference.hardening.against(self.source.hardening))

    def check(self, pipeline: str) -> list[str]:
        """Reasons to distrust `pipeline` on this program; empty when every guard holds."""
        try:
            candidate = self._summary(pipeline)
        except HardeningError as exc:
            return [str(exc)]
        return suspicious_changes(self.source, self.reference, candidate)

    def _summary(self, pipeline: str | None) -> ModuleSummary:
        """The module after `pipeline` (None: as it is, locals promoted); opt fails e.g. when the result does not
        verify. Canary checks need the assembly: llc runs only when a function asks for a stack protector."""
        text = optimized_text(self.toolchain, self.module, pipeline, self.options, self.timeout)
        summary = summarize(text)
        if needs_codegen(text):
            summary = replace(summary, hardening=counts_of_text(self.toolchain, text, self.options, self.timeout))
        return summary
