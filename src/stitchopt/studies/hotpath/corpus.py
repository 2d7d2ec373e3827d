"""Runnable programs to profile, and their profiled blocks: the demo corpus, HumanEval-X C++ (self-testing
mains) and Csmith programs (seeded). Splits are fixed by a hash of the program's name, so adding programs
never moves one between splits; the demo corpus (real code written apart from the rest) is never trained on:
part of it validates, the rest is test."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.demo import demo_programs
from stitchopt.diagnostics import exception_line
from stitchopt.errors import StitchoptError
from stitchopt.hotpath.blocks import ProgramBlocks, program_blocks
from stitchopt.hotpath.profile import cached_profile
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.builder import ProgramBuilder
from stitchopt.validate.csmith import csmith_suite
from stitchopt.validate.suites import SuiteProgram, load_suite, source_program

SOURCES = ("demo", "humaneval", "csmith")


@dataclass(frozen=True)
class CorpusProgram:
    origin: str  # one of SOURCES
    program: SuiteProgram

    @property
    def split(self) -> str:
        bucket = int(hashlib.sha256(self.program.name.encode()).hexdigest()[:8], 16) % 5
        if self.origin == "demo":  # never trained on: half checks the cut-off on real code, half is the test
            return "test" if bucket % 2 == 0 else "validation"
        return "test" if bucket == 0 else "validation" if bucket == 1 else "train"


def corpus_programs(
    toolchain: Toolchain,
    store: EvaluationStore | None,
    *,
    csmith: int = 100,
    humaneval: int | None = None,
    data_dir: Path | None = None,
    seed: int = 1,
    jobs: int = 1,
) -> list[CorpusProgram]:
    programs = [CorpusProgram("demo", source_program(path)) for path in sorted(demo_programs().values())]
    programs += [CorpusProgram("humaneval", p) for p in load_suite("humaneval", data_dir).limited(humaneval).programs]
    if csmith:
        suite = csmith_suite(ProgramBuilder(toolchain, store), csmith, first_seed=seed, jobs=jobs)
        programs += [CorpusProgram("csmith", p) for p in suite.programs]
    return programs


@dataclass(frozen=True)
class ProfiledCorpus:
    programs: tuple[tuple[CorpusProgram, ProgramBlocks], ...]
    failed: tuple[str, ...]  # name: why

    def split(self, name: str, origin: str | None = None) -> list[ProgramBlocks]:
        return [
            blocks
            for program, blocks in self.programs
            if program.split == name and (origin is None or program.origin == origin)
        ]


def profile_corpus(
    toolchain: Toolchain,
    programs: Sequence[CorpusProgram],
    store: EvaluationStore | None,
    *,
    jobs: int = 1,
    on_program: Callable[[int], None] | None = None,
) -> ProfiledCorpus:
    """Profile every program (cached in the store); programs that do not build, run or profile are listed
    in `failed`, and programs whose run executed no block are left out."""

    def one(index: int) -> tuple[CorpusProgram, ProgramBlocks | None, str]:
        program = programs[index]
        try:
            profiled = cached_profile(toolchain, program.program, store)
            blocks = program_blocks(toolchain, program.program.name, profiled.plain_ir, profiled.annotated_ir)
            reason = "" if blocks.profiled else "the run wrote no profile"
            return program, blocks if blocks.profiled else None, reason
        except StitchoptError as exc:
            return program, None, exception_line(exc)
        finally:
            if on_program is not None:
                on_program(index)

    kept, failed = [], []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for program, blocks, reason in pool.map(one, range(len(programs))):
            if blocks is not None and any(f.counts is not None and f.counts.sum() > 0 for f in blocks.functions):
                kept.append((program, blocks))
            else:
                failed.append(f"{program.program.name}: {reason or 'no block executed'}")
    return ProfiledCorpus(tuple(kept), tuple(failed))
