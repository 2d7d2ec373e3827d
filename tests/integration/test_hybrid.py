"""Hybrid mode on a real program: profile counts, hot functions, per-function parts never worse than -Oz."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitchopt.apply.hybrid import REST, hot_functions, optimize_hybrid, profile_counts
from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.demo import demo_programs
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import load_module

pytestmark = pytest.mark.slow


def _source() -> Path:
    return next(p for u, p in demo_programs().items() if u.name == "bigint")


def test_hot_functions_cover_the_share_of_entries() -> None:
    counts = {"main": 1, "mul": 90, "add": 9, "cold": 0}
    assert hot_functions(counts, share=0.9) == ["mul"]
    assert hot_functions(counts, share=0.99) == ["mul", "add"]
    assert hot_functions(counts, share=1.0, limit=1) == ["mul"] and hot_functions({"f": 0}) == []


def test_profile_finds_the_functions_a_run_enters(toolchain: Toolchain) -> None:
    counts = profile_counts(toolchain, _source())
    assert counts["main"] == 1 and len(counts) >= 3 and max(counts.values()) > 1
    with pytest.raises(InputError, match="profiling build failed"):
        profile_counts(toolchain, Path(__file__).parents[1] / "data" / "malformed.c")


def test_hybrid_object_is_never_larger_than_oz_and_names_every_part(
    toolchain: Toolchain, catalogue: Catalogue, tmp_path: Path
) -> None:
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    module = load_module(toolchain, _source())
    hot = hot_functions(profile_counts(toolchain, _source()), limit=2)
    with EvaluationStore(tmp_path / "cache.sqlite") as store, Evaluator(toolchain, store, jobs=2) as evaluator:
        data, choice = optimize_hybrid(evaluator, catalogue, model, module, hot, k=2)
    assert set(choice.lists) == {*hot, REST} and choice.size_bytes <= choice.oz_size_bytes
    assert object_sizes(data).size_bytes == choice.size_bytes and data[:4] == b"\x7fELF"
