"""Wins that look too good are miscompiles until code that ran says otherwise.

A list that makes a unit's object 10% or more smaller than `-Oz` usually deleted code it should have kept (numpy's
half-precision SIMD loops reach a quarter of `-Oz` with lists that pass the IR guards). Such a win enters a
reported number only with run evidence: the program was built with that pipeline and its tests passed, as recorded
by whoever ran them. Without it the win is counted as `-Oz` (what the backup gives once the list is rejected) and
reported apart.

Run evidence is a JSON-lines file of `{"program": <bench:// URI or path>, "pipeline": <-passes= text>}` objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from stitchopt.errors import InputError
from stitchopt.jsonlines import read_json_lines
from stitchopt.toolchain.llvm import PASSES_OPTION

UNVERIFIED_WIN_RATIO = 0.90  # a size ratio to -Oz at or below this needs run evidence
UNVERIFIED_COUNTS_AS = 1.0  # what an unverified win counts as in a headline: -Oz, the backup
LARGE_WIN = f"{100 * (1 - UNVERIFIED_WIN_RATIO):.0f}% or more below -Oz"  # the rule in words, for tables
EVIDENCE_FORMAT = '{"program": URI or path, "pipeline": P} per line'


def program_key(program: str) -> str:
    """A program as evidence names it: a bench:// URI as written, a path made absolute (from the current
    directory), so `./x.c` and `x.c` are one program."""
    return program if program.startswith("bench://") else str(Path(program).resolve())


def pipeline_key(pipeline: str) -> str:
    """A pipeline as `-passes=` text, with or without the `-passes=` prefix."""
    return pipeline.strip().removeprefix(PASSES_OPTION)


@dataclass(frozen=True)
class RunEvidence:
    """(program, pipeline) pairs whose builds ran and passed their tests."""

    pairs: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def load(cls, path: Path) -> RunEvidence:
        pairs = set()
        for record in read_json_lines(path, "run-evidence file", EVIDENCE_FORMAT):
            program, pipeline = record.get("program"), record.get("pipeline")
            if not (isinstance(program, str) and isinstance(pipeline, str) and program and pipeline):
                raise InputError(f"{path}: {str(record)[:80]} lacks a program or a pipeline: write {EVIDENCE_FORMAT}")
            pairs.add((program_key(program), pipeline_key(pipeline)))
        return cls(frozenset(pairs))

    def ran(self, programs: Iterable[str], pipeline: str) -> bool:
        """Whether the pipeline ran on the program, named by any of `programs` (its URI, its file)."""
        return any((program_key(p), pipeline_key(pipeline)) in self.pairs for p in programs)


def unverified_wins(
    ratios: Mapping[str, float], pipelines: Mapping[str, str], programs: Iterable[str], evidence: RunEvidence
) -> tuple[str, ...]:
    """The methods whose ratio is a win at or below UNVERIFIED_WIN_RATIO that no run backs: a method whose
    pipeline is unknown cannot be backed."""
    names = tuple(programs)
    return tuple(
        method
        for method, ratio in ratios.items()
        if ratio <= UNVERIFIED_WIN_RATIO and not (method in pipelines and evidence.ran(names, pipelines[method]))
    )


def counted(ratios: Mapping[str, float], unverified: Iterable[str]) -> dict[str, float]:
    """The ratios a headline uses: each unverified win as -Oz."""
    doubtful = set(unverified)
    return {method: UNVERIFIED_COUNTS_AS if method in doubtful else ratio for method, ratio in ratios.items()}
