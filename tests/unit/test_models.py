"""Coreset selection, the ranker, the size model and the labels file, on small synthetic matrices."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from stitchopt.core import Objective
from stitchopt.errors import InputError
from stitchopt.labels.labelset import LabeledProgram, LabelSet
from stitchopt.labels.measure import list_measures
from stitchopt.learning.fast_margin import fit_fast_margin
from stitchopt.learning.train import PER_LANGUAGE, PER_LANGUAGE_TUNED, constant_order, own_order, train_flag_model
from stitchopt.learning.warm import common_lists
from stitchopt.models.chooser import SoftmaxChooser, decision_costs
from stitchopt.models.coreset import select_coreset
from stitchopt.models.fast_policy import FastPolicy
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NEIGHBOUR_COUNTS, NEIGHBOUR_SHRINKS, NeighbourChooser, backup_gains
from stitchopt.models.ranker import FAILED_LOG_RATIO, ListRanker, jit_change, log_ratio_targets, static_change
from stitchopt.models.size_model import SizeModel, list_target, mape

INF = np.inf


def test_greedy_coreset_covers_complementary_lists_first() -> None:
    ratios = np.array(
        [
            [0.90, 1.00, 0.93, INF],
            [1.00, 0.90, 0.93, INF],
            [1.00, 1.00, 0.93, 0.50],
        ]
    )
    coreset = select_coreset(ratios, k=2)
    assert coreset.indices == (3, 2)  # the single big win, then the list that is good everywhere
    assert coreset.curve[-1] == pytest.approx(np.exp(np.log([0.93, 0.93, 0.5]).mean()) - 1)
    assert coreset.pool_best == pytest.approx(np.exp(np.log([0.9, 0.9, 0.5]).mean()) - 1)
    assert select_coreset(ratios, k=10).curve[-1] == pytest.approx(coreset.pool_best)


def test_rejected_lists_are_skipped_for_good() -> None:
    ratios = np.array([[0.5, 0.9], [0.5, 0.9]])
    coreset = select_coreset(ratios, k=2, accept=lambda j: j != 0)
    assert coreset.indices == (1,) and coreset.rejected == (0,)


def test_lists_that_never_beat_oz_are_not_chosen() -> None:
    assert select_coreset(np.array([[0.9, 1.1, INF]]), k=3).indices == (0,)


def test_failed_lists_become_a_penalty_target() -> None:
    targets = log_ratio_targets(np.array([[0.5, INF, 1.0]]))
    assert targets[0, 0] == pytest.approx(np.log(0.5)) and targets[0, 1] == FAILED_LOG_RATIO and targets[0, 2] == 0


def test_ranker_neighbours_recover_the_labels_of_a_seen_program() -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(40, 6))
    targets = rng.normal(scale=0.1, size=(40, 3))
    ranker = ListRanker(neighbors=1, blend=1.0).fit(features, targets)
    assert np.allclose(ranker.predict(features[:5]), targets[:5], atol=1e-6)
    linear = ListRanker(ridge=1e-6, blend=0.0).fit(features, features @ np.array([[1.0], [0], [0], [0], [0], [2]]))
    assert np.allclose(linear.predict(features[:3]), features[:3, [0]] + 2 * features[:3, [5]], atol=1e-4)
    kept = ranker.restricted_to([2])
    assert np.allclose(kept.predict(features[:5]), targets[:5, [2]], atol=1e-6)


def test_shrinking_pulls_every_program_toward_each_lists_training_mean() -> None:
    rng = np.random.default_rng(1)
    features = rng.normal(size=(30, 4))
    targets = rng.normal(scale=0.1, size=(30, 5))
    constant = ListRanker(neighbors=1, blend=1.0, shrink=0.0).fit(features, targets)
    assert np.allclose(constant.predict(features[:4]), targets.mean(axis=0))  # the best single list for all
    assert np.allclose(constant.predict(features[:4], shrink=1.0), targets[:4], atol=1e-6)  # jit's own order
    half = ListRanker(neighbors=1, blend=1.0, shrink=0.5).fit(features, targets)
    assert np.allclose(half.predict(features[:4]), (targets[:4] + targets.mean(axis=0)) / 2, atol=1e-6)
    assert static_change(np.array([[-0.1, 0.2]]), np.array([[0.9, 0.5]])) == pytest.approx(-0.1)
    assert static_change(np.array([[0.1, 0.2]]), np.array([[0.9, 0.5]])) == 0.0  # nothing predicted to win
    assert jit_change(np.array([[-0.1, 0.2]]), np.array([[0.9, 0.5]]), 2) == pytest.approx(-0.5)


def test_size_model_picks_the_better_regression_per_target_and_ignores_failed_lists() -> None:
    rng = np.random.default_rng(1)
    raw = rng.integers(1, 200, size=(60, 4)).astype(float)
    additive = raw @ np.array([4.0, 2.0, 0.0, 1.0]) + 30  # bytes per instruction kind, plus a constant
    standardized = (np.log1p(raw) - np.log1p(raw).mean(0)) / np.log1p(raw).std(0)
    multiplicative = np.exp(3 + 0.3 * standardized[:, 0] - 0.2 * standardized[:, 1])
    values = np.stack([additive, multiplicative], axis=1)
    values[0, 1] = np.nan
    folds = np.arange(60) % 5
    model = SizeModel(("size:O0", list_target(0)), ridge=1e-6).fit(standardized, raw, values, folds)
    assert model.kinds == ("linear", "log")
    assert mape(model.predict(standardized, raw)[:, [0]], values[:, [0]]) < 0.01  # ridged, so not exact
    assert mape(model.predict(standardized, raw)[:, [1]], values[:, [1]]) < 1e-3
    assert model.restricted_to([0]).targets == ("size:O0", list_target(0))


# One program's row of three lists: sizes, instructions and compile seconds, the third list failed.
TIMED = LabeledProgram(
    "bench://x-v1/a.c",
    "ab" * 32,
    "x",
    "train",
    {"O0": 200, "Oz": 100, "O3": 150},
    {"O0": 20, "Oz": 10, "O3": 15},
    (90, 100, None),
    (9, 10, None),
    {"O0": 0.1, "Oz": 0.4, "O3": 0.5},
    (0.8, 0.2, None),
)


def test_labels_round_trip_and_reject_other_files(tmp_path: Path) -> None:
    program = replace(TIMED, sizes=(90, None), instructions=(9, None), baseline_seconds={}, seconds=())
    labels = LabelSet("llvm", "cat", "bench://x-v1", (("sroa",), ("instcombine", "gvn")), (program,), 12.5)
    labels.save(tmp_path / "labels.json.gz")
    loaded = LabelSet.load(tmp_path / "labels.json.gz")
    assert loaded == labels
    assert loaded.ratios()[0, 0] == pytest.approx(0.9) and loaded.ratios()[0, 1] == INF
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip")
    with pytest.raises(InputError, match="not a stitchopt labels file"):
        LabelSet.load(tmp_path / "bad.json.gz")


def test_a_row_read_back_for_a_changed_pool_keeps_what_was_built() -> None:
    """Failures are measured again (under today's guards), and a row without compile seconds is measured whole:
    its lists would otherwise read as compiled in no time."""
    row, lists = TIMED, (("a",), ("b",), ("c",))
    assert list_measures(row, lists) == {("a",): (90, 9, 0.8), ("b",): (100, 10, 0.2)}
    assert list_measures(replace(row, seconds=()), lists) == {}
    assert list_measures(row, lists[:2]) == {}  # a row that does not fit its shard's lists


def test_objective_values_weigh_size_and_compile_time_against_oz() -> None:
    timed = TIMED
    labels = LabelSet("llvm", "cat", "bench://x-v1", (("a",), ("b",), ("c",)), (timed,), 1.0)
    assert np.allclose(labels.objective_values(Objective()), labels.ratios())
    both = labels.objective_values(Objective.parse("size=1,compile-time=1"))
    assert both[0, 0] == pytest.approx((0.9 + 2.0) / 2) and both[0, 1] == pytest.approx((1.0 + 0.5) / 2)
    assert both[0, 2] == INF
    untimed = LabelSet("llvm", "cat", "d", labels.lists, (replace(timed, baseline_seconds={}, seconds=()),), 1.0)
    assert np.allclose(untimed.objective_values(Objective()), labels.ratios())  # files made before compile times
    with pytest.raises(InputError, match="no compile times"):
        untimed.objective_values(Objective.parse("size=1,compile-time=0.1"))
    with pytest.raises(InputError, match="no perf values"):
        labels.objective_values(Objective.parse("size=1,perf=1"))
    security = np.array([[1.0, 2.0, np.nan, 2.0]])  # lists a, b, c, then -Oz: a keeps more than -Oz, c unread
    weighed = labels.objective_values(Objective.parse("size=1,security=1"), {"security": security})
    assert weighed[0, 0] == pytest.approx((0.9 + 0.5) / 2) and weighed[0, 1] == pytest.approx(1.0)
    assert weighed[0, 2] == INF


def test_common_lists_count_only_the_top_k_and_break_ties_by_first_sight() -> None:
    a, b, c = ("instcombine",), ("gvn",), ("sroa",)
    rankings = [[b, None, a, c], [a, b, c], [c, a, b]]
    assert common_lists(rankings, k=2, count=2) == (b, a)  # b and a twice in the top 2, c once; -Oz never
    assert common_lists(rankings, k=1, count=5) == (b, a, c)


def test_the_chooser_learns_which_programs_a_list_helps_and_keeps_oz_for_the_rest() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    helped = x[:, 0] > 0  # list 0 helps these programs by 5% and costs the others 5%; list 1 always costs 2%
    ratios = np.column_stack([np.where(helped, 0.95, 1.05), np.full(200, 1.02)])
    costs = decision_costs(ratios)
    assert costs.shape == (200, 3) and (costs[:, -1] == 0).all()
    chooser = SoftmaxChooser(0.01).fit(x, costs)
    choices = chooser.probabilities(x).argmax(axis=1)
    assert (choices[helped] == 0).mean() > 0.9  # list 0 where it helps
    assert (choices[~helped] == 2).mean() > 0.9  # -Oz (the last choice) elsewhere, never the list that always costs
    assert chooser.restricted_to([1]).probabilities(x).shape == (200, 2)


def test_failed_lists_cost_as_much_as_doubling_for_the_chooser() -> None:
    costs = decision_costs(np.array([[np.inf, 0.5]]))
    assert costs[0].tolist() == pytest.approx([FAILED_LOG_RATIO, np.log(0.5), 0.0])


def test_a_constant_chooser_orders_every_program_alike() -> None:
    chooser = SoftmaxChooser.constant(np.array([0.01, 0.03, -np.inf]), features=2)
    order = np.argsort(-chooser.probabilities(np.random.default_rng(1).normal(size=(5, 2))), axis=1)
    assert (order == [1, 0, 2]).all()  # the better list first, -Oz last


def test_the_neighbours_chooser_counts_only_gains_and_keeps_oz_where_none_is_expected() -> None:
    """List 0 shrinks one kind of program by 10% and grows the rest by 30% (on average a loss, so a regression
    or the best single list avoids it); list 1 shrinks everything by 1%; nothing helps a third kind."""
    rng = np.random.default_rng(3)
    kind = np.repeat([0, 1, 2], 40)
    x = np.eye(3)[kind] * 4 + rng.normal(scale=0.3, size=(120, 3))
    ratios = np.column_stack(
        [np.where(kind == 0, 0.90, np.where(kind == 1, 1.30, np.inf)), np.where(kind == 2, 1.05, 0.99)]
    )
    assert backup_gains(ratios)[kind == 2].tolist() == [[0.0, 0.0]] * 40  # failures and losses gain nothing
    chooser = NeighbourChooser(neighbors=5, shrink=1.0).fit(x, ratios)
    first = np.argsort(chooser.order(x), axis=1, kind="stable")[:, 0]
    assert (first[kind == 0] == 0).all() and (first[kind == 1] == 1).all()
    assert (first[kind == 2] == 2).all()  # -Oz (the last choice) where no neighbour gained
    shrunk = NeighbourChooser(neighbors=5, shrink=0.0).fit(x, ratios)  # every program: the lists' mean gains
    assert (np.argsort(shrunk.order(x), axis=1, kind="stable")[:, 0] == 0).all()
    alone = np.argsort(chooser.restricted_to([1]).order(x), axis=1, kind="stable")[:, 0]  # list 1, then -Oz
    assert (alone[kind < 2] == 0).all() and (alone[kind == 2] == 1).all()


def test_the_neighbours_order_tries_a_list_that_helps_other_neighbours_before_a_near_copy_of_the_first() -> None:
    """Among a program's neighbours (here all programs, as for the best single list), lists 0 and 1 shrink the
    same half (by 5% and 4%), list 2 the other half (by 3%): by expected gain jit's second try would be list 1,
    which adds nothing to list 0; covering, list 2."""
    x = np.random.default_rng(5).normal(scale=0.1, size=(20, 2))
    half = np.arange(20) < 10
    ratios = np.column_stack([np.where(half, 0.95, 1.0), np.where(half, 0.96, 1.0), np.where(half, 1.0, 0.97)])
    chooser = NeighbourChooser(neighbors=20, shrink=0.5).fit(x, ratios)
    assert (np.argsort(chooser.gains(x), axis=1)[:, :3] == [0, 1, 2]).all()
    assert (np.argsort(chooser.order(x), axis=1, kind="stable") == [0, 2, 1, 3]).all()  # -Oz last
    assert np.argsort(constant_order(ratios), kind="stable").tolist() == [0, 2, 1, 3]  # the best single list's too


def test_a_chooser_per_language_answers_each_program_from_its_languages_programs() -> None:
    """Four in five programs are C, which list 0 shrinks by 5%; list 1 shrinks the C++ ones by 10%, and the
    features cannot tell them apart. Over all programs the means (shrink 0) pick list 0 for everyone; per
    language each language gets its own list, and a program of a language the chooser has no programs of gets
    the all-program answer."""
    rng = np.random.default_rng(7)
    languages: list[str | None] = ["c"] * 40 + ["c++"] * 10
    cxx = np.array([language == "c++" for language in languages])
    x = rng.normal(size=(50, 3))
    ratios = np.column_stack([np.where(cxx, 1.0, 0.95), np.where(cxx, 0.9, 1.0)])

    def first(chooser: NeighbourChooser, asked: list[str | None] | None) -> np.ndarray:
        return np.argsort(chooser.order(x, asked), axis=1, kind="stable")[:, 0]

    for neighbors, shrink in ((5, 0.0), (5, 0.5)):
        everyone = NeighbourChooser(neighbors, shrink).fit(x, ratios)
        assert (first(everyone, languages) == first(everyone, None)).all()  # no languages fitted: ignored
        assert (first(everyone, None) == 0).sum() >= (45 if shrink else 50)
        own = NeighbourChooser(neighbors, shrink).fit(x, ratios, languages)
        assert own.languages == ("c", "c++")
        assert (first(own, languages) == np.where(cxx, 1, 0)).all()
        assert (first(own, None) == first(everyone, None)).all()
        assert (first(own, [None] * 25 + ["fortran"] * 25) == first(everyone, None)).all()
        assert (own.restricted_to([1]).order(x, languages)[:, 0] == 0).all()  # the one list kept comes first
        assert (first(own.restricted_to([1]), languages)[~cxx] == 1).all()  # C: -Oz, list 1 gains it nothing


def test_a_chooser_tuned_per_language_answers_each_language_with_its_own_setting() -> None:
    rng = np.random.default_rng(9)
    languages: list[str | None] = ["c"] * 30 + ["c++"] * 20
    x, ratios = rng.normal(size=(50, 3)), rng.uniform(0.9, 1.1, size=(50, 4))
    asked: list[str | None] = ["c"] * 5 + ["c++"] * 5
    queries = rng.normal(size=(10, 3))
    tuned = NeighbourChooser(10, 0.5).fit(x, ratios, languages).tuned_per_language([(20, 1.0), (3, 0.5)])
    alone = {
        "c": NeighbourChooser(20, 1.0).fit(x[:30], ratios[:30]),
        "c++": NeighbourChooser(3, 0.5).fit(x[30:], ratios[30:]),
    }
    assert np.array_equal(tuned.order(queries[:5], asked[:5]), alone["c"].order(queries[:5]))
    assert np.array_equal(tuned.order(queries[5:], asked[5:]), alone["c++"].order(queries[5:]))
    untuned = NeighbourChooser(10, 0.5).fit(x, ratios, languages)
    assert np.array_equal(tuned.order(queries, None), untuned.order(queries, None))  # no language: the chooser's
    assert not np.array_equal(tuned.order(queries, asked), untuned.order(queries, asked))
    for wrong in ([(20, 1.0)], [(0, 0.5), (3, 0.5)], [(5, 1.5), (3, 0.5)]):
        with pytest.raises(ValueError):
            untuned.tuned_per_language(wrong)
    with pytest.raises(ValueError):  # a chooser over all programs has no languages to tune
        NeighbourChooser(10, 0.5).fit(x, ratios).tuned_per_language([(20, 1.0), (3, 0.5)])


def test_a_tuned_choosers_own_order_answers_each_language_with_its_setting() -> None:
    orders = {(PER_LANGUAGE, (float(k), s)): np.full((4, 3), float(k) + s) for k in (5, 10, 40) for s in (0.5, 1.0)}
    languages: list[str | None] = ["c", "c++", "c", None]
    tuned = (10.0, 0.5, 5.0, 1.0, 40.0, 0.5)  # over all, then C's and C++'s
    order = own_order(orders, PER_LANGUAGE_TUNED, tuned, languages, ("c", "c++"))
    assert order is not None and order[:, 0].tolist() == [6.0, 40.5, 6.0, 10.5]
    assert own_order(orders, PER_LANGUAGE, (5.0, 1.0), languages, ("c", "c++")) is orders[PER_LANGUAGE, (5.0, 1.0)]
    assert own_order(orders, PER_LANGUAGE_TUNED, (10.0, 0.5, 7.0, 1.0, 40.0, 0.5), languages, ("c", "c++")) is None


def _helped_by_one_list(index: int, suffix: str, first: bool) -> LabeledProgram:
    """Program `index` of package p<index % 10>: the first of two lists shrinks it by 5% and the second grows it
    by 4%, or the other way round."""
    return LabeledProgram(
        f"bench://t-v1/p{index % 10}/u{index}{suffix}",
        f"{index}",
        f"p{index % 10}",
        "train",
        {"O0": 3000, "Oz": 1000, "O3": 1500},
        {"O0": 300, "Oz": 100, "O3": 150},
        (950, 1040) if first else (1040, 950),
        (100, 100),
    )


def test_training_chooses_a_chooser_per_language_where_the_language_decides_the_list() -> None:
    """C units gain from list a, C++ units from list b, and the features are noise: only a chooser per
    language (read from the units' source suffixes) finds each unit's list on held-out packages."""
    rng = np.random.default_rng(8)
    programs = [_helped_by_one_list(index, ".cpp" if index % 2 else ".c", index % 2 == 0) for index in range(100)]
    labels = LabelSet("llvm", "catalogue", "t", (("a",), ("b",)), tuple(programs), 1.0)
    model, report = train_flag_model(labels, rng.normal(size=(100, 4)) + 5.0, (), llvm_version="19", k=2)
    assert report.candidates[0].kind == PER_LANGUAGE and report.cross_validated == pytest.approx(-0.05)
    everyone = [c for c in report.candidates if c.kind == "neighbours"]
    assert max(c.static_backup for c in everyone) > -0.04  # without the language, no way of choosing finds it
    assert isinstance(model.chooser, NeighbourChooser) and model.chooser.languages == ("c", "c++")
    ranked = model.rank_features(rng.normal(size=(2, 4)) + 5.0, ["c", "c++"])
    assert [r[0].passes for r in ranked] == [("a",), ("b",)]


def _unit(index: int, suffix: str, sizes: tuple[int, ...]) -> LabeledProgram:
    return replace(_helped_by_one_list(index, suffix, True), sizes=sizes, instructions=(100,) * len(sizes))


def test_training_tunes_the_neighbours_per_language_where_the_languages_want_different_counts(
    tmp_path: Path,
) -> None:
    """C units: list a shrinks those with a positive first feature and list b the others, with 30% of them the
    other way round, so many neighbours choose best; C++ units, among them: four tight clusters of 10 on a
    square, each shrunk by list b or c and its two neighbouring clusters by the other, so few neighbours choose
    best. No single setting serves both; the chooser tuned per language does, and its setting survives saving."""
    rng = np.random.default_rng(10)
    programs, features = [], []
    for index in range(200):
        row = rng.normal(size=3)
        helped_by_a = (row[0] > 0) != (rng.random() < 0.3)
        programs.append(_unit(index, ".c", (950, 1040, 1040) if helped_by_a else (1040, 950, 1040)))
        features.append(row)
    corners = [(1.0, 1.0), (1.0, -1.0), (-1.0, -1.0), (-1.0, 1.0)]  # lists b, c, b, c
    for index in range(200, 240):
        cluster = (index // 10) % 4
        programs.append(_unit(index, ".cpp", (1040, 900, 1040) if cluster % 2 == 0 else (1040, 1040, 900)))
        features.append([*corners[cluster], *rng.normal(scale=0.05, size=1)])
    labels = LabelSet("llvm", "catalogue", "t", (("a",), ("b",), ("c",)), tuple(programs), 1.0)
    model, report = train_flag_model(labels, np.array(features) + 10.0, (), llvm_version="19", k=3)
    winner = report.candidates[0]
    assert winner.kind == PER_LANGUAGE_TUNED, [(c.name, c.static_backup) for c in report.candidates[:4]]
    assert all(winner.static_backup < c.static_backup for c in report.candidates if c.kind == PER_LANGUAGE)
    assert isinstance(model.chooser, NeighbourChooser) and model.chooser.languages == ("c", "c++")
    (c_count, _), (cxx_count, _) = model.chooser.language_settings
    assert c_count >= 20 and cxx_count <= 10 and "c++ k=" in winner.name
    model.save_pretrained(tmp_path / "model")
    loaded = FlagModel.from_pretrained(tmp_path / "model")
    assert isinstance(loaded.chooser, NeighbourChooser)
    assert loaded.chooser.language_settings == model.chooser.language_settings
    asked = np.array([[2.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, -1.0, 0.0]]) + 10.0
    ranked = loaded.rank_features(asked, ["c", "c++", "c++"])
    assert [r[0].passes for r in ranked] == [("a",), ("b",), ("c",)]


def test_cross_validation_finds_per_program_choices_where_programs_differ_in_which_list_helps() -> None:
    rng = np.random.default_rng(2)
    programs, features = [], []
    for index in range(120):
        helped = index % 2 == 0  # list 0 helps even programs, list 1 odd ones; both cost 4% elsewhere
        features.append([1.0 if helped else 0.0, *rng.normal(size=3)])
        programs.append(_helped_by_one_list(index, "", helped))
    labels = LabelSet("llvm", "catalogue", "t", (("a",), ("b",)), tuple(programs), 1.0)
    model, report = train_flag_model(labels, np.array(features) + 5.0, (), llvm_version="19", k=2)
    best_single = next(c for c in report.candidates if c.kind == "best single list")
    chooser = next(c for c in report.candidates if c.kind == "chooser")
    assert report.candidates[0].kind != "best single list" and best_single.regressed > 0.4
    assert chooser.static_backup == pytest.approx(-0.05) and chooser.regressed == 0  # each program's own list
    neighbours = [c for c in report.candidates if c.kind == "neighbours"]
    assert len(neighbours) == len(NEIGHBOUR_COUNTS) * len(NEIGHBOUR_SHRINKS) and min(
        c.static_backup for c in neighbours
    ) == pytest.approx(-0.05)
    assert report.cross_validated == pytest.approx(-0.05) and len(model.lists) == 2
    # Where the model tells programs apart, the fast policy builds a list without the backup and grows nothing.
    assert model.fast is not None and model.fast.grown == 0 and model.fast.change == pytest.approx(-0.05)


def test_the_fast_margin_trades_units_a_list_shrinks_for_the_ones_it_grows() -> None:
    # Confident predictions are right, timid ones wrong: the margin sits between them.
    predicted = np.array([-0.2, -0.15, -0.01, -0.005, INF])
    ratios = np.array([0.8, 0.85, 1.1, 1.05, 1.0])
    policy = fit_fast_margin(predicted, ratios)
    assert 0.01 <= policy.margin < 0.15
    assert policy.built == pytest.approx(0.4) and policy.grown == 0
    assert policy.change == pytest.approx(np.exp(np.log([0.8, 0.85]).sum() / 5) - 1)


def test_the_fast_margin_grows_at_most_a_tenth_of_the_units() -> None:
    # Timid predictions (-0.05) shrink 8 units and grow 2, confident ones (-0.6) shrink 2: building on both has
    # the better geomean but grows 2 of 12 units, so only the confident ones are built.
    predicted = np.array([-0.05] * 10 + [-0.6] * 2)
    ratios = np.array([0.8] * 8 + [1.01] * 2 + [0.9] * 2)
    policy = fit_fast_margin(predicted, ratios)
    assert policy.margin >= 0.05 and policy.built == pytest.approx(2 / 12) and policy.grown == 0
    fewer = np.r_[predicted[:9], predicted[11:]], np.r_[ratios[:9], ratios[11:]]  # 1 of 10 grown: allowed
    assert fit_fast_margin(*fewer).margin < 0.05 and fit_fast_margin(*fewer).grown == pytest.approx(0.1)


def test_a_model_whose_lists_never_pay_off_alone_keeps_oz_in_fast_mode() -> None:
    policy = fit_fast_margin(np.array([-0.3, -0.2, -0.1]), np.array([1.2, INF, 1.01]))
    assert policy.margin == INF and policy.built == 0 and policy.change == 0
    assert FastPolicy.from_dict(policy.to_dict()) == policy  # null margin in the file: never build
