"""Shrink a failing pass list to a minimal failing one on one program, and write a reproducer for a bug report.

Reduction is delta debugging (ddmin) over the pipeline's top-level elements, then inside each adaptor
(`function(...)`, `cgscc(...)`, `loop-mssa(...)`), and inside `default<Ox>` expanded to the passes it runs.
A candidate sub-list counts as failing only when it fails the same program in the same way (same verdict
status), so reduction cannot drift from a miscompile to an unrelated crash.
"""

from __future__ import annotations

import re
import shlex
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from stitchopt.diagnostics import telling_line
from stitchopt.passes.pipeline import split_top_level
from stitchopt.toolchain.llvm import llc_command, opt_command
from stitchopt.toolchain.process import run_tool
from stitchopt.validate.runner import Validator
from stitchopt.validate.suites import SuiteProgram
from stitchopt.validate.verdicts import ValidationReport, Verdict

T = TypeVar("T")
_ADAPTOR_RE = re.compile(r"^([a-z0-9-]+(?:<[^()]*>)?)\((.*)\)$", re.DOTALL)
_DEFAULT_RE = re.compile(r"^default<O[0-3sz]>$")


def ddmin(items: Sequence[T], fails: Callable[[list[T]], bool]) -> list[T]:
    """Zeller's delta debugging: a 1-minimal failing subsequence of `items` (which must fail)."""
    current = list(items)
    chunks = 2
    while len(current) >= 2:
        size = -(-len(current) // chunks)
        parts = [current[i : i + size] for i in range(0, len(current), size)]
        for index, part in enumerate(parts):
            if fails(part):
                current, chunks = part, 2
                break
            complement = [item for j, other in enumerate(parts) if j != index for item in other]
            if len(parts) > 2 and fails(complement):
                current, chunks = complement, max(chunks - 1, 2)
                break
        else:
            if chunks >= len(current):
                break
            chunks = min(chunks * 2, len(current))
    return current


def reduce_pipeline(pipeline: str, fails: Callable[[str], bool], expand: Callable[[str], str]) -> str:
    """A smaller pipeline on which `fails` still holds; `expand` turns `default<Ox>` into its pass string."""
    return ",".join(_reduce_elements(split_top_level(pipeline), lambda sub: ",".join(sub), fails, expand))


def _reduce_elements(
    elements: list[str], render: Callable[[list[str]], str], fails: Callable[[str], bool], expand: Callable[[str], str]
) -> list[str]:
    """ddmin over `elements` (rendered into a whole pipeline by `render`), then inside each survivor."""
    elements = ddmin(elements, lambda sub: fails(render(sub)))
    index = 0
    while index < len(elements):
        before, after = elements[:index], elements[index + 1 :]

        def splice(parts: list[str], before: list[str] = before, after: list[str] = after) -> str:
            return render([*before, *parts, *after])

        replacement = _reduce_inside(elements[index], splice, fails, expand)
        elements[index : index + 1] = replacement
        index += len(replacement)
    return elements


def _reduce_inside(
    element: str, splice: Callable[[list[str]], str], fails: Callable[[str], bool], expand: Callable[[str], str]
) -> list[str]:
    """The elements that replace `element` once its own contents are reduced."""
    if _DEFAULT_RE.match(element):
        expanded = split_top_level(expand(element))
        if expanded != [element] and fails(splice(expanded)):
            return _reduce_elements(expanded, splice, fails, expand)
        return [element]
    match = _ADAPTOR_RE.match(element)
    if match is None:
        return [element]
    wrap = match.group(1)

    def rewrap(inner: list[str]) -> str:
        return splice([f"{wrap}({','.join(inner)})"])

    inner = _reduce_elements(split_top_level(match.group(2)), rewrap, fails, expand)
    return [f"{wrap}({','.join(inner)})"]


@dataclass(frozen=True)
class Reduction:
    program: SuiteProgram
    original: str
    pipeline: str
    verdict: Verdict
    tests: int  # builds the reduction ran


def reduce_failure(validator: Validator, report: ValidationReport, suite_programs: Sequence[SuiteProgram]) -> Reduction:
    """Reduce the report's first failure to a minimal pass list that still fails that program the same way."""
    if not report.failures:
        raise ValueError("the report has no failure to reduce")
    target = report.failures[0]
    program = next(p for p in suite_programs if p.name == target.program)
    tests = 0

    def fails(pipeline: str) -> bool:
        nonlocal tests
        tests += 1
        return validator.judge(program, pipeline).status is target.status

    reduced = reduce_pipeline(report.pipeline, fails, lambda element: expand_default(validator, element))
    return Reduction(program, report.pipeline, reduced, validator.judge(program, reduced), tests)


def expand_default(validator: Validator, element: str) -> str:
    """The passes `default<Ox>` runs, as opt prints them."""
    run = run_tool(
        opt_command(validator.toolchain.tool("opt"), element, args=["-print-pipeline-passes", "-disable-output", "-"]),
        stdin=b"",
        timeout=60,
    )
    lines = run.stdout.decode().strip().splitlines()
    return lines[-1] if run.returncode == 0 and lines else element


def write_reproducer(validator: Validator, reduction: Reduction, directory: Path) -> Path:
    """A directory an LLVM developer can use as is: IR, source, the exact commands, expected vs actual output."""
    directory.mkdir(parents=True, exist_ok=True)
    program = reduction.program
    builder = validator.builder
    suffix = ".cpp" if program.language == "c++" else ".c"
    (directory / f"program{suffix}").write_text(program.source)
    dis = run_tool([validator.toolchain.tool("llvm-dis"), "-", "-o", "-"], stdin=builder.ir(program), timeout=120)
    (directory / "input.ll").write_bytes(dis.stdout)
    (directory / "pipeline.txt").write_text(reduction.pipeline + "\n")
    (directory / "original-pipeline.txt").write_text(reduction.original + "\n")
    if program.stdin is not None:
        (directory / "stdin.txt").write_bytes(program.stdin)
    script = directory / "reproduce.sh"
    script.write_text(_script(validator, reduction))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    references = builder.references(program)
    expected = references.outcomes[0] if references.outcomes else None
    (directory / "expected.txt").write_text(
        "exit status 0\n"
        if expected is None or program.check.value == "exit-zero"
        else f"{expected.describe()}\n{expected.stdout.decode(errors='replace')}"
    )
    actual = run_tool(["sh", str(script)], cwd=str(directory), timeout=600)
    (directory / "actual.txt").write_bytes(actual.stdout + actual.stderr)
    (directory / "README.md").write_text(_readme(validator, reduction, telling_line(actual.stderr_text)))
    return directory


def _script(validator: Validator, reduction: Reduction) -> str:
    toolchain, options, program = validator.toolchain, validator.options, reduction.program
    builder = validator.builder
    link = builder.link_command(program, Path("program.o"), Path("program"))
    run = ["./program", *program.run_args]
    lines = [
        "#!/bin/sh",
        f"# Reproduces: {reduction.verdict.status.value} on {program.name} (LLVM {toolchain.version_string})",
        "set -e",
        'cd "$(dirname "$0")"',
        shlex.join(
            opt_command(
                toolchain.tool("opt"),
                reduction.pipeline,
                flags=options.opt_args(),
                args=["input.ll", "-o", "optimized.bc"],
            )
        ),
        shlex.join(
            llc_command(toolchain.tool("llc"), flags=options.llc_flags(), args=["optimized.bc", "-o", "program.o"])
        ),
        shlex.join(link),
        "set +e",
        shlex.join(run) + (" < stdin.txt" if program.stdin is not None else " < /dev/null"),
        'echo "exit status $?"',
    ]
    return "\n".join(lines) + "\n"


def _readme(validator: Validator, reduction: Reduction, actual: str) -> str:
    verdict, toolchain = reduction.verdict, validator.toolchain
    elements = len(split_top_level(reduction.pipeline))
    llvm = (toolchain.version_text.strip().splitlines() or [toolchain.version_string])[0]
    return (
        f"# {verdict.status.value}: {reduction.program.name} under a {elements}-element pass list\n\n"
        f"- LLVM: {llvm}\n"
        f"- reduced pipeline: `{reduction.pipeline}`\n"
        f"- original pipeline: see `original-pipeline.txt`\n"
        f"- verdict: {verdict.detail or verdict.status.value}\n"
        f"- reduction: {reduction.tests} builds\n\n"
        "Run `./reproduce.sh`: it optimizes `input.ll` with the reduced list, generates code, links and runs it.\n"
        "`expected.txt` is the behaviour of the plain -O0 build, `actual.txt` what the script printed here.\n"
    )
