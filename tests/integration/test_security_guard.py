"""The security guard, its counts and the `security` objective term on the CWE-14/CWE-733 fixtures.

`cwe14_fortified.c` is the known removing case: -Oz keeps its checked clear (`__memset_chk(key, 0, len, 32)`),
while `lower-constant-intrinsics,instcombine,inline,dse` lowers the object size before inlining, turns the
clear into a plain memset and deletes it (44% smaller than -Oz). `cwe14_wrapper.c` is the same removal in a
wrapper that then only calls a shared helper.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stitchopt.apply.choose import choose
from stitchopt.cache.store import EvaluationStore
from stitchopt.cc.model_builds import BuiltObject, passing_guards, unit_guard
from stitchopt.core import CompileOptions, IRModule, Objective
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.measure import Program, label_programs
from stitchopt.models.list_model import RankedList
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import OPT_FLAGS, Baseline, load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import program_guard
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.pareto import pareto_front
from stitchopt.tune.runtime import attach_probes
from stitchopt.tune.strategies import make_strategy
from stitchopt.validate.guards import Guard
from stitchopt.validate.security_guard import HardeningCounts, describe, optimized_text, weakened

FIXTURES = Path(__file__).parents[1] / "data" / "security"
REMOVING: PassNames = ("lower-constant-intrinsics", "instcombine<no-verify-fixpoint>", "inline", "dse")
KEEPING: PassNames = ("inline", "dse")  # inlines and removes dead stores too, but keeps the checked clear


@pytest.fixture(scope="module")
def oz(toolchain: Toolchain) -> Baseline:
    return load_baselines(toolchain, ("Oz",))["Oz"]


@pytest.fixture(scope="module")
def fortified(toolchain: Toolchain) -> IRModule:
    return load_module(toolchain, FIXTURES / "cwe14_fortified.c")


def _nonzero(counts: HardeningCounts) -> dict[str, int]:
    return {kind: n for kind, n in counts.to_dict().items() if n}


@pytest.mark.parametrize(
    ("fixture", "flags", "source", "at_oz"),
    [
        ("cwe14_fortified.c", (), {"clearing_writes": 1, "fortified_calls": 1}, None),
        ("cwe14_free.c", (), {"clearing_writes": 1}, {}),  # -Oz drops the memset before free
        ("cwe14_loop.c", (), {"clearing_writes": 1}, None),
        (
            "cwe14_loop.c",
            ("-fstack-protector-strong",),
            {"clearing_writes": 1, "protected_functions": 1, "canary_checks": 1},
            None,
        ),
        (
            "cwe733_checks.c",
            (),
            {"volatile_accesses": 1, "overflow_checks": 3},
            {"volatile_accesses": 1, "overflow_checks": 2},
        ),
    ],
)
def test_counts_of_each_fixture_and_what_oz_removes(
    toolchain: Toolchain,
    oz: Baseline,
    fixture: str,
    flags: tuple[str, ...],
    source: dict[str, int],
    at_oz: dict[str, int] | None,
) -> None:
    guard = Guard(toolchain, load_module(toolchain, FIXTURES / fixture, flags), oz.options, oz.pipeline)
    expected_oz = source if at_oz is None else at_oz
    assert _nonzero(guard.source.hardening.own) == source
    assert _nonzero(guard.reference.hardening.own) == expected_oz
    assert guard.oz_removed == {k: n - expected_oz.get(k, 0) for k, n in source.items() if n > expected_oz.get(k, 0)}


def test_guard_rejects_the_removing_list_and_passes_one_that_keeps_everything(
    toolchain: Toolchain, catalogue: Catalogue, oz: Baseline, fortified: IRModule
) -> None:
    guard = Guard(toolchain, fortified, oz.options, oz.pipeline)
    assert guard.check(tuned_pipeline(REMOVING, catalogue)) == [
        "security-relevant code removed relative to -Oz: 1 clearing write, 1 fortified call"
    ]
    assert guard.check(tuned_pipeline(KEEPING, catalogue)) == []
    assert guard.check(oz.pipeline) == []


def test_merging_identical_functions_that_clear_is_not_a_removal(toolchain: Toolchain, oz: Baseline) -> None:
    """`mergefunc` (the shipped model's finish) keeps one of two identical clearing functions and turns the other
    into a call of it: the clear still runs for both, and the guard counts it for both."""
    guard = Guard(toolchain, load_module(toolchain, FIXTURES / "cwe14_merged.c"), oz.options, oz.pipeline)
    merged = f"{oz.pipeline},mergefunc"
    assert _nonzero(guard.reference.hardening.own) == {"clearing_writes": 2}
    assert "tail call i32 @md5_final" in optimized_text(toolchain, guard.module, merged, oz.options)
    assert guard.check(merged) == []


def test_a_wrapper_left_as_a_bare_call_of_a_shared_helper_is_a_removal(
    toolchain: Toolchain, oz: Baseline, catalogue: Catalogue
) -> None:
    """The list removes `finish`'s own checked clear and leaves a bare call of `scrub`, the shape of a merged copy;
    under -Oz `finish` called `scrub` too, so `scrub`'s clear is not credited to it (before the twentieth session
    it was, and the guard passed the list)."""
    guard = Guard(toolchain, load_module(toolchain, FIXTURES / "cwe14_wrapper.c"), oz.options, oz.pipeline)
    stripping = tuned_pipeline((*REMOVING, "instcombine<no-verify-fixpoint>"), catalogue)
    candidate = optimized_text(toolchain, guard.module, stripping, oz.options)
    assert "@__memset_chk" not in candidate.split("define dso_local void @finish")[1].split("}")[0]
    assert _nonzero(guard.reference.hardening.own) == {"clearing_writes": 2, "fortified_calls": 2}
    assert guard.check(stripping) == [
        "security-relevant code removed relative to -Oz: 1 clearing write, 1 fortified call"
    ]


def test_weakened_compares_kinds_separately_and_ignores_protected_functions() -> None:
    reference = HardeningCounts(clearing_writes=2, fortified_calls=1, protected_functions=3)
    candidate = HardeningCounts(clearing_writes=1, fortified_calls=4, protected_functions=1)
    assert weakened(reference, candidate) == {"clearing_writes": 1}
    assert describe({"clearing_writes": 1, "canary_checks": 2}) == "1 clearing write, 2 stack canary checks"


def test_tune_never_climbs_to_the_removing_list(
    toolchain: Toolchain, catalogue: Catalogue, store: EvaluationStore, fortified: IRModule
) -> None:
    with Evaluator(toolchain, store, jobs=2, backend="subprocess") as evaluator:
        oz_pipeline = evaluator.baselines["Oz"].pipeline
        searcher = make_strategy("local", catalogue, 0, oz_pipeline, seeds=[REMOVING])
        guard = program_guard(evaluator, fortified)
        run = tune(evaluator, fortified, searcher, catalogue, budget=Budget(4), guard=guard)
    assert run.suspicious >= 1
    assert REMOVING not in [passes for passes, _ in run.bests]


class FixedRanking:
    """A model that ranks the given lists first, in order (-Oz last)."""

    def __init__(self, lists: tuple[PassNames, ...]) -> None:
        self.lists = lists
        self.identity = "fixed:" + "|".join(",".join(p) for p in lists)

    def rank(self, toolchain: Toolchain, module: IRModule) -> list[RankedList]:
        return [*(RankedList(p, 0.5 + 0.01 * i) for i, p in enumerate(self.lists)), RankedList(None, 1.0)]


@pytest.mark.parametrize(("ranked", "chosen"), [((REMOVING,), None), ((REMOVING, KEEPING), KEEPING)])
def test_model_answers_fall_back_past_lists_that_fail_the_guard(
    toolchain: Toolchain,
    catalogue: Catalogue,
    fortified: IRModule,
    ranked: tuple[PassNames, ...],
    chosen: PassNames | None,
) -> None:
    with Evaluator(toolchain, None, jobs=2, backend="subprocess") as evaluator:
        choice = choose(evaluator, catalogue, FixedRanking(ranked), fortified, mode="jit", k=len(ranked))
    assert choice.passes == chosen
    assert any("security-relevant code removed" in note for note in choice.notes)


def test_labels_record_a_list_that_removes_a_clear_as_a_failure(
    toolchain: Toolchain, catalogue: Catalogue, fortified: IRModule
) -> None:
    program = Program("fixture://cwe14_fortified.c", "fixtures", "train", fortified)
    with Evaluator(toolchain, None, jobs=2, backend="subprocess") as evaluator:
        (labeled,), _ = label_programs(evaluator, catalogue, [program], [REMOVING, KEEPING])
    removed, kept = labeled.sizes
    assert removed is None  # smaller than -Oz, but no model may learn it as a win
    assert kept is not None and kept < labeled.baseline_sizes["Oz"]


def test_model_build_keeps_the_smallest_object_whose_list_passes_the_guard(
    toolchain: Toolchain, catalogue: Catalogue, fortified: IRModule, tmp_path: Path
) -> None:
    def built(passes: PassNames | None, size: int) -> BuiltObject:
        pipeline = None if passes is None else tuned_pipeline(passes, catalogue)
        return BuiltObject(pipeline, tmp_path / f"{size}.o", size, "", 0.0)

    options = CompileOptions(relocation_model="pic", opt_flags=OPT_FLAGS["Oz"])
    objects = [built(None, 126), built(REMOVING, 70), built(KEEPING, 110)]
    assert passing_guards(objects, lambda: unit_guard(toolchain, fortified, options)) is objects[2]
    assert passing_guards(objects[:2], lambda: unit_guard(toolchain, fortified, options)) is objects[0]


def test_security_objective_scores_lost_code_and_has_a_front_against_size(
    toolchain: Toolchain, catalogue: Catalogue, store: EvaluationStore, fortified: IRModule
) -> None:
    objective = Objective.parse("size=0.3,security=0.7")
    log = io.StringIO()
    with Evaluator(toolchain, store, jobs=2, backend="subprocess") as evaluator:
        oz = evaluator.baselines["Oz"]
        attach_probes(evaluator, fortified, objective, FIXTURES / "cwe14_fortified.c", None)
        searcher = make_strategy("local", catalogue, 0, oz.pipeline, seeds=[REMOVING])
        run = tune(evaluator, fortified, searcher, catalogue, objective, Budget(6), trial_log=log)  # no guard
        removing = evaluator.evaluate(fortified, tuned_pipeline(REMOVING, catalogue), oz.options)
    assert run.oz.security == 1.0  # nothing lost at -Oz
    assert removing.security == 3.0  # 1 + a clearing write + a fortified call
    assert removing.size_bytes is not None and run.oz.size_bytes is not None
    size_ratio = removing.size_bytes / run.oz.size_bytes
    assert size_ratio < 0.8
    assert objective.score(removing, run.oz) == pytest.approx(0.3 * size_ratio + 0.7 * 3.0)
    assert REMOVING not in [passes for passes, _ in run.bests]  # the objective alone keeps it out
    trials = [json.loads(line) for line in log.getvalue().splitlines()]
    assert all(t["security"] is not None for t in trials if t["status"] == "ok")
    front = pareto_front(trials, ("size", "security"))
    assert front[0]["passes"] == list(REMOVING) and front[0]["security"] == 3.0  # smallest, least secure
    assert front[-1]["security"] == 1.0


def test_eval_json_shows_the_counts_of_oz_and_of_the_list(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "stitchopt", "eval", str(FIXTURES / "cwe14_free.c"), "-p", ",".join(REMOVING)]
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    security = json.loads(done.stdout)["security"]
    assert security["source"]["clearing_writes"] == 1
    assert security["Oz"]["clearing_writes"] == 0
    assert security["removed_by_oz"] == {"clearing_writes": 1}
    assert security["removed_vs_oz"] == {}
