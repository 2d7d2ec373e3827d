"""The security guard's counts: security-relevant code in an optimized module, counted per kind, so that a list
can be held to what -Oz keeps (`validate.guards` applies them with the other guards; the `security` objective
term is `SecurityMeter`).

Size search rewards deleting code, and the code most at risk looks dead to an optimizer: clearing a secret
before its memory is freed or goes out of scope (CWE-14), checks whose failure path looks unreachable
(CWE-733), stack-protector and `_FORTIFY_SOURCE` instrumentation. The counts are read from `opt -S` text (and,
only when some function asks for a stack protector, from `llc`'s assembly), one line at a time:

- clearing writes: a write of zero (`store` of 0/null/zeroinitializer, `llvm.memset`, `memset` or
  `__memset_chk` with value 0, volatile or not) into memory of limited life: traced through `getelementptr`,
  casts and locals holding one pointer (stored once, loaded back: code no pass promoted) in the same function to
  an `alloca` (goes out of scope), a pointer the function passes to `free`,
  or a pointer argument (memory the caller owns: a wiping helper, or an outlined clear); and after which, in
  the function's text, that memory is not read again (no load, no call or return that takes it, other than
  `free`, `llvm.lifetime.end` and further clearing). Text order stands for execution order: a read reached
  only through a loop's back edge is missed, so a zero write at the top of a loop may count;
- clearing calls: `explicit_bzero`, `memset_s`, `memset_explicit`, `sodium_memzero`, `OPENSSL_cleanse`,
  `SecureZeroMemory`, ... (libraries' don't-optimize-me clears; plain `bzero` is not one: LLVM turns it into
  `memset`, which then counts as a clearing write);
- volatile accesses: volatile loads and stores, and memset/memcpy/memmove intrinsics with the volatile flag;
- protected functions: definitions with `ssp`, `sspstrong` or `sspreq`; canary checks: calls of
  `__stack_chk_fail` in the assembly;
- fortified calls: calls of `__*_chk` functions (`__memcpy_chk`, `__sprintf_chk`, ...);
- overflow checks: `llvm.*.with.overflow` calls, and conditional branches to a block that calls `abort`,
  `__assert_fail`, `__chk_fail`, `__stack_chk_fail`, `llvm.trap`, `llvm.ubsantrap` or a `__ubsan_handle_*`.

Counts are per site and per module, by kind, and a list's are compared with a reference's (-Oz's, or the
unoptimized module's). A function whose body only calls another defined function that something besides such
functions uses (a thunk: what `mergefunc` leaves of an identical copy whose address is taken) counts that
function's items as its own, since calling it runs them, unless the same function called it in the reference
(directly or through thunks): then it was a wrapper whose other code the list removed, not a copy merged away,
and crediting it would hide what went. Comparing totals still errs both ways (docs/security.md lists the
cases): strict where a merge leaves no thunk, where only thunks use the callee, or where a list inlines a helper
less than -Oz (a false refusal); lenient where a list removes one item while creating another of the same kind
elsewhere: a strong screen, not a proof.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Container, Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import CompileOptions, EvalResult, IRModule
from stitchopt.diagnostics import telling_line
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import STDIN_TO_STDOUT, llc_command, opt_command
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S, run_tool

CLEARING_FUNCTIONS = frozenset(
    {
        "explicit_bzero",
        "memset_s",
        "memset_explicit",
        "sodium_memzero",
        "OPENSSL_cleanse",
        "SecureZeroMemory",
        "RtlSecureZeroMemory",
        "mbedtls_platform_zeroize",
        "wc_ForceZero",
        "gnutls_memset",
        "secure_zero_memory",
    }
)
TRAP_FUNCTIONS = frozenset({"abort", "__assert_fail", "__chk_fail", "__stack_chk_fail", "llvm.trap", "llvm.ubsantrap"})
PROTECTOR_ATTRIBUTES = frozenset({"ssp", "sspstrong", "sspreq"})
FREE_FUNCTIONS = frozenset({"free", "cfree", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm"})

_LOCAL = r"%[-\w.$]+"
_NAME = r'(?:"[^"]*"|[-\w.$]+)'
_DEFINE_RE = re.compile(rf"^define\b.*?@({_NAME})\((.*)\)(.*)\{{\s*$")
_ARG_RE = re.compile(rf"({_LOCAL})(?=\s*[,)]|$)")
_ATTR_GROUP_RE = re.compile(r"^attributes (#\d+) = \{(.*)\}")
_ATTR_REF_RE = re.compile(r"#\d+")
_ASSIGN_RE = re.compile(rf"^\s*({_LOCAL}) = (.*)$")
_DERIVE_RE = re.compile(
    rf"^(?:getelementptr (?:inbounds |nuw |nusw |inrange\(\S+\) )*[^,]+, ptr ({_LOCAL})"
    rf"|(?:bitcast|addrspacecast) ptr ({_LOCAL}) to)"
)
_MERGE_RE = re.compile(rf"^(?:select [^,]+, ptr ({_LOCAL}), ptr ({_LOCAL})|phi ptr (.*))$")
_STORE_PTR_RE = re.compile(rf"^\s*store ptr ({_LOCAL}), ptr ({_LOCAL})")
_LOAD_PTR_RE = re.compile(rf"^load ptr, ptr ({_LOCAL})")
_ZERO_STORE_RE = re.compile(
    rf"^\s*store (?:volatile )?[^,]*? (?:0|null|zeroinitializer|false|0\.0+e\+00), ptr ({_LOCAL})"
)
_STORE_RE = re.compile(rf"^\s*store (?:volatile )?[^,]*?(?: ({_LOCAL}))?, ptr ({_LOCAL})")
_ZERO_SET_RE = re.compile(
    r"@(?:llvm\.memset(?:\.inline)?\.[\w.]+|memset(?:\.inline)?|__memset_chk)"
    rf"\(ptr [^%,]*({_LOCAL}), i(?:8|32) (?:\w+ )*0,"
)
_CALLEE_RE = re.compile(rf"\b(?:call|invoke)\b[^@]*@({_NAME})\(")
_LABEL_RE = re.compile(r'^("[^"]*"|[-\w.$]+):')
_COND_BR_RE = re.compile(rf"^\s*br i1 [^,]+, label ({_LOCAL}), label ({_LOCAL})")
_VOLATILE_RE = re.compile(
    r"^\s*(?:\S+ = )?(?:load|store) volatile\b|@llvm\.mem(?:set|cpy|move)(?:\.inline)?\.[\w.]+\(.*, i1 true\)"
)
_OVERFLOW_RE = re.compile(r"@llvm\.\w+\.with\.overflow\.")
_FORTIFIED_RE = re.compile(r"^__\w+_chk$")
_CANARY_RE = re.compile(r"^\s*[a-z][\w.]*\s.*\b__stack_chk_fail\b")
_IGNORED_CALLS = re.compile(r"^llvm\.(?:lifetime|dbg|assume|experimental\.noalias)")


@dataclass(frozen=True)
class HardeningCounts:
    """Security-relevant items of one module, by kind (see the module docstring for each rule)."""

    clearing_writes: int = 0
    clearing_calls: int = 0
    volatile_accesses: int = 0
    protected_functions: int = 0
    canary_checks: int = 0
    fortified_calls: int = 0
    overflow_checks: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, int]) -> HardeningCounts:
        return cls(**{f.name: int(data.get(f.name, 0)) for f in fields(cls)})

    def plus(self, other: HardeningCounts) -> HardeningCounts:
        return HardeningCounts(**{kind: getattr(self, kind) + getattr(other, kind) for kind in KINDS})


KINDS = tuple(f.name for f in fields(HardeningCounts))


@dataclass(frozen=True)
class ThunkCredit:
    """What a thunk takes over from the shared functions its call reaches (thunks of thunks followed)."""

    function: str
    callee: str  # the function its body calls
    items: HardeningCounts


@dataclass(frozen=True)
class ModuleHardening:
    """One module's counts as a comparison needs them: every item in the function that holds it (`own`), what
    each thunk would take over, and which defined functions call which (for when this module is the reference)."""

    own: HardeningCounts
    thunks: tuple[ThunkCredit, ...] = ()  # sorted by function
    calls: frozenset[tuple[str, str]] = frozenset()  # (caller, defined function it calls, directly or through thunks)

    def against(self, reference: ModuleHardening) -> HardeningCounts:
        """The counts to compare with `reference.own`: each thunk credited with its callee's items unless its
        function called that callee in the reference (a wrapper left as a bare call: what it lost stays lost).
        Against itself, every thunk called its callee: `own`."""
        total = self.own
        for thunk in self.thunks:
            if (thunk.function, thunk.callee) not in reference.calls:
                total = total.plus(thunk.items)
        return total

    def with_canaries(self, canaries: int) -> ModuleHardening:
        return replace(self, own=replace(self.own, canary_checks=canaries))

    def to_dict(self) -> dict[str, Any]:
        return {
            "own": self.own.to_dict(),
            "thunks": [[t.function, t.callee, t.items.to_dict()] for t in self.thunks],
            "calls": sorted(map(list, self.calls)),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModuleHardening:
        return cls(
            HardeningCounts.from_dict(data["own"]),
            tuple(ThunkCredit(f, c, HardeningCounts.from_dict(i)) for f, c, i in data["thunks"]),
            frozenset((caller, callee) for caller, callee in data["calls"]),
        )


_SINGULAR = {
    "clearing_writes": "clearing write",
    "clearing_calls": "clearing call",
    "volatile_accesses": "volatile access",
    "protected_functions": "stack-protected function",
    "canary_checks": "stack canary check",
    "fortified_calls": "fortified call",
    "overflow_checks": "overflow/bounds check",
}


# The kinds a list must not have fewer of. Protected functions are shown, not compared: a function leaves by
# inlining or deletion and its protector attribute goes with its body into the caller; what protection means in
# the object is the canary check, which is compared.
COMPARED_KINDS = tuple(kind for kind in KINDS if kind != "protected_functions")


def weakened(reference: HardeningCounts, candidate: HardeningCounts) -> dict[str, int]:
    """Compared kinds of which `candidate` has fewer than `reference`, and how many fewer (empty: none)."""
    ref, cand = reference.to_dict(), candidate.to_dict()
    return {kind: ref[kind] - cand[kind] for kind in COMPARED_KINDS if cand[kind] < ref[kind]}


def lost(reference: HardeningCounts, candidate: HardeningCounts) -> int:
    """How many items `candidate` lacks relative to `reference`, summed over kinds (more in one kind does not
    make up for fewer in another)."""
    return sum(weakened(reference, candidate).values())


def describe(removed: Mapping[str, int]) -> str:
    """`{"clearing_writes": 1, "fortified_calls": 2}` -> "1 clearing write, 2 fortified calls"."""
    return ", ".join(f"{n} {_SINGULAR[kind]}{'' if n == 1 else 's'}" for kind, n in removed.items())


def needs_codegen(ir_text: str) -> bool:
    """Whether some function asks for a stack protector, so that canaries must be counted in assembly."""
    return any(
        PROTECTOR_ATTRIBUTES & set(match.group(2).split())
        for match in map(_ATTR_GROUP_RE.match, ir_text.splitlines())
        if match
    )


def read_counts(ir_text: str) -> ModuleHardening:
    """Every kind but canary checks, from textual IR."""
    lines = ir_text.splitlines()
    protector_groups = {
        m.group(1) for m in map(_ATTR_GROUP_RE.match, lines) if m and PROTECTOR_ATTRIBUTES & set(m.group(2).split())
    }
    own: dict[str, dict[str, int]] = {}  # function -> the items of its own body
    called: dict[str, set[str]] = {}  # function -> what its body calls
    thunks: dict[str, str] = {}  # function -> the defined or declared function its body only calls
    protected = 0
    name = ""  # the function being read, its body and its arguments
    body: list[str] = []
    arguments: list[str] = []
    inside = False
    for line in lines:
        if inside:
            if line.startswith("}"):
                own[name] = dict.fromkeys(KINDS, 0)
                called[name] = _count_function(arguments, body, own[name])
                if (target := _thunk_target(body)) is not None:
                    thunks[name] = target
                inside = False
            else:
                body.append(line.split(";", 1)[0].rstrip() if ";" in line and '"' not in line else line)
            continue
        match = _DEFINE_RE.match(line)
        if match is not None:
            inside, name, body = True, match.group(1), []
            arguments = _ARG_RE.findall(match.group(2))
            attributes = set(match.group(3).split())
            if attributes & PROTECTOR_ATTRIBUTES or set(_ATTR_REF_RE.findall(match.group(3))) & protector_groups:
                protected += 1
    callers = Counter(thunks.values())
    uses = _mentions(ir_text) if thunks else Counter()
    shared = {target for target, n in callers.items() if target in own and uses[target] - 1 > n}
    counts = dict.fromkeys(KINDS, 0)
    credits: list[ThunkCredit] = []
    for function, items in own.items():
        # The shared functions a thunk's call reaches, thunks of thunks followed, not back to the thunk itself.
        reached = _thunk_chain(thunks[function], thunks, shared - {function}) if function in thunks else []
        if reached:
            taken = {kind: sum(own[r][kind] for r in reached) if kind in _THUNK_KINDS else 0 for kind in KINDS}
            credits.append(ThunkCredit(function, thunks[function], HardeningCounts(**taken)))
        for kind in KINDS:
            counts[kind] += items[kind]
    counts["protected_functions"] = protected
    calls = frozenset(
        (caller, reached)
        for caller, callees in called.items()
        for callee in callees
        for reached in _thunk_chain(callee, thunks, own)  # the defined functions a call of it runs
    )
    return ModuleHardening(HardeningCounts(**counts), tuple(sorted(credits, key=lambda c: c.function)), calls)


# What a thunk takes over from the function it calls: every kind read from a body (a protector attribute stays
# with the function that has it).
_THUNK_KINDS = tuple(kind for kind in KINDS if kind not in ("protected_functions", "canary_checks"))
_CAST_RE = re.compile(rf"^\s*{_LOCAL} = (?:bitcast|addrspacecast|ptrtoint|inttoptr|zext|sext|trunc) ")
_GLOBAL_RE = re.compile(rf"@({_NAME})")
_THUNK_CALL_RE = re.compile(rf"^\s*(?:{_LOCAL} = )?(?:tail |musttail |notail )?call\b")


def _thunk_target(body: list[str]) -> str | None:
    """The function a body only calls (casts and `ret` aside), or None: the shape `mergefunc` gives a merged
    copy, and a wrapper's."""
    instructions = [line for line in body if line.strip() and _LABEL_RE.match(line) is None]
    calls = [line for line in instructions if _THUNK_CALL_RE.match(line)]
    if len(calls) != 1 or not instructions[-1].lstrip().startswith("ret"):
        return None
    if any(not _CAST_RE.match(line) for line in instructions[:-1] if line is not calls[0]):
        return None
    callee = _CALLEE_RE.search(calls[0])
    return callee.group(1) if callee is not None else None


