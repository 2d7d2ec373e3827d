"""The static analyzers C users already run, as anchors for the vulnerability detector on Juliet cases.

Each analyzer sees a case's own source files (with the suite's support headers), as a user would run it; a
labeled function is predicted bad when any finding lands within its lines, and the finding's checker gives a
CWE guess where one fits. Both run one file set per case, so a flaw whose data crosses files (the `_5x`/`_6x`
variants) is seen only as far as each tool looks across translation units: clang's analyzer not at all,
cppcheck through its whole-program pass.

- clang (`clang --analyze`): the default checkers less `deadcode` (Juliet stores dead values on both sides)
  and `security.insecureAPI` (it flags the same memcpy/strcpy calls in good and bad code), plus the
  checkers for these CWEs that clang 19 still calls alpha: `alpha.security.ArrayBoundV2` and
  `alpha.unix.cstring.OutOfBounds` (buffer CWEs), `alpha.security.MallocOverflow` (CWE680) and
  `alpha.security.taint.GenericTaint` (input from fgets/recv/fscanf, which ArrayBoundV2 and core checkers use).
- cppcheck: `--enable=warning,portability` (errors are always on; portability holds `pointerOutOfBounds`) and
  `--inconclusive`; `style` is left out, as its findings (conditions always true, unread variables, variable
  scope) are Juliet's control-flow scaffolding, and `allocaCalled` is suppressed: Juliet's stack cases call
  `alloca` on both sides.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.juliet import JulietCase, function_lines, support_digest
from stitchopt.errors import InputError, ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

ANALYZERS = ("clang", "cppcheck")
ANALYZER_TIMEOUT_S = 120.0
ARTIFACT_KIND = "juliet-analyzer"
VERSION = "1"  # bump when the command lines or the parsing change
CLANG_DISABLED = ("deadcode", "security.insecureAPI")
CLANG_ENABLED = (
    "alpha.security.ArrayBoundV2",
    "alpha.unix.cstring.OutOfBounds",
    "alpha.security.MallocOverflow",
    "alpha.security.taint.GenericTaint",
)
CPPCHECK_ARGS = ("--enable=warning,portability", "--inconclusive", "--suppress=allocaCalled", "-q")
_CPPCHECK_TEMPLATE = "{file}:{line}:{column}: {severity}: {message} [{id}]"
_FINDING_RE = re.compile(r"^(.+?):(\d+):\d+: (?:warning|error|style|portability|performance): (.*) \[([\w.-]+)\]$")
BUFFER_CWES = ("CWE121", "CWE122", "CWE124", "CWE126", "CWE127")
# (checker or id, message pattern or "") -> the CWEs a finding is consistent with; first match wins.
_CWE_RULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("core.DivideZero", "", ("CWE369",)),
    ("zerodiv", "", ("CWE369",)),
    ("zerodivcond", "", ("CWE369",)),
    ("core.NullDereference", "", ("CWE476",)),
    ("nullPointer", "", ("CWE476",)),
    ("nullPointerRedundantCheck", "", ("CWE476",)),
    ("nullPointerArithmetic", "", ("CWE476",)),
    ("ctunullpointer", "", ("CWE476",)),
    ("unix.Malloc", "free released memory|released twice", ("CWE415",)),
    ("unix.Malloc", "after it is (freed|released)", ("CWE416",)),
    ("unix.Malloc", "leak", ("CWE401",)),
    ("unix.Malloc", "not memory allocated by|address of the local|address of a local|free\\(\\) is", ("CWE590",)),
    ("doubleFree", "", ("CWE415",)),
    ("deallocuse", "", ("CWE416",)),
    ("deallocret", "", ("CWE416",)),
    ("memleak", "", ("CWE401",)),
    ("memleakOnRealloc", "", ("CWE401",)),
    ("leakReturnValNotUsed", "", ("CWE401",)),
    ("autovarInvalidDeallocation", "", ("CWE590",)),
    ("mismatchAllocDealloc", "", ("CWE590",)),
    ("core.uninitialized", "", ("CWE457",)),
    ("core.CallAndMessage", "uninitiali[sz]ed|garbage", ("CWE457",)),
    ("core.UndefinedBinaryOperatorResult", "garbage|uninitiali[sz]ed", ("CWE457",)),
    ("uninitvar", "", ("CWE457",)),
    ("uninitdata", "", ("CWE457",)),
    ("uninitStructMember", "", ("CWE457",)),
    ("ctuuninitvar", "", ("CWE457",)),
    ("legacyUninitvar", "", ("CWE457",)),
    ("alpha.security.MallocOverflow", "", ("CWE680",)),
    ("integerOverflow", "", ("CWE190",)),
    ("alpha.security.ArrayBoundV2", "preceding|negative|underflow", ("CWE124", "CWE127")),
    ("negativeIndex", "", ("CWE124", "CWE127")),
    ("alpha.security.ArrayBoundV2", "", BUFFER_CWES),
    ("alpha.unix.cstring.OutOfBounds", "", BUFFER_CWES),
    ("arrayIndexOutOfBounds", "", BUFFER_CWES),
    ("arrayIndexOutOfBoundsCond", "", BUFFER_CWES),
    ("bufferAccessOutOfBounds", "", BUFFER_CWES),
    ("outOfBounds", "", BUFFER_CWES),
    ("pointerOutOfBounds", "", BUFFER_CWES),
    ("ctuArrayIndex", "", BUFFER_CWES),
)


@dataclass(frozen=True)
class AnalyzerFinding:
    """One diagnostic: where, which checker, and the CWEs it is consistent with (empty when none fits)."""

    file: str
    line: int
    checker: str
    message: str
    cwes: tuple[str, ...]

    @property
    def cwe(self) -> str | None:
        """The single CWE guess, where the checker names exactly one."""
        return self.cwes[0] if len(self.cwes) == 1 else None


def cwe_guess(checker: str, message: str) -> tuple[str, ...]:
    """The CWEs of the 15 in Juliet that a finding of `checker` with `message` points to; () when none fits."""
    for rule, pattern, cwes in _CWE_RULES:
        if (checker == rule or checker.startswith(rule + ".")) and re.search(pattern, message, re.I):
            return cwes
    return ()


def _cppcheck() -> str:
    found = shutil.which("cppcheck")
    if found is None:
        raise ToolchainError(
            "cppcheck is not installed: install the Debian package `cppcheck` (apt-get install cppcheck)"
        )
    return found


def analyzer_version(toolchain: Toolchain, analyzer: str) -> str:
    """What identifies the analyzer's answers: the tool's version and this module's command lines."""
    if analyzer == "clang":
        return f"clang {toolchain.identity} {VERSION} {CLANG_DISABLED} {CLANG_ENABLED}"
    if analyzer == "cppcheck":
        run = run_tool([_cppcheck(), "--version"], timeout=ANALYZER_TIMEOUT_S)
        return f"{run.stdout.decode().strip()} {VERSION} {CPPCHECK_ARGS}"
    raise InputError(f"unknown analyzer {analyzer!r}: use {' or '.join(ANALYZERS)}")


