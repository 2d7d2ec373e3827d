"""The one mode table: which front end offers which mode, in the order their messages list them, how many ranked
lists each builds, and the answer rule both front ends share (`first_passing`) on hand-made candidates."""

from __future__ import annotations

import pytest

from stitchopt.apply.modes import BUILD_MODES, MODES, OPTIMIZE_MODES, default_k, mode_named
from stitchopt.errors import InputError
from stitchopt.tune.session import first_passing


def test_each_front_end_offers_its_modes_from_the_one_table() -> None:
    assert OPTIMIZE_MODES == ("static", "jit", "search", "hybrid")
    assert BUILD_MODES == ("static", "jit", "tune", "search")
    assert [name for name, mode in MODES.items() if mode.searches] == ["tune", "search"]
    assert (default_k("static"), default_k("jit"), default_k("search")) == (5, 5, 40)


def test_a_mode_outside_a_front_end_is_refused_with_the_ones_it_offers() -> None:
    with pytest.raises(InputError, match="unknown mode 'tune': use one of static, jit, search, hybrid"):
        mode_named("tune", OPTIMIZE_MODES)
    with pytest.raises(InputError, match="STITCHOPT_MODE='hybrid': use one of static, jit, tune, search"):
        mode_named("hybrid", BUILD_MODES, setting="STITCHOPT_MODE")


def test_static_and_the_searching_modes_build_the_top_list_and_jit_the_top_k() -> None:
    assert [MODES[name].tried(3) for name in ("static", "jit", "search", "tune")] == [1, 3, 1, 1]
    assert MODES["jit"].tried(0) == 1


def test_the_first_candidate_that_beats_oz_and_passes_the_guards_wins() -> None:
    refused = {"b"}
    candidates = [("a", 1.0), ("b", 0.8), ("b", 0.8), ("c", 0.9), ("d", 0.95)]
    chosen, notes = first_passing(
        candidates, str, lambda p: ["removed a clear"] if p in refused else [], label=lambda p: f"list {p}"
    )
    assert chosen == "c" and notes == ["list b failed the guards: removed a clear"]
    capped, _ = first_passing(candidates, str, lambda p: [] if p == "d" else ["no"], limit=2, label=str)
    assert capped is None
    unbounded, _ = first_passing(candidates, str, lambda p: [] if p == "d" else ["no"], limit=None, label=str)
    assert unbounded == "d"