def _mentions(ir_text: str) -> Counter[str]:
    """How many times the module mentions each global name (`@NAME`): a defined function's definition, calls and
    address uses."""
    return Counter(_GLOBAL_RE.findall(ir_text))


def _thunk_chain(start: str | None, thunks: Mapping[str, str], within: Container[str]) -> list[str]:
    """`start` and the functions its thunks call, followed while they are `within` (each once: a cycle ends)."""
    reached: list[str] = []
    current = start
    while current is not None and current in within and current not in reached:
        reached.append(current)
        current = thunks.get(current)
    return reached


def count_canaries(assembly: str) -> int:
    """Calls (or tail jumps) of `__stack_chk_fail` in assembly: one per protected frame's check."""
    return sum(1 for line in assembly.splitlines() if _CANARY_RE.match(line) and not line.lstrip().startswith("."))


def _count_function(arguments: list[str], body: list[str], counts: dict[str, int]) -> set[str]:
    """Add the body's items to `counts`; return the functions it calls."""
    roots: dict[str, str] = {}
    merges: dict[str, list[str]] = {}  # a select or phi of pointers -> the names it chooses from
    slots: dict[str, str | None] = {}  # a local holding a pointer -> the one pointer stored there (None: several)
    allocas: set[str] = set()
    freed: set[str] = set()
    trap_blocks: set[str] = set()
    label = "%0"  # an unnamed entry block; only its label, never a branch target, matters
    callees: list[str | None] = []
    for line in body:
        if (m := _LABEL_RE.match(line)) is not None:
            label = "%" + m.group(1)
        callee = m.group(1) if (m := _CALLEE_RE.search(line)) is not None else None
        callees.append(callee)
        if callee is not None and (callee in TRAP_FUNCTIONS or callee.startswith("__ubsan_handle_")):
            trap_blocks.add(label)
        if (m := _ASSIGN_RE.match(line)) is not None:
            name, value = m.groups()
            if value.startswith("alloca "):
                allocas.add(name)
            elif (d := _DERIVE_RE.match(value)) is not None:
                roots[name] = _root(d.group(1) or d.group(2), roots)
            elif (d := _LOAD_PTR_RE.match(value)) is not None and slots.get(d.group(1)) is not None:
                roots[name] = _root(str(slots[d.group(1)]), roots)
            elif (d := _MERGE_RE.match(value)) is not None:
                merges[name] = [d.group(1), d.group(2)] if d.group(1) else re.findall(rf"\[ ({_LOCAL}),", d.group(3))
        if (m := _STORE_PTR_RE.match(line)) is not None:
            slots[m.group(2)] = m.group(1) if m.group(2) not in slots else None
        if callee in FREE_FUNCTIONS and (p := re.search(rf"\(ptr [^%,]*({_LOCAL})", line)) is not None:
            freed.add(_root(p.group(1), roots))
    limited = allocas | freed | set(arguments)
    limited |= {name for name, chosen in merges.items() if chosen and all(_root(c, roots) in limited for c in chosen)}
    for index, (line, callee) in enumerate(zip(body, callees, strict=True)):
        if callee is not None:
            if callee in CLEARING_FUNCTIONS:
                counts["clearing_calls"] += 1
            elif _FORTIFIED_RE.match(callee):
                counts["fortified_calls"] += 1
        counts["volatile_accesses"] += bool(_VOLATILE_RE.search(line))
        counts["overflow_checks"] += bool(_OVERFLOW_RE.search(line))
        if (m := _COND_BR_RE.match(line)) is not None and {m.group(1), m.group(2)} & trap_blocks:
            counts["overflow_checks"] += 1
        target = _zero_write(line)
        if target is not None:
            root = _root(target, roots)
            if root in limited and not _read_later(root, roots, body[index + 1 :], callees[index + 1 :]):
                counts["clearing_writes"] += 1
    return {callee for callee in callees if callee is not None}


