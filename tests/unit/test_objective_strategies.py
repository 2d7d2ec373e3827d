import math
import random

import pytest

from stitchopt.core import EvalResult, EvalStatus, Objective
from stitchopt.tune.strategies import GreedySearch, LocalSearch, RandomSearch

PASSES = ["sroa", "instcombine", "simplifycfg", "gvn", "licm"]


def _result(size: int, instructions: int = 100, seconds: float = 0.1) -> EvalResult:
    return EvalResult(EvalStatus.OK, "p", size_bytes=size, ir_instruction_count=instructions, opt_seconds=seconds)


def test_objective_normalizes_to_oz_and_weights_terms() -> None:
    oz = _result(1000, 100, 0.1)
    assert Objective().score(oz, oz) == 1.0
    assert Objective().score(_result(900), oz) == pytest.approx(0.9)
    mixed = Objective.parse("size=1,compile-time=1")
    assert mixed.score(_result(900, seconds=0.2), oz) == pytest.approx((0.9 + 2.0) / 2)
    assert Objective().score(EvalResult(EvalStatus.CRASH, "p"), oz) == math.inf
    assert str(Objective.parse("size=1,instructions=0.5")) == "size=1,instructions=0.5"


@pytest.mark.parametrize("text", ["speed=1", "size=-1", "size=0", ""])
def test_objective_rejects_bad_text(text: str) -> None:
    with pytest.raises(ValueError):
        Objective.parse(text)


def test_random_search_is_reproducible_from_its_seed() -> None:
    first = RandomSearch(PASSES, random.Random(3)).ask(20)
    assert first == RandomSearch(PASSES, random.Random(3)).ask(20)
    assert first != RandomSearch(PASSES, random.Random(4)).ask(20)
    assert all(1 <= len(p) <= 50 and set(p) <= set(PASSES) for p in first)


def test_greedy_appends_the_best_pass_and_stops_without_gain() -> None:
    greedy = GreedySearch(PASSES)
    step = greedy.ask(100)
    assert step == [(name,) for name in PASSES]
    greedy.tell([(p, 0.9 if p == ("gvn",) else 1.0) for p in step])
    step = greedy.ask(100)
    assert all(p[0] == "gvn" and len(p) == 2 for p in step)
    greedy.tell([(p, 0.95) for p in step])  # nothing beats 0.9: done
    assert greedy.done and greedy.ask(10) == [] and greedy.current == ("gvn",)


def test_local_search_scores_seeds_first_and_keeps_the_best() -> None:
    seed = ("sroa", "instcombine")
    search = LocalSearch(PASSES, random.Random(1), [seed])
    assert search.ask(8) == [seed]
    search.tell([(seed, 0.95)])
    mutants = search.ask(8)
    assert len(mutants) == 8 and all(set(m) <= set(PASSES) for m in mutants)
    search.tell([(mutants[0], 0.9)] + [(m, 1.2) for m in mutants[1:]])
    assert search.best == mutants[0] and search.best_score == 0.9
    replay = LocalSearch(PASSES, random.Random(1), [seed])
    replay.ask(8)
    replay.tell([(seed, 0.95)])
    assert replay.ask(8) == mutants
