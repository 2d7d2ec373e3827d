"""Prefix reuse in the native workers: pipelines derived from a base resume from the base's module states, with
the same answers as running every pipeline whole, in bounded memory."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import CompileOptions, EvalResult, IRModule, Objective
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.evaluation.native.pool import NativeBackend
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.strategies import GreedySearch, LocalSearch, RandomSearch, Strategy, flatten_pipeline, make_strategy

DATA = Path(__file__).parent.parent / "data"

pytestmark = pytest.mark.usefixtures("native_available")

# newgvn leaves a use-list order that differs between two runs on the same input: its lists are compared by
# object, not by bitcode.
NONDETERMINISTIC = "newgvn"


@pytest.fixture(scope="module")
def oz_options(toolchain: Toolchain) -> CompileOptions:
    return load_baselines(toolchain, ("Oz",))["Oz"].options


@pytest.fixture(scope="module")
def modules(toolchain: Toolchain) -> list[IRModule]:
    """Demo programs, and real code: a C utility and C++ with classes and the standard library."""
    demo = sorted(demo_programs().values())[:3]
    return [load_module(toolchain, path) for path in [*demo, DATA / "wordcount.c", DATA / "shapes.cpp"]]


def neighbourhood(catalogue: Catalogue, oz_pipeline: str, seed: int) -> list[tuple[PassNames, PassNames]]:
    """What a local search evaluates, as (base, list) pairs: the -Oz seed, its mutants, mutants of those (their
    parent as base), and random lists (the seed as base)."""
    rng = random.Random(seed)
    search = LocalSearch(catalogue.names(), rng, [flatten_pipeline(oz_pipeline, catalogue)])
    mutants = [search._mutate(search.best) for _ in range(10)]
    pairs = [(search.best, search.best), *((search.best, mutant) for mutant in mutants)]
    pairs += [(parent, search._mutate(parent)) for parent in mutants[:4]]
    pairs += [(search.best, passes) for passes in RandomSearch(catalogue.names(), rng).ask(4)]
    return pairs


def derived(
    module: IRModule, pairs: list[tuple[PassNames, PassNames]], catalogue: Catalogue, options: CompileOptions
) -> list[EvalRequest]:
    return [
        EvalRequest(module, tuned_pipeline(passes, catalogue), options, tuned_pipeline(base, catalogue))
        for base, passes in pairs
    ]


def _comparable(result: EvalResult, exact_ir: bool) -> tuple[object, ...]:
    ir = (result.ir_hash, result.ir_instruction_count) if exact_ir else ()
    return (result.status, result.size_bytes, result.sections, *ir)


@pytest.fixture()
def reusing(toolchain: Toolchain) -> Iterator[Evaluator]:
    with Evaluator(toolchain, jobs=2, backend="native", prefix_cache_mb=64) as evaluator:
        yield evaluator


@pytest.mark.slow
def test_reuse_gives_the_answers_of_whole_runs(
    toolchain: Toolchain,
    catalogue: Catalogue,
    modules: list[IRModule],
    oz_options: CompileOptions,
    reusing: Evaluator,
) -> None:
    """Local-search neighbourhoods and random lists on demo and real units, run whole and resumed from their
    bases (two workers, so each records the bases it is given): identical statuses and object sizes for every
    list, and the same optimized IR for nearly all. Not all: a module in memory can hold dead constants that
    still count as users of a function (argpromotion, for one, walks them), which bitcode does not carry; in a
    130-pair version of this set one bigint list ended with another use-list order for an argument, same
    object."""
    oz_pipeline = load_baselines(toolchain, ("Oz",))["Oz"].pipeline
    pairs = neighbourhood(catalogue, oz_pipeline, seed=3)
    requests = [request for m in modules for request in derived(m, pairs, catalogue, oz_options)]
    with Evaluator(toolchain, jobs=2, backend="native", prefix_cache_mb=0) as whole:
        expected = whole.evaluate_many(requests)
    actual = reusing.evaluate_many(requests)
    assert [_comparable(a, False) for a in actual] == [_comparable(e, False) for e in expected]
    same_ir = sum(
        _comparable(a, True) == _comparable(e, True) or NONDETERMINISTIC in a.pipeline
        for a, e in zip(actual, expected, strict=True)
    )
    assert same_ir >= len(requests) - 2
    assert sum(result.ok for result in expected) >= 0.9 * len(requests)
    reuse = reusing.prefix_reuse
    assert reuse is not None and reuse.evaluations == len(requests)
    assert reuse.reused_share > 0.3  # neighbours share long prefixes, and rejoin the base's path after an edit
    assert any(result.resumed for result in actual) and not any(result.resumed for result in expected)


def test_a_recorded_base_runs_nothing_and_still_generates_code(
    toolchain: Toolchain, catalogue: Catalogue, modules: list[IRModule], oz_options: CompileOptions
) -> None:
    """A pipeline evaluated with itself as its base runs no pass of its own once the base is recorded: the worker
    has the finished module's bitcode, and codegen reads it as llc would. Without a base it runs whole."""
    backend = NativeBackend(toolchain, jobs=1, prefix_cache_bytes=16 << 20)
    pipeline = tuned_pipeline(("sroa", "instcombine", "globaldce", "simplifycfg"), catalogue)
    try:
        whole = backend.evaluate(modules[0], pipeline, oz_options, None)
        assert backend.prefix_reuse.evaluations == 0 and not whole.resumed
        resumed = backend.evaluate(modules[0], pipeline, oz_options, None, base=pipeline)
    finally:
        backend.close()
    assert whole.ok and _comparable(resumed, True) == _comparable(whole, True)
    assert resumed.resumed and backend.prefix_reuse.reused_elements == backend.prefix_reuse.elements > 0