def _zero_write(line: str) -> str | None:
    """The pointer a line writes zeros to, if it does."""
    match = _ZERO_STORE_RE.match(line) or _ZERO_SET_RE.search(line)
    return match.group(1) if match is not None else None


def _root(name: str, roots: Mapping[str, str]) -> str:
    return roots.get(name, name)


def _read_later(root: str, roots: Mapping[str, str], lines: Iterable[str], callees: Iterable[str | None]) -> bool:
    """Whether any of `lines` may read the memory of `root` (see the rule in the module docstring)."""
    derived = {root, *(name for name, r in roots.items() if r == root)}
    for line, callee in zip(lines, callees, strict=True):
        used = set(re.findall(_LOCAL, line)) & derived
        if not used:
            continue
        if _zero_write(line) is not None or callee in CLEARING_FUNCTIONS or callee in FREE_FUNCTIONS:
            continue
        if callee is not None and _IGNORED_CALLS.match(callee):
            continue
        if (m := _ASSIGN_RE.match(line)) is not None and m.group(1) in derived and _DERIVE_RE.match(m.group(2)):
            continue
        store = _STORE_RE.match(line)
        if store is not None and store.group(1) not in derived:
            continue  # a write into the memory, not a read of it or an escape of its address
        return True
    return False


class HardeningError(Exception):
    """opt or llc failed on the module."""


