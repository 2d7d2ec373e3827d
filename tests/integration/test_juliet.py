"""Juliet cases as neutralized per-function modules, the family split, and the static-analyzer anchors, on the
real shared data (skipped, with the reason, where it is absent)."""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.juliet import (
    ARTIFACT_KIND,
    SPLITS,
    JulietCase,
    JulietFunction,
    case_functions,
    extract_support,
    family_splits,
    juliet_functions,
    juliet_path,
    read_cases,
    select_cases,
)
from stitchopt.errors import InputError, ToolchainError
from stitchopt.features.base import compute
from stitchopt.features.histogram import OpcodeTypeHistogram
from stitchopt.features.module import FeatureModule
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble
from stitchopt.validate.suites import DATA_DIR_ENV
from stitchopt.vulnerability.analyzers import analyze_case, analyzer_predictions
from stitchopt.vulnerability.anchors import anchor_rows

SHARED_DATA = Path(os.environ.get(DATA_DIR_ENV, Path(__file__).parents[3] / "shared" / "data"))
SINGLE = "CWE369_Divide_by_Zero__int_zero_divide_01"
MULTI = "CWE121_Stack_Based_Buffer_Overflow__CWE131_loop_67"  # two files and a struct type named after the case
NULL_DEREFERENCE = "CWE476_NULL_Pointer_Dereference__int_01"


@pytest.fixture(scope="module")
def cases() -> dict[str, JulietCase]:
    try:
        path = juliet_path(SHARED_DATA)
    except InputError as exc:
        pytest.skip(str(exc))
    return {case.id: case for case in read_cases(path)}