def test_an_edit_that_changes_nothing_rejoins_the_base(
    toolchain: Toolchain, catalogue: Catalogue, modules: list[IRModule], oz_options: CompileOptions
) -> None:
    """A second ipsccp right after the first finds nothing to do: after running it the worker writes the module
    once, finds the state the base had there, and follows the base's path to its end (instcombine is not run
    again). A real edit (inline) runs on to the end: same answers as whole runs either way. (Consecutive function
    passes form one element, so these edits are module and CGSCC passes.)"""
    base = tuned_pipeline(("sroa", "ipsccp", "instcombine"), catalogue)
    idle = tuned_pipeline(("sroa", "ipsccp", "ipsccp", "instcombine"), catalogue)
    real = tuned_pipeline(("sroa", "ipsccp", "inline", "instcombine"), catalogue)
    backend = NativeBackend(toolchain, jobs=1, prefix_cache_bytes=16 << 20)
    with Evaluator(toolchain, jobs=1, backend="native", prefix_cache_mb=0) as whole:
        expected = [whole.evaluate(modules[0], p, oz_options) for p in (idle, real)]
    ran = []
    try:
        backend.evaluate(modules[0], base, oz_options, None, base=base)
        actual = []
        for pipeline in (idle, real):
            before = backend.prefix_reuse.elements - backend.prefix_reuse.reused_elements
            actual.append(backend.evaluate(modules[0], pipeline, oz_options, None, base=base))
            ran.append(backend.prefix_reuse.elements - backend.prefix_reuse.reused_elements - before)
    finally:
        backend.close()
    assert [_comparable(a, True) for a in actual] == [_comparable(e, True) for e in expected]
    assert ran == [1, 4]  # the second ipsccp; cgscc(inline), the reset (two elements) and function(instcombine)


def test_resumed_runs_start_with_no_analysis_cached(
    toolchain: Toolchain, catalogue: Catalogue, modules: list[IRModule], oz_options: CompileOptions
) -> None:
    """attributor-light reads analyses only if they are cached: resumed after the -Oz seed, it gives avl_tree's
    rotate_left a nonnull return only if the seed left analyses cached. Searched lists reset analyses between
    elements, so a resumed run is a whole run; a pipeline without resets is never resumed past its first step,
    even from itself as its base."""
    oz_pipeline = load_baselines(toolchain, ("Oz",))["Oz"].pipeline
    seed = flatten_pipeline(oz_pipeline, catalogue)
    module = next(m for m in modules if m.name.endswith("avl_tree"))
    searched = tuned_pipeline((*seed, "attributor-light"), catalogue)
    without_resets = searched.replace(",invalidate<all>,invalidate<globals-aa>", "")
    backend = NativeBackend(toolchain, jobs=1, prefix_cache_bytes=64 << 20)
    with Evaluator(toolchain, jobs=1, backend="native") as whole:
        expected = [whole.evaluate(module, p, oz_options) for p in (searched, without_resets)]
    try:
        resumed = backend.evaluate(module, searched, oz_options, None, base=tuned_pipeline(seed, catalogue))
        ran = backend.prefix_reuse.elements - backend.prefix_reuse.reused_elements
        assert ran <= 3  # attributor-light and the reset before it
        before = backend.prefix_reuse.reused_elements
        again = backend.evaluate(module, without_resets, oz_options, None, base=without_resets)
        assert backend.prefix_reuse.reused_elements - before == 1  # its first step only
    finally:
        backend.close()
    assert _comparable(resumed, True) == _comparable(expected[0], True)
    assert _comparable(again, True) == _comparable(expected[1], True)