def counts_of_text(
    toolchain: Toolchain, ir_text: str, options: CompileOptions, timeout: float = DEFAULT_TIMEOUT_S
) -> ModuleHardening:
    """The counts of an optimized module's text; `llc` runs only when some function has a stack protector."""
    counts = read_counts(ir_text)
    if not needs_codegen(ir_text):
        return counts
    argv = llc_command(toolchain.tool("llc"), flags=options.llc_flags(), filetype="asm")
    run = run_tool(argv, stdin=ir_text.encode(), timeout=timeout)
    if run.timed_out or run.returncode != 0:
        raise HardeningError(f"llc failed: {telling_line(run.stderr_text)}")
    return counts.with_canaries(count_canaries(run.stdout.decode(errors="replace")))


# What the unoptimized module is counted after: the front end's locals promoted to registers, so that a pointer
# kept in a local is traced to the memory it points to; mem2reg removes no memory access a program can see.
SOURCE_PIPELINE = "function(mem2reg)"


def optimized_text(
    toolchain: Toolchain,
    module: IRModule,
    pipeline: str | None,
    options: CompileOptions,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> str:
    """`module` after `pipeline` as text (None: the unoptimized module, after SOURCE_PIPELINE): one `opt -S`."""
    argv = opt_command(
        toolchain.tool("opt"), pipeline or SOURCE_PIPELINE, flags=options.opt_args(), args=["-S", *STDIN_TO_STDOUT]
    )
    run = run_tool(argv, stdin=module.bitcode, timeout=timeout)
    if run.timed_out:
        raise HardeningError(f"opt timed out after {run.seconds:.0f} s")
    if run.returncode != 0:
        raise HardeningError(f"opt failed: {telling_line(run.stderr_text)}")
    return run.stdout.decode(errors="replace")


def module_counts(
    toolchain: Toolchain,
    module: IRModule,
    pipeline: str | None,
    options: CompileOptions,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> ModuleHardening:
    """The counts of `module` after `pipeline` (None: the unoptimized module): one `opt -S`, plus `llc` only
    when some function has a stack protector."""
    return counts_of_text(toolchain, optimized_text(toolchain, module, pipeline, options, timeout), options, timeout)


COUNTS_KIND = "hardening-counts"  # evaluation-store artifacts: counts by (module, toolchain, pipeline, options)
COUNTS_VERSION = 3  # part of their key: bump when a counting rule changes, so that old counts are not replayed


def cached_counts(
    toolchain: Toolchain,
    store: EvaluationStore | None,
    module: IRModule,
    pipeline: str | None,
    options: CompileOptions,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> ModuleHardening:
    """`module_counts`, remembered in the evaluation store (tuning asks for the same lists again)."""
    key = (module.sha256, toolchain.identity, pipeline or SOURCE_PIPELINE, options.key(), str(COUNTS_VERSION))
    stored = store.get_artifact(COUNTS_KIND, *key) if store is not None else None
    if stored is not None:
        return ModuleHardening.from_dict(json.loads(stored))
    counts = module_counts(toolchain, module, pipeline, options, timeout)
    if store is not None:
        store.put_artifact(COUNTS_KIND, json.dumps(counts.to_dict()).encode(), *key)
    return counts


class SecurityMeter:
    """The objective's `security` term for one module: 1 + the security-relevant items of the unoptimized module
    that a list's output lost (summed over kinds), so -Oz's own loss is the reference the objective divides by.

    From the guard's counts rather than a vulnerability model's risk: deterministic (a search is reproducible),
    cheap (one `opt -S` per list, cached), and it measures what the optimizer did to this program, where a model
    would judge the source, which no pass list changes."""

    def __init__(
        self,
        toolchain: Toolchain,
        store: EvaluationStore | None,
        module: IRModule,
        options: CompileOptions,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.toolchain, self.store, self.module, self.options, self.timeout = toolchain, store, module, options, timeout
        try:
            self.source = cached_counts(toolchain, store, module, None, options, timeout)
        except HardeningError as exc:
            raise InputError(f"{module.name}: cannot read the module for the security term: {exc}") from exc

    def measure(self, pipeline: str, result: EvalResult) -> float | None:
        """The term for `pipeline` (the probe interface: `result` adds nothing the counts need)."""
        return self.value(pipeline)

    def value(self, pipeline: str) -> float | None:
        """None when the list's output cannot be read (the list then fails the term)."""
        try:
            counts = cached_counts(self.toolchain, self.store, self.module, pipeline, self.options, self.timeout)
        except HardeningError:
            return None
        return 1.0 + lost(self.source.own, counts.against(self.source))


@dataclass(frozen=True)
class SecurityComparison:
    """A list's counts beside -Oz's and the unoptimized module's (what `stitchopt eval` shows), each as compared:
    the list's against -Oz's, -Oz's against the source's (`oz_from_source`, thunks credited)."""

    source: HardeningCounts
    oz: HardeningCounts
    passes: HardeningCounts
    oz_from_source: HardeningCounts

    @property
    def removed_by_oz(self) -> dict[str, int]:
        """What -Oz itself removes from the source: a warning, since the guard only holds lists to -Oz."""
        return weakened(self.source, self.oz_from_source)

    @property
    def removed_vs_oz(self) -> dict[str, int]:
        """What the list removes relative to -Oz: non-empty means the list fails the guard."""
        return weakened(self.oz, self.passes)

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {
            "source": self.source.to_dict(),
            "Oz": self.oz.to_dict(),
            "passes": self.passes.to_dict(),
            "removed_by_oz": self.removed_by_oz,
            "removed_vs_oz": self.removed_vs_oz,
        }


def compare_security(
    toolchain: Toolchain,
    store: EvaluationStore | None,
    module: IRModule,
    options: CompileOptions,
    oz_pipeline: str,
    pipeline: str,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> SecurityComparison:
    def counts(chosen: str | None) -> ModuleHardening:
        return cached_counts(toolchain, store, module, chosen, options, timeout)

    source, oz, passes = counts(None), counts(oz_pipeline), counts(pipeline)
    return SecurityComparison(source.own, oz.own, passes.against(oz), oz.against(source))