def _command(toolchain: Toolchain, analyzer: str, files: Sequence[str], support_dir: Path) -> list[str]:
    if analyzer == "clang":
        return [
            toolchain.tool("clang"),
            "--analyze",
            "--analyzer-output",
            "text",
            "-fno-caret-diagnostics",
            "-fno-color-diagnostics",
            "-w",
            f"-I{support_dir}",
            "-Xanalyzer",
            f"-analyzer-disable-checker={','.join(CLANG_DISABLED)}",
            "-Xanalyzer",
            f"-analyzer-checker={','.join(CLANG_ENABLED)}",
            *files,
        ]
    return [_cppcheck(), *CPPCHECK_ARGS, f"--template={_CPPCHECK_TEMPLATE}", f"-I{support_dir}", *files]


def case_findings(
    toolchain: Toolchain,
    case: JulietCase,
    support_dir: Path,
    analyzer: str,
    store: EvaluationStore | None = None,
    *,
    version: str | None = None,
) -> list[AnalyzerFinding]:
    """Every finding of `analyzer` on the case's files, cached in the store's artifacts."""
    version = version or analyzer_version(toolchain, analyzer)
    key = (case.digest, support_digest(support_dir), version)
    cached = store.get_artifact(ARTIFACT_KIND, *key) if store is not None else None
    if cached is not None:
        return [AnalyzerFinding(**{**row, "cwes": tuple(row["cwes"])}) for row in json.loads(cached)]
    with tempfile.TemporaryDirectory(prefix="stitchopt-analyze-") as scratch:
        for name, source in case.files.items():
            (Path(scratch) / name).write_text(source, encoding="utf-8")
        argv = _command(toolchain, analyzer, sorted(case.files), support_dir.resolve())
        run = run_tool(argv, timeout=ANALYZER_TIMEOUT_S, cwd=scratch)
    if run.timed_out:
        warnings.warn(
            f"{case.id}: {analyzer} timed out after {ANALYZER_TIMEOUT_S:.0f} s; no findings counted", stacklevel=2
        )
        return []
    if run.returncode != 0:
        raise InputError(f"{case.id}: {analyzer} failed: {run.stderr_tail(300).strip()}")
    findings = _parse(run.stderr_text + run.stdout.decode(errors="replace"), set(case.files))
    if store is not None:
        store.put_artifact(ARTIFACT_KIND, json.dumps([asdict(f) for f in findings]).encode(), *key)
    return findings


