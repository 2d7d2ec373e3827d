"""Build and run one suite program under a pass list, the way the autotuner measured it.

The list runs on the program's IR from the same front end the autotuner uses, with the same `opt` flags, and
the object comes from `llc` with the same codegen options; only linking and running are added. IR and
reference runs are cached in the evaluation store, so a second list costs one `opt`, `llc`, link and run.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import CompileOptions, EvalStatus
from stitchopt.diagnostics import telling_line
from stitchopt.evaluation.subprocess_backend import classify
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import FRONTEND_LEVEL, STDIN_TO_STDOUT, frontend_command, llc_command, opt_command
from stitchopt.toolchain.process import DEFAULT_TIMEOUT_S, ToolRun, run_tool
from stitchopt.validate.sandbox import Limits, RunOutcome, Sandbox, scratch_directory
from stitchopt.validate.suites import Check, SuiteProgram
from stitchopt.validate.verdicts import Verdict, VerdictStatus

# Part of the keys of cached references and verdicts: "whole-output" since runs compare all of their stdout (by
# size and sha256), not its first MiB.
JUDGING = "whole-output"
# A symbol the linker found no definition of: GNU ld's and lld's wording.
_UNDEFINED = re.compile(r"undefined reference to `([^']+)'|undefined symbol: (.+)$", re.MULTILINE)
MAX_NAMED_SYMBOLS = 8


@dataclass(frozen=True)
class References:
    """How the program behaves when built plainly by clang, or why it is excluded from judging lists."""

    outcomes: tuple[RunOutcome, ...] = ()
    excluded: str | None = None
    repeatable: bool = True  # False: excluded by a time limit, which may be the machine's load (not cached)

    def to_json(self) -> bytes:
        return json.dumps({"outcomes": [o.to_dict() for o in self.outcomes], "excluded": self.excluded}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> References:
        raw = json.loads(data)
        return cls(tuple(RunOutcome.from_dict(o) for o in raw["outcomes"]), raw["excluded"])


class ProgramBuilder:
    """Compiles, links and runs suite programs with one toolchain. Thread-safe: each build has its own
    scratch directory, and the store serializes its own access. Programs run in `sandbox`."""

    def __init__(
        self,
        toolchain: Toolchain,
        store: EvaluationStore | None = None,
        *,
        limits: Limits = Limits(),
        tool_timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.toolchain = toolchain
        self.store = store
        self.limits = limits
        self.sandbox = Sandbox(limits)
        self.tool_timeout = tool_timeout

    # -- cached per program -------------------------------------------------------------------------------

    def references(self, program: SuiteProgram) -> References:
        """Build and run at each reference level (cached); a program that cannot be judged is excluded."""
        cached = self._get("reference", program.digest, JUDGING)
        if cached is not None:
            return References.from_json(cached)
        references = self._build_references(program)
        if references.repeatable:
            self._put("reference", references.to_json(), program.digest, JUDGING)
        return references

    def ir(self, program: SuiteProgram) -> bytes:
        """The program's unoptimized IR from the autotuner's front end (cached)."""
        cached = self._get("suite-ir", program.digest, FRONTEND_LEVEL)
        if cached is not None:
            return cached
        run = self._tool(
            frontend_command(
                [self.toolchain.tool("clang"), *self._language_args(program)], FRONTEND_LEVEL, args=STDIN_TO_STDOUT
            ),
            stdin=program.source.encode(),
        )
        if run.returncode != 0:
            raise BuildFailed(f"front end failed: {telling_line(run.stderr_text)}")
        self._put("suite-ir", run.stdout, program.digest, FRONTEND_LEVEL)
        return run.stdout

    # -- one list on one program ---------------------------------------------------------------------------

    def judge(self, program: SuiteProgram, pipeline: str, options: CompileOptions) -> Verdict:
        """Build the program with `pipeline` and judge its run against the program's check."""
        references = self.references(program)
        if references.excluded is not None:
            return Verdict(program.name, VerdictStatus.EXCLUDED, references.excluded)
        try:
            ir = self.ir(program)
        except BuildFailed as exc:
            return Verdict(program.name, VerdictStatus.EXCLUDED, str(exc))
        with scratch_directory("build") as scratch:
            work = Path(scratch)
            optimized = self.optimize(program, ir, pipeline, options, work)
            if isinstance(optimized, Verdict):
                return optimized
            run_key = (program.digest, optimized, options.codegen_key(), JUDGING)
            cached = self._get("verdict-by-ir", *run_key)
            if cached is not None:
                return Verdict.from_dict(json.loads(cached), cached=True)
            exe = self.link(program, work, options)
            if isinstance(exe, Verdict):
                verdict = exe
            else:
                outcome = self.run(program, exe)
                status, detail = judge_outcome(program, outcome, references)
                verdict = Verdict(program.name, status, detail, outcome.seconds)
            if verdict.status.repeatable:
                self._put("verdict-by-ir", json.dumps(verdict.to_dict()).encode(), *run_key)
            return verdict

    def optimize(
        self, program: SuiteProgram, ir: bytes, pipeline: str, options: CompileOptions, work: Path
    ) -> str | Verdict:
        """`opt` on `ir` into `work`/optimized.bc: the optimized module's sha256, or a failure verdict."""
        (work / "input.bc").write_bytes(ir)
        opt = self._tool(
            opt_command(
                self.toolchain.tool("opt"),
                pipeline,
                flags=options.opt_args(),
                args=[str(work / "input.bc"), "-o", str(work / "optimized.bc")],
            )
        )
        if classify(opt) is not EvalStatus.OK:
            return Verdict(program.name, VerdictStatus.OPT_FAILED, _tool_failure("opt", opt))
        return hashlib.sha256((work / "optimized.bc").read_bytes()).hexdigest()

    def link(self, program: SuiteProgram, work: Path, options: CompileOptions) -> Path | Verdict:
        """`llc` and link `work`/optimized.bc into an executable, or a failure verdict."""
        llc = self._tool(
            llc_command(
                self.toolchain.tool("llc"),
                flags=options.llc_flags(),
                args=[str(work / "optimized.bc"), "-o", str(work / "program.o")],
            )
        )
        if classify(llc) is not EvalStatus.OK:
            return Verdict(program.name, VerdictStatus.CODEGEN_FAILED, _tool_failure("llc", llc))
        link = self._tool([*self.link_command(program, work / "program.o", work / "program")])
        if link.returncode != 0:
            return Verdict(program.name, VerdictStatus.LINK_FAILED, _tool_failure("link", link))
        return work / "program"

    # -- commands ------------------------------------------------------------------------------------------

    def link_command(self, program: SuiteProgram, obj: Path, exe: Path) -> list[str]:
        driver = ["--driver-mode=g++"] if program.language == "c++" else []
        return [self.toolchain.tool("clang"), *driver, str(obj), "-o", str(exe), *program.link_args]

    def run(self, program: SuiteProgram, exe: Path, wrapper: Sequence[str] = ()) -> RunOutcome:
        """Run in the sandbox; `wrapper` (e.g. valgrind) goes before the executable."""
        return self.sandbox.run(exe, program.run_args, stdin=program.stdin, wrapper=wrapper)

    def _language_args(self, program: SuiteProgram) -> list[str]:
        return ["-x", program.language, "-w", *program.compile_args]

    def _build_references(self, program: SuiteProgram) -> References:
        outcomes = []
        for level in program.reference_levels:
            with scratch_directory("ref") as scratch:
                exe = Path(scratch) / "program"
                build = self._tool(
                    [
                        self.toolchain.tool("clang"),
                        *(["--driver-mode=g++"] if program.language == "c++" else []),
                        *self._language_args(program),
                        f"-{level}",
                        "-",
                        "-o",
                        str(exe),
                        *program.link_args,
                    ],
                    stdin=program.source.encode(),
                )
                if build.timed_out:
                    return References(
                        excluded=f"clang -{level} did not finish within {self.tool_timeout:g} s", repeatable=False
                    )
                if build.returncode != 0:
                    return References(excluded=build_failure(level, build.stderr_text))
                outcome = self.run(program, exe)
            if outcome.timed_out:
                return References(
                    excluded=f"does not finish at -{level} within {self.limits.wall_seconds:g} s", repeatable=False
                )
            if program.check is Check.EXIT_ZERO and outcome.returncode != 0:
                return References(excluded=f"fails its own test at -{level} ({outcome.describe()})")
            outcomes.append(outcome)
        first = outcomes[0]
        for level, other in zip(program.reference_levels[1:], outcomes[1:], strict=True):
            if not other.behaves_like(first):
                return References(
                    excluded=f"-{program.reference_levels[0]} and -{level} builds behave differently "
                    "(undefined behaviour or a nondeterministic program): nothing to compare against"
                )
        return References(tuple(outcomes))

    def _tool(self, argv: list[str], stdin: bytes | None = None) -> ToolRun:
        return run_tool(argv, stdin=stdin, timeout=self.tool_timeout)

    def _get(self, kind: str, *parts: str) -> bytes | None:
        if self.store is None:
            return None
        return self.store.get_artifact(kind, self.toolchain.identity, *parts)

    def _put(self, kind: str, value: bytes, *parts: str) -> None:
        if self.store is not None:
            self.store.put_artifact(kind, value, self.toolchain.identity, *parts)


