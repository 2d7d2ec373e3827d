"""What `stitchopt demo` shows: the demo corpus at clang's levels and the shipped model's static and jit choices
on it, measured by one Evaluator so that every compilation shares its cache and cores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from stitchopt.datasets.demo import DATASET, VERSION, demo_programs
from stitchopt.datasets.uri import SCHEME
from stitchopt.evaluation.comparison import Comparison, compare_many
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.corpus_choices import CorpusChoice, choose_for_corpus
from stitchopt.learning.kinds import load_model
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue


@dataclass(frozen=True)
class DemoRun:
    corpus: str  # the dataset and its size, as the tables and the report name it
    comparisons: list[Comparison]
    choices: list[CorpusChoice]
    sources: tuple[tuple[str, str], ...]  # what the numbers come from: dataset, toolchain, catalogue, model


def run_demo(evaluator: Evaluator, *, k: int = 5, on_program: Callable[[int, int], None] | None = None) -> DemoRun:
    """`on_program(index, total)` as each program's choices are made (from worker threads, in any order)."""
    programs = sorted(demo_programs().values())
    catalogue = load_catalogue(evaluator.toolchain)
    model = load_model(DEFAULT_MODEL_DIR, catalogue)
    comparisons = compare_many(evaluator, programs)
    choices = choose_for_corpus(
        evaluator,
        catalogue,
        model,
        programs,
        k=k,
        on_program=None if on_program is None else lambda index: on_program(index, len(programs)),
    )
    dataset = f"{SCHEME}{DATASET}-v{VERSION}"
    sources = (
        ("dataset", dataset),
        ("toolchain", evaluator.toolchain.identity),
        ("catalogue", catalogue.identity),
        ("model", model.identity),
    )
    return DemoRun(f"{dataset} ({len(programs)} programs)", comparisons, choices, sources)