def _parse(output: str, files: set[str]) -> list[AnalyzerFinding]:
    found = set()
    for line in output.splitlines():
        match = _FINDING_RE.match(line.strip())
        if match is None or match.group(1) not in files:
            continue
        file, number, message, checker = match.groups()
        found.add(AnalyzerFinding(file, int(number), checker, message, cwe_guess(checker, message)))
    return sorted(found, key=lambda f: (f.file, f.line, f.checker, f.message))


def analyze_case(
    toolchain: Toolchain,
    case: JulietCase,
    support_dir: Path,
    analyzer: str,
    store: EvaluationStore | None = None,
    *,
    version: str | None = None,
) -> dict[str, AnalyzerFinding | None]:
    """Each labeled function -> the finding that makes it predicted bad (one with a CWE guess first), or None."""
    findings = case_findings(toolchain, case, support_dir, analyzer, store, version=version)
    answers: dict[str, AnalyzerFinding | None] = {}
    for name in sorted(case.functions):
        inside = [f for f in findings if _within(case, name, f)]
        answers[name] = min(inside, key=lambda f: (not f.cwes, f.line), default=None)
    return answers


def _within(case: JulietCase, function: str, finding: AnalyzerFinding) -> bool:
    lines = function_lines(case.files[finding.file], function)
    return lines is not None and lines[0] <= finding.line <= lines[1]


def analyzer_predictions(
    toolchain: Toolchain,
    cases: Sequence[JulietCase],
    support_dir: Path,
    analyzer: str,
    store: EvaluationStore | None = None,
    jobs: int = 1,
) -> dict[tuple[str, str], AnalyzerFinding | None]:
    """(case id, function name) -> its finding or None, for every labeled function of `cases`."""
    version = analyzer_version(toolchain, analyzer)

    def one(case: JulietCase) -> Mapping[str, AnalyzerFinding | None]:
        return analyze_case(toolchain, case, support_dir, analyzer, store, version=version)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        answers = pool.map(one, cases)
        return {
            (case.id, name): finding
            for case, found in zip(cases, answers, strict=True)
            for name, finding in found.items()
        }
