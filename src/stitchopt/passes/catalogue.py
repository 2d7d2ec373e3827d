"""The searchable transformation passes of one LLVM, derived from `opt --print-passes` by explicit rules.

Every rule that drops a pass has a name and a reason (`EXCLUSION_RULES`); `stitchopt passes --json` shows
which rule dropped what, so the catalogue of a new LLVM version can be reviewed rather than trusted.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from stitchopt.errors import ToolchainError
from stitchopt.toolchain.device import DEVICE_TRIPLE
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool


class Level(str, enum.Enum):
    """Where a pass runs; decides the adaptor that wraps it in a pipeline string."""

    MODULE = "module"
    CGSCC = "cgscc"
    FUNCTION = "function"
    LOOP = "loop"  # loop and loop-nest passes, inside function(loop(...)) or function(loop-mssa(...))


# `opt --print-passes` section headings we read, and the level of their passes. Analyses, alias analyses
# and machine passes are never searchable.
SECTIONS = {
    "Module passes": Level.MODULE,
    "Module passes with params": Level.MODULE,
    "CGSCC passes": Level.CGSCC,
    "CGSCC passes with params": Level.CGSCC,
    "Function passes": Level.FUNCTION,
    "Function passes with params": Level.FUNCTION,
    "LoopNest passes": Level.LOOP,
    "Loop passes": Level.LOOP,
    "Loop passes with params": Level.LOOP,
}

# Loop passes that abort with "requires MemorySSA" unless run in `loop-mssa(...)`.
NEEDS_MEMORY_SSA = frozenset({"licm", "lnicm"})

# Default optimization pipelines, accepted by opt but not listed by --print-passes.
DEFAULT_PIPELINES = tuple(f"default<{level}>" for level in ("O0", "O1", "O2", "O3", "Os", "Oz"))


@dataclass(frozen=True)
class ExclusionRule:
    name: str
    reason: str
    matches: Callable[[str], bool]


def _names(*names: str) -> Callable[[str], bool]:
    chosen = frozenset(names)
    return lambda name: name in chosen


def _pattern(regex: str) -> Callable[[str], bool]:
    compiled = re.compile(regex)
    return lambda name: compiled.fullmatch(name) is not None


EXCLUSION_RULES: tuple[ExclusionRule, ...] = (
    ExclusionRule(
        "printer-or-viewer",
        "prints or draws analysis results; never changes the IR",
        _pattern(r"(print|dot-|view-).*|instcount|aa-eval|pa-eval|lint|count-visits"),
    ),
    ExclusionRule(
        "debugging-utility",
        "verifiers, no-ops, crash triggers, renamers and pass-manager plumbing",
        _pattern(
            r"verify(<.*>)?|.*debugify|trigger-.*|no-op-.*|invalidate<all>|instnamer|metarenamer|helloworld"
            r"|require<.*>|recompute-globalsaa|transform-warning|forceattrs|inject-tli-mappings"
        ),
    ),
    ExclusionRule(
        "instrumentation",
        "sanitizers, profiling, coverage and hardening insert run-time checks; not optimizations",
        _pattern(
            r"(asan|hwasan|msan|tsan|tsan-module|dfsan|nsan|kcfi|cfguard|bounds-checking|safe-stack"
            r"|stack-protector|poison-checking|jmc-instrumenter|ee-instrument|cross-dso-cfi|lowertypetests"
            r"|sancov-module|sanmd-module|instrprof|instrorderfile|ctx-instr-lower|insert-gcov-profiling"
            r"|lower-allow-check|cg-profile|embed-bitcode|synthetic-counts-propagation"
            r"|pseudo-probe.*|sample-profile|memprof.*|pgo-.*)(<.*>)?"
        ),
    ),
    ExclusionRule(
        "not-semantics-preserving",
        "changes linkage, symbol names, EH or atomic semantics, or moves code out of its function",
        _names(
            "internalize",
            "strip",
            "strip-dead-debug-info",
            "strip-debug-declare",
            "strip-nondebug",
            "strip-nonlinetable-debuginfo",
            "strip-dead-prototypes",
            "rewrite-symbols",
            "name-anon-globals",
            "extract-blocks",
            "loop-extract",
            "lower-invoke",
            "lower-atomic",
            "expand-variadics",
            "lower-global-dtors",
            "lower-emutls",
            "lower-ifunc",
            "function-import",
            "wholeprogramdevirt",
            "inliner-ml-advisor-release",
        ),
    ),
    ExclusionRule(
        "debug-info-only",
        "only adds, removes or rewrites debug information or annotations",
        _names(
            "add-discriminators",
            "declare-to-assign",
            "redundant-dbg-inst-elim",
            "annotation2metadata",
            "annotation-remarks",
        ),
    ),
    ExclusionRule(
        "other-targets-or-runtimes",
        "meant for GPUs, OpenMP, coroutines, Objective-C, garbage collectors, guards or other ABIs; "
        "structurizecfg is known to turn CPU code into `unreachable`",
        _pattern(
            r"structurizecfg|fix-irreducible|unify-loop-exits|infer-address-spaces|dxil-upgrade|hipstdpar-.*"
            r"|openmp-opt.*|coro-.*|objc-arc.*|gc-lowering|shadow-stack-gc-lowering|rewrite-statepoints-for-gc"
            r"|place-safepoints|strip-gc-relocates|lower-guard-intrinsic|make-guards-explicit|guard-widening"
            r"|lower-widenable-condition|loop-predication|win-eh-prepare(<.*>)?|wasm-eh-prepare"
            r"|sjlj-eh-prepare|hardware-loops(<.*>)?|tlshoist"
        ),
    ),
    ExclusionRule(
        "codegen-preparation",
        "IR passes that `llc` runs itself right before instruction selection",
        _names(
            "codegenprepare",
            "dwarf-eh-prepare",
            "callbr-prepare",
            "atomic-expand",
            "interleaved-access",
            "interleaved-load-combine",
            "indirectbr-expand",
            "expand-large-div-rem",
            "expand-large-fp-convert",
            "expand-memcmp",
            "pre-isel-intrinsic-lowering",
            "scalarize-masked-mem-intrin",
            "select-optimize",
            "typepromotion",
        ),
    ),
    ExclusionRule(
        "nondeterministic",
        "its result depends on memory layout, so a measurement would not reproduce: gvn-sink orders PHIs by "
        "pointer (llvm-project issue 77852; the last such ordering was fixed only in 2026, PR 205952)",
        _names("gvn-sink"),
    ),
    ExclusionRule(
        "composite-pipeline",
        "a whole pipeline, offered separately as default<O0..O3,Os,Oz>",
        _pattern(r"function-simplification(<.*>)?"),
    ),
)


# GPU device code (`load_catalogue(..., device=True)`): the passes meant for it come back, structurizecfg
# excepted (an AMDGPU requirement that NVPTX does not have), and NVPTX's own IR passes join, which opt parses
# for an nvptx64 module but `--print-passes` does not list.
DEVICE_ALLOWED = frozenset(
    {"infer-address-spaces", "openmp-opt", "openmp-opt-cgscc", "fix-irreducible", "unify-loop-exits"}
)
DEVICE_PASSES = (("nvvm-reflect", Level.FUNCTION), ("nvvm-intr-range", Level.FUNCTION))


@dataclass(frozen=True)
class CataloguePass:
    """One searchable pass: its name, nesting level and the spelling written into pipelines."""

    name: str
    level: Level
    spelling: str
    parameters: str = ""  # the `<...>` options opt lists for it, for reference

    @property
    def adaptor(self) -> str | None:
        """The adaptor this pass needs inside a module pipeline, or None for module passes."""
        if self.level is Level.MODULE:
            return None
        if self.level is Level.LOOP:
            return "loop-mssa" if self.name in NEEDS_MEMORY_SSA else "loop"
        return "cgscc" if self.level is Level.CGSCC else "function"


@dataclass(frozen=True)
class ExcludedPass:
    name: str
    level: Level
    rule: str


@dataclass(frozen=True)
class Catalogue:
    """Searchable passes of one LLVM version, in `opt --print-passes` order."""

    llvm_version: str
    passes: tuple[CataloguePass, ...]
    excluded: tuple[ExcludedPass, ...]
    device: bool = False  # for GPU device code (nvptx64)

    def __len__(self) -> int:
        return len(self.passes)

    def get(self, name: str) -> CataloguePass | None:
        base = name.split("<", 1)[0]
        for entry in self.passes:
            if entry.name == base:
                return entry
        return None

    def excluded_pass(self, name: str) -> ExcludedPass | None:
        for candidate in (name, name.split("<", 1)[0]):
            found = next((e for e in self.excluded if e.name == candidate), None)
            if found is not None:
                return found
        return None

    def names(self) -> list[str]:
        return [p.name for p in self.passes]

    @cached_property
    def identity(self) -> str:
        """A short hash of the LLVM version and the searchable spellings: labels and models made with one
        catalogue name passes that another LLVM may not have."""
        target = [DEVICE_TRIPLE] if self.device else []
        text = "\n".join([self.llvm_version, *target, *(f"{p.level.value}:{p.spelling}" for p in self.passes)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_print_passes(text: str) -> list[tuple[Level, str, str]]:
    """(level, name, parameters) for every pass in the sections we read, in listed order."""
    entries: list[tuple[Level, str, str]] = []
    level: Level | None = None
    for line in text.splitlines():
        if not line.startswith(" "):
            level = SECTIONS.get(line.rstrip().rstrip(":"))
            continue
        if level is None or not line.strip():
            continue
        item = line.strip()
        name, _, params = item.partition("<")
        if name in ("print", "verify", "invalidate", "require") or "<" in params:
            name = item  # spellings like print<domtree> and invalidate<all> are whole pass names
            params = ""
        entries.append((level, name, params.rstrip(">") if params else ""))
    return entries


def _spelling(name: str, params: str) -> str:
    """The safe way to write a pass: instcombine must not verify its fixpoint (random lists trip it)."""
    if name == "instcombine" and "no-verify-fixpoint" in params.split(";"):
        return "instcombine<no-verify-fixpoint>"
    return name


def build_catalogue(print_passes_text: str, llvm_version: str, *, device: bool = False) -> Catalogue:
    listed = parse_print_passes(print_passes_text)
    if device:
        listed += [(level, name, "") for name, level in DEVICE_PASSES]
    passes: list[CataloguePass] = []
    excluded: list[ExcludedPass] = []
    seen: set[str] = set()
    for level, name, params in listed:
        if name in seen:  # e.g. guard-widening is listed as both a function and a loop pass
            continue
        seen.add(name)
        rule = next((r.name for r in EXCLUSION_RULES if r.matches(name)), None)
        if rule is not None and not (device and name in DEVICE_ALLOWED):
            excluded.append(ExcludedPass(name, level, rule))
        else:
            passes.append(CataloguePass(name, level, _spelling(name, params), params))
    return Catalogue(llvm_version=llvm_version, passes=tuple(passes), excluded=tuple(excluded), device=device)


def load_catalogue(toolchain: Toolchain, *, device: bool = False) -> Catalogue:
    """Ask this toolchain's `opt` for its passes and apply the rules; `device`: for GPU device code."""
    target = [f"-mtriple={DEVICE_TRIPLE}"] if device else []
    run = run_tool([toolchain.tool("opt"), *target, "--print-passes"], timeout=60)
    if run.returncode != 0:
        raise ToolchainError(f"`{toolchain.tool('opt')} --print-passes` failed: {run.stderr_tail(300).strip()}")
    return build_catalogue(run.stdout.decode(), toolchain.version_string, device=device)
