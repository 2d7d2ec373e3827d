"""Seeded search (the model's top lists start a short local search) on the bundled demo programs with the shipped
model: never larger than -Oz, within budget + 1 compilations, deterministic, at least as good as static, the
`optimize --mode search` command, `STITCHOPT_MODE=search` builds, the evaluation's rows and the curve of gain
against compilations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stitchopt.apply.choose import choose
from stitchopt.apply.search import seeded_search
from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.core import IRModule
from stitchopt.datasets.benchmarks import Benchmark, program_path
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.heldout import evaluate_model
from stitchopt.learning.kinds import load_model
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.list_model import ListModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue
from stitchopt.studies.search_curve import AUTOTUNER, seeded_search_curve
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import list_validation
from stitchopt.tune.driver import Budget
from stitchopt.tune.session import run_record, tune_programs

TINY = """#include <stdio.h>
static int squares(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }
int main(int argc, char **argv) { printf("%d\\n", squares(argc * 10)); return 0; }
"""
PROGRAMS = ("bench://demo-v1/protocol_fsm", "bench://demo-v1/union_find")  # the shipped model's top list beats -Oz


@pytest.fixture(scope="module")
def model(catalogue: Catalogue) -> ListModel:
    return load_model(DEFAULT_MODEL_DIR, catalogue)


@pytest.fixture(scope="module")
def modules(toolchain: Toolchain) -> list[IRModule]:
    return [load_module(toolchain, program_path(uri, toolchain)) for uri in PROGRAMS]


def test_within_budget_never_larger_than_oz_and_at_least_as_good_as_static(
    toolchain: Toolchain, catalogue: Catalogue, model: ListModel, modules: list[IRModule], tmp_path: Path
) -> None:
    with Evaluator(toolchain, EvaluationStore(tmp_path / "c.sqlite"), jobs=2) as evaluator:
        for module in modules:
            static = choose(evaluator, catalogue, model, module, mode="static")
            assert static.passes is not None and static.size_bytes < static.oz_size_bytes
            for budget in (1, 12):
                searched = seeded_search(evaluator, catalogue, model, module, k=3, budget=budget)
                assert searched.size_bytes <= searched.oz_size_bytes == static.oz_size_bytes
                assert searched.compilations == len(searched.curve) + 1 <= budget + 1
                assert list(searched.curve) == sorted(searched.curve, reverse=True)  # best so far
                assert searched.size_bytes <= static.size_bytes  # the top list is the first seed
            assert searched.size_bytes / searched.oz_size_bytes == pytest.approx(searched.curve[-1])
        nothing = seeded_search(evaluator, catalogue, model, modules[0], budget=0)
        assert (nothing.passes, nothing.compilations, nothing.size_bytes) == (None, 1, nothing.oz_size_bytes)


def test_a_seed_gives_the_same_answer_from_a_cold_cache(
    toolchain: Toolchain, catalogue: Catalogue, model: ListModel, modules: list[IRModule], tmp_path: Path
) -> None:
    answers = []
    for cache in ("one", "two"):
        with Evaluator(toolchain, EvaluationStore(tmp_path / f"{cache}.sqlite"), jobs=2) as evaluator:
            choice = seeded_search(evaluator, catalogue, model, modules[1], k=2, budget=10, seed=3)
        answers.append((choice.passes, choice.size_bytes, choice.curve))
    assert answers[0] == answers[1] and answers[0][0] is not None


def test_with_a_validation_only_a_list_that_passes_it_is_the_answer(
    toolchain: Toolchain, catalogue: Catalogue, model: ListModel, modules: list[IRModule], tmp_path: Path
) -> None:
    suites = {}
    for name, status in (("passing", 0), ("failing", 1)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "check.c").write_text(f"int main(void) {{ return {status}; }}\n")
        suites[name] = [str(tmp_path / name)]
    with Evaluator(toolchain, EvaluationStore(tmp_path / "c.sqlite"), jobs=2) as evaluator:
        plain = seeded_search(evaluator, catalogue, model, modules[0], k=2, budget=6)
        passing = list_validation(evaluator, suites["passing"])
        validated = seeded_search(evaluator, catalogue, model, modules[0], k=2, budget=6, validation=passing)
        failing = list_validation(evaluator, suites["failing"])
        rejected = seeded_search(evaluator, catalogue, model, modules[0], k=2, budget=6, validation=failing)
    assert plain.passes is not None and validated.passes == plain.passes and "passed" in validated.notes[0]
    assert rejected.passes is None and rejected.size_bytes == rejected.oz_size_bytes
    assert rejected.notes and all("failed" in note for note in rejected.notes[:1])
    assert rejected.compilations == plain.compilations  # the lists rejected were compiled during the search


def test_optimize_mode_search_writes_the_object_and_budget_needs_that_mode(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "stitchopt", "optimize", PROGRAMS[0], "--jobs", "2", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    built = cli("-o", str(tmp_path / "out.o"), "--mode", "search", "--budget", "6", "--k", "2")
    assert built.returncode == 0, built.stderr
    size = object_sizes((tmp_path / "out.o").read_bytes()).size_bytes
    assert f"{size:,} B (" in built.stdout and "vs -Oz" in built.stdout and "compilations" in built.stdout
    assert int(built.stdout.split(" compilations")[0].rsplit(" ", 1)[-1]) <= 7
    for args in (["--budget", "6"], ["--mode", "jit", "--budget", "6"]):
        refused = cli("-o", str(tmp_path / "no.o"), *args)
        assert refused.returncode == 2 and refused.stderr.strip().endswith(
            "--budget only applies with --mode search: drop it"
        )
        assert not (tmp_path / "no.o").exists()


def test_a_search_build_searches_each_unit_and_keeps_the_smaller_object(toolchain: Toolchain, tmp_path: Path) -> None:
    (tmp_path / "tiny.c").write_text(TINY)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_")}
    env = {
        **clean,
        "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"),
        "STITCHOPT_BUILD_LOG": str(tmp_path / "log.jsonl"),
        "STITCHOPT_MODE": "search",
        "STITCHOPT_BUDGET": "6",
        "STITCHOPT_K": "2",
    }
    wrapper = Path(sys.executable).parent / "stitchopt-cc"
    built = subprocess.run(
        [str(wrapper), "-O2", "-c", "tiny.c", "-o", "tiny.o"], cwd=tmp_path, env=env, capture_output=True, timeout=300
    )
    assert built.returncode == 0 and not built.stderr, built.stderr
    [entry] = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert entry["mode"] == "search" and entry["outcome"] in ("optimized", "oz") and entry["candidates"] <= 2
    clang = toolchain.tool("clang")
    assert subprocess.run([clang, "-Oz", "-c", "tiny.c", "-o", "oz.o"], cwd=tmp_path).returncode == 0
    assert entry["bytes"] <= entry["oz_bytes"] == object_sizes((tmp_path / "oz.o").read_bytes()).size_bytes
    with EvaluationStore(store_path(tmp_path / "cache")) as store:
        assert 2 <= store.stats().entries <= 7  # -Oz and the search's distinct lists, within the budget
    assert subprocess.run([clang, "tiny.o", "-o", "tiny"], cwd=tmp_path).returncode == 0
    assert subprocess.run([str(tmp_path / "tiny")], capture_output=True, text=True).stdout == "285\n"


def test_evaluation_rows_of_seeded_search_count_their_compilations(
    toolchain: Toolchain, catalogue: Catalogue, tmp_path: Path
) -> None:
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    benchmarks = [Benchmark(uri, program_path(uri, toolchain), "demo", "test") for uri in PROGRAMS[:1]]
    with Evaluator(toolchain, EvaluationStore(tmp_path / "c.sqlite"), jobs=2) as evaluator:
        evaluation = evaluate_model(
            evaluator, catalogue, model, benchmarks, ks=(2,), search_ks=(2,), search_budgets=(4, 8)
        )
    methods = {m.method: m for m in evaluation.methods}
    short, long = methods["seeded search k=2 b=4"], methods["seeded search k=2 b=8"]
    assert short.regressed == long.regressed == 0 and long.geomean_change <= short.geomean_change < 0
    for outcome in evaluation.programs:  # the longer search begins with the shorter one's proposals
        assert outcome.ratios["seeded search k=2 b=8"] <= outcome.ratios["seeded search k=2 b=4"]
        assert outcome.compilations["seeded search k=2 b=4"] == 5 and outcome.compilations["seeded search k=2 b=8"] == 9


def test_the_curve_of_gain_never_rises_with_budget_and_sits_beside_the_autotuners(
    toolchain: Toolchain, catalogue: Catalogue, model: ListModel, tmp_path: Path
) -> None:
    benchmarks = [Benchmark(uri, program_path(uri, toolchain), "demo", "test") for uri in PROGRAMS]
    with Evaluator(toolchain, EvaluationStore(tmp_path / "c.sqlite"), jobs=2) as evaluator:
        tuned = tune_programs(evaluator, catalogue, [benchmarks[0].path], budget=Budget(10), minimize_best=False)
        record = run_record(evaluator, tuned, tuned[0].run.objective, "local", catalogue)
        curve = seeded_search_curve(
            evaluator, catalogue, model, benchmarks, ks=(1, 3), budgets=(0, 2, 6, 10), autotuner=record
        )
        static = [choose(evaluator, catalogue, model, load_module(toolchain, b.path)) for b in benchmarks]
    assert curve.budgets == (0, 2, 6, 10) and set(curve.changes) == {
        "seeded search k=1",
        "seeded search k=3",
        AUTOTUNER,
    }
    assert curve.programs == {"seeded search k=1": 2, "seeded search k=3": 2, AUTOTUNER: 1}
    for changes in curve.changes.values():
        assert len(changes) == 4 and list(changes) == sorted(changes, reverse=True) and changes[-1] <= 0
    ratios = [c.size_bytes / c.oz_size_bytes for c in static]
    assert curve.changes["seeded search k=1"][0] == pytest.approx((ratios[0] * ratios[1]) ** 0.5 - 1)  # static + backup
    assert curve.changes[AUTOTUNER][0] == 0.0  # -Oz alone
    assert curve.changes[AUTOTUNER][-1] == pytest.approx(tuned[0].run.curve[9] - 1)