class BuildFailed(Exception):
    """A suite program could not be turned into IR: it is excluded, not held against the list."""


def build_failure(level: str, stderr: str) -> str:
    """Why a program does not build at `level`; a link failure names what nothing defines, which clang's own last
    line ("linker command failed") does not."""
    undefined = sorted({ld or lld.strip() for ld, lld in _UNDEFINED.findall(stderr)})
    if not undefined:
        return f"does not build at -{level}: {telling_line(stderr)}"
    named = ", ".join(undefined[:MAX_NAMED_SYMBOLS]) + (", ..." if len(undefined) > MAX_NAMED_SYMBOLS else "")
    return f"does not link on its own at -{level}: nothing defines {named}"


def _tool_failure(tool: str, run: ToolRun) -> str:
    if run.timed_out:
        return f"{tool} timed out after {run.seconds:.0f} s"
    kind = "crashed" if classify(run) is EvalStatus.CRASH else f"exited {run.returncode}"
    message = telling_line(run.stderr_text)
    return f"{tool} {kind}: {message}" if message else f"{tool} {kind}"


def judge_outcome(program: SuiteProgram, outcome: RunOutcome, references: References) -> tuple[VerdictStatus, str]:
    """Compare a run with what the program's check demands."""
    if outcome.timed_out:
        return VerdictStatus.TIMEOUT, outcome.describe()
    if program.check is Check.EXIT_ZERO:
        if outcome.returncode == 0:
            return VerdictStatus.PASSED, ""
        message = telling_line(outcome.stderr.decode(errors="replace"))
        aborted = outcome.returncode == -signal.SIGABRT  # assert() or abort(): the test said no
        status = VerdictStatus.CRASHED if outcome.returncode < 0 and not aborted else VerdictStatus.TEST_FAILED
        return status, f"{outcome.describe()}: {message}" if message else outcome.describe()
    expected = references.outcomes[0]
    if outcome.behaves_like(expected):
        return VerdictStatus.PASSED, ""
    if outcome.returncode < 0 and expected.returncode >= 0:
        return VerdictStatus.CRASHED, outcome.describe()
    return VerdictStatus.WRONG_OUTPUT, outcome.difference(expected)