@pytest.fixture(scope="module")
def support(cases: dict[str, JulietCase], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_support(SHARED_DATA, tmp_path_factory.mktemp("juliet"))


@pytest.fixture(scope="module")
def compiled(
    toolchain: Toolchain, cases: dict[str, JulietCase], support: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[JulietFunction], EvaluationStore]:
    store = EvaluationStore(tmp_path_factory.mktemp("cache") / "store.sqlite")
    chosen = [cases[SINGLE], cases[MULTI]]
    return juliet_functions(toolchain, chosen, family_splits(chosen), support, store, jobs=2), store


def test_the_family_split_keeps_families_whole_and_gives_every_cwe_a_test_family(
    cases: dict[str, JulietCase],
) -> None:
    all_cases = sorted(cases.values(), key=lambda c: c.id)
    splits = family_splits(all_cases)
    by_split = {split: select_cases(all_cases, [split]) for split in SPLITS}
    families = {split: {c.family for c in chosen} for split, chosen in by_split.items()}
    assert not families["train"] & families["test"] and not families["validation"] & families["test"]
    assert not families["train"] & families["validation"]
    assert sum(len(chosen) for chosen in by_split.values()) == len(all_cases) == 19718
    assert len(families["test"]) == 107 and len(by_split["test"]) == 3764  # the README's counts
    assert {c.cwe for c in by_split["test"]} == {c.cwe for c in all_cases} and len({c.cwe for c in all_cases}) == 15
    assert Counter(splits.values())["test"] == 107
    few = select_cases(all_cases, ["test"], per_family=2, cwes=["CWE476"])
    assert [c.id for c in few] == sorted(c.id for c in few) and len(few) == 2
    assert {c.cwe for c in few} == {"CWE476"}
    variants = [int(c.id.rsplit("_", 1)[1]) for c in few]
    assert variants[0] == 1 and variants[1] > 2  # spread over the family's flow variants, not its first two
    with pytest.raises(InputError, match="unknown split"):
        select_cases(all_cases, ["tset"])


@pytest.mark.parametrize("case_id", [SINGLE, MULTI])
def test_each_labeled_function_is_one_neutral_module_with_its_lines(
    toolchain: Toolchain,
    cases: dict[str, JulietCase],
    compiled: tuple[list[JulietFunction], EvaluationStore],
    case_id: str,
) -> None:
    case = cases[case_id]
    functions = [f for f in compiled[0] if f.case == case_id]
    assert {f.name: f.label for f in functions} == dict(case.functions)
    assert {f.split for f in functions} == {family_splits([case])[case.family]}
    for function in functions:
        text = disassemble(toolchain, function.bitcode, function.name)
        assert not re.search(r"bad|good|CWE|_\d\d[a-e]?_", text, re.I), f"{function.name} leaks a name"
        assert "!dbg" not in text and "DICompileUnit" not in text
        assert re.search(r"^define dso_local .*@f0\(", text, re.M)
        source = case.files[function.file].splitlines()
        head, body = source[function.first_line - 1], source[function.first_line : function.last_line]
        assert re.search(rf"\b{function.name}\s*\(", head) and body[-1] == "}" and body[0] == "{"
        assert sum(line.count("{") - line.count("}") for line in body) == 0
    assert len({f.file for f in functions}) == len(case.files)


def test_modules_feed_the_flag_tuning_representations_and_come_from_the_cache_again(
    toolchain: Toolchain,
    cases: dict[str, JulietCase],
    support: Path,
    compiled: tuple[list[JulietFunction], EvaluationStore],
) -> None:
    functions, store = compiled
    first = next(f for f in functions if f.case == SINGLE)
    vector = compute(OpcodeTypeHistogram(), FeatureModule.from_bytes(toolchain, first.bitcode, "f"))
    assert vector.sum() > 0
    checked = next(f for f in functions if f.case == SINGLE and f.name == "goodB2G")  # prints a "fixed" message
    assert "@g0 = external dso_local unnamed_addr constant [1 x i8]" in disassemble(toolchain, checked.bitcode, "g")
    again = case_functions(toolchain, cases[SINGLE], "test", support, store)
    assert [f.bitcode for f in again] == [f.bitcode for f in functions if f.case == SINGLE]
    assert {f.split for f in again} == {"test"}
    assert store.stats().artifacts_by_kind[ARTIFACT_KIND] == 2


def test_clang_analyzer_predicts_the_divide_by_zero_function_bad(
    toolchain: Toolchain, cases: dict[str, JulietCase], support: Path
) -> None:
    answers = analyze_case(toolchain, cases[SINGLE], support, "clang")
    bad = answers[f"{SINGLE}_bad"]
    assert bad is not None and bad.checker == "core.DivideZero" and bad.cwe == "CWE369"
    assert all(answers[name] is None for name, label in cases[SINGLE].functions.items() if label == "good")


def test_cppcheck_predicts_the_null_dereference_function_bad(
    toolchain: Toolchain, cases: dict[str, JulietCase], support: Path, tmp_path: Path
) -> None:
    if shutil.which("cppcheck") is None:
        pytest.skip("cppcheck is not installed (Debian package cppcheck)")
    store = EvaluationStore(tmp_path / "store.sqlite")
    predictions = analyzer_predictions(toolchain, [cases[NULL_DEREFERENCE]], support, "cppcheck", store)
    bad = predictions[NULL_DEREFERENCE, f"{NULL_DEREFERENCE}_bad"]
    assert bad is not None and bad.cwe == "CWE476" and bad.checker.startswith("nullPointer")
    assert analyzer_predictions(toolchain, [cases[NULL_DEREFERENCE]], support, "cppcheck", store) == predictions


def test_a_missing_cppcheck_names_the_package(
    toolchain: Toolchain, cases: dict[str, JulietCase], support: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError, match="Debian package `cppcheck`"):
        analyze_case(toolchain, cases[SINGLE], support, "cppcheck")


def test_anchor_rows_score_an_analyzer_on_the_functions_of_the_study(
    toolchain: Toolchain,
    cases: dict[str, JulietCase],
    support: Path,
    compiled: tuple[list[JulietFunction], EvaluationStore],
) -> None:
    functions = [f for f in compiled[0] if f.case == SINGLE]
    (row,) = anchor_rows(toolchain, functions, [cases[SINGLE], cases[MULTI]], support, analyzers=["clang"])
    assert row.kind == "anchor" and row.name == "clang --analyze"
    assert row.flags == tuple(f.label == "bad" and f.name.endswith("_bad") for f in functions)
    counts = row.overall
    assert (counts.tp, counts.fp, counts.cwe_right) == (1, 0, 1) and counts.functions == len(functions)