def test_the_cache_stays_within_its_bound(
    toolchain: Toolchain, catalogue: Catalogue, modules: list[IRModule], oz_options: CompileOptions
) -> None:
    """A 1 MiB cache evicts as it fills (each list is its own base here, so each one's states are recorded),
    never holds more than its bound, and answers stay the same."""
    oz_pipeline = load_baselines(toolchain, ("Oz",))["Oz"].pipeline
    pairs = [(passes, passes) for _, passes in neighbourhood(catalogue, oz_pipeline, seed=5)[:9]]
    requests = [request for m in modules[:2] for request in derived(m, pairs, catalogue, oz_options)]
    with (
        Evaluator(toolchain, jobs=1, backend="native", prefix_cache_mb=1) as small,
        Evaluator(toolchain, jobs=1, backend="native", prefix_cache_mb=0) as whole,
    ):
        actual = small.evaluate_many(requests)
        expected = whole.evaluate_many(requests)
        reuse = small.prefix_reuse
    assert [_comparable(a, NONDETERMINISTIC not in a.pipeline) for a in actual] == [
        _comparable(e, NONDETERMINISTIC not in e.pipeline) for e in expected
    ]
    assert reuse is not None and reuse.evictions > 0
    assert 0 < reuse.cache_bytes <= reuse.cache_limit_bytes == 1 << 20


@pytest.mark.parametrize(("strategy", "budget"), [("local", 24), ("greedy", 30)])
def test_a_search_with_reuse_is_the_search_without(
    toolchain: Toolchain, catalogue: Catalogue, modules: list[IRModule], strategy: str, budget: int
) -> None:
    """The driver names each batch's base (the local search's best; the greedy search's current list, from its
    second step on): the same curve, bests and answer as with reuse off, while most pipeline elements of the
    derived pipelines are resumed rather than run."""
    oz = load_baselines(toolchain, ("Oz",))["Oz"]
    runs = []
    for prefix_cache_mb in (0, 64):
        with Evaluator(toolchain, jobs=2, backend="native", prefix_cache_mb=prefix_cache_mb) as evaluator:
            search: Strategy = (  # greedy over 12 passes: its second step derives from its first
                GreedySearch(catalogue.names()[:: len(catalogue.names()) // 12][:12])
                if strategy == "greedy"
                else make_strategy(strategy, catalogue, 7, oz.pipeline)
            )
            runs.append(tune(evaluator, modules[0], search, catalogue, budget=Budget(budget)))
            reuse = evaluator.prefix_reuse
    whole, reusing = runs
    assert (reusing.curve, reusing.bests, reusing.best_result.size_bytes) == (
        whole.curve,
        whole.bests,
        whole.best_result.size_bytes,
    )
    assert reuse is not None and reuse.reused_share > 0.5


def test_a_search_that_weighs_compile_time_runs_every_pipeline_whole(
    toolchain: Toolchain, catalogue: Catalogue, modules: list[IRModule]
) -> None:
    """A resumed run's opt seconds are only the part that ran: with compile time in the objective the driver
    names no base, so nothing is resumed."""
    oz = load_baselines(toolchain, ("Oz",))["Oz"]
    with Evaluator(toolchain, jobs=1, backend="native") as evaluator:
        search = make_strategy("local", catalogue, 7, oz.pipeline)
        objective = Objective.parse("size=1,compile-time=0.1")
        tune(evaluator, modules[0], search, catalogue, objective, Budget(9))
        reuse = evaluator.prefix_reuse
    assert reuse is not None and reuse.evaluations == 0


def test_a_resumed_result_in_the_store_is_measured_again_for_a_request_without_a_base(
    toolchain: Toolchain, catalogue: Catalogue, modules: list[IRModule], oz_options: CompileOptions, tmp_path: Path
) -> None:
    """Minimize, the final evaluation of an answer, eval and labels name no base: they never read a search's
    resumed result as a whole run's."""
    base = tuned_pipeline(("sroa", "ipsccp", "instcombine"), catalogue)
    derived = tuned_pipeline(("sroa", "ipsccp", "inline", "instcombine"), catalogue)
    with (
        EvaluationStore(tmp_path / "cache.sqlite") as store,
        Evaluator(toolchain, store, jobs=1, backend="native") as evaluator,
    ):
        evaluator.evaluate_many([EvalRequest(modules[0], base, oz_options, base)])
        (resumed,) = evaluator.evaluate_many([EvalRequest(modules[0], derived, oz_options, base)])
        whole = evaluator.evaluate(modules[0], derived, oz_options)
    assert resumed.resumed and not whole.resumed and whole.size_bytes == resumed.size_bytes
