"""Shared fixtures: the real LLVM toolchain (found once per session) and the tiny test programs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule
from stitchopt.evaluator import Evaluator
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return find_toolchain()


@pytest.fixture(scope="session")
def catalogue(toolchain: Toolchain) -> Catalogue:
    return load_catalogue(toolchain)


@pytest.fixture(scope="session")
def loop_sum(toolchain: Toolchain) -> IRModule:
    return load_module(toolchain, DATA / "loop_sum.c")


@pytest.fixture()
def store(tmp_path: Path) -> EvaluationStore:
    with EvaluationStore(tmp_path / "cache.sqlite") as opened:
        yield opened  # type: ignore[misc]


@pytest.fixture(params=["subprocess", "native"])
def evaluator(request: pytest.FixtureRequest, toolchain: Toolchain, store: EvaluationStore) -> Iterator[Evaluator]:
    """Both backends: every property tested through this fixture must hold for each."""
    with Evaluator(toolchain, store, backend=request.param) as opened:
        yield opened
