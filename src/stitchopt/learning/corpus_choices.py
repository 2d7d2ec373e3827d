"""The shipped model applied to a corpus the way a build would use it, for `stitchopt demo`: static and jit
choices per program, each answer checked by running the program itself against its -O0/-O2 builds (a list
that changes its output is not taken), never larger than -Oz."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from stitchopt.apply.choose import Choice, choose
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.warm import warm_caches
from stitchopt.models.list_model import ListModel
from stitchopt.passes.catalogue import Catalogue
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import ProgramRun, self_check_for


@dataclass(frozen=True)
class CorpusChoice:
    program: str
    static: Choice
    jit: Choice


def choose_for_corpus(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    paths: Sequence[Path],
    *,
    k: int = 5,
    on_program: Callable[[int], None] | None = None,
) -> list[CorpusChoice]:
    modules = [load_module(evaluator.toolchain, path) for path in paths]
    warm_caches(evaluator, catalogue, model, modules, k=k, common=0)  # every compilation in one parallel batch

    def one(index: int) -> CorpusChoice:
        """Only the self-checks are left to run (builds and runs of one program): programs go in parallel."""
        path, module = paths[index], modules[index]
        check = self_check_for(evaluator, path, ProgramRun())
        static = choose(evaluator, catalogue, model, module, mode="static", validation=check)
        jit = choose(evaluator, catalogue, model, module, mode="jit", k=k, validation=check)
        if on_program is not None:
            on_program(index)
        return CorpusChoice(path.stem, static, jit)

    with ThreadPoolExecutor(max_workers=evaluator.jobs) as pool:
        return list(pool.map(one, range(len(paths))))
