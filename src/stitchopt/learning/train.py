"""Train the flag-tuning model from labels: coreset, the way static mode chooses (the best single list, the
regression ranker, the softmax chooser or the neighbours' gains, compared by package-grouped cross-validation)
and size model. Everything is closed-form or a few hundred numpy steps, so training is seconds; labels are the
expensive part."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import unit_language
from stitchopt.errors import InputError
from stitchopt.features.base import FeatureCache, Representation, Standardizer
from stitchopt.features.by_name import default_representations
from stitchopt.labels.labelset import LabelSet, labeled_features
from stitchopt.labels.probed import probed_values
from stitchopt.learning.fast_margin import fit_fast_margin
from stitchopt.models.chooser import PENALTIES, SoftmaxChooser, decision_costs
from stitchopt.models.coreset import DEFAULT_K, Coreset, select_coreset
from stitchopt.models.covering import cover_order
from stitchopt.models.fast_policy import FastPolicy
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NEIGHBOUR_COUNTS, NEIGHBOUR_SHRINKS, NeighbourChooser, backup_gains
from stitchopt.models.ranker import (
    BLENDS,
    NEIGHBORS,
    RIDGES,
    SHRINKS,
    ListRanker,
    geomean_change,
    jit_change,
    log_ratio_targets,
    static_change,
)
from stitchopt.models.size_model import SizeModel, mape, size_targets
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.tune.acceptance import ListValidation

JIT_K = 10  # the jit budget whose ordering breaks ties between hyper-parameters
PER_LANGUAGE = "neighbours per language"  # the kind of a chooser per language (`NeighbourChooser.fit`'s languages)
# A chooser per language whose languages each keep their own neighbour setting (`tuned_per_language`).
PER_LANGUAGE_TUNED = "neighbours tuned per language"
FOLDS = 5
SIZE = Objective()


@dataclass(frozen=True)
class Candidate:
    """One way of choosing, scored on held-out folds (geomean size change vs -Oz)."""

    name: str
    static: float  # the top-1 list alone
    static_backup: float  # the top-1 list with the -Oz backup: what chooses the model
    jit: float  # the top JIT_K lists and -Oz
    regressed: float  # share of programs the top-1 list alone makes larger than -Oz
    kind: str  # "best single list", "regression ranker", "chooser", or one of the neighbours' kinds
    # The chooser's (penalty,), the neighbours' (count, shrink); tuned per language, then each language's
    # (count, shrink) in sorted order of the languages.
    setting: tuple[float, ...]


@dataclass(frozen=True)
class TrainReport:
    coreset: Coreset
    cross_validated: float  # geomean size change vs -Oz of the top-1 list with the -Oz backup, held-out folds
    hyper_parameters: dict[str, float]
    size_mape: dict[str, float]  # in-sample MAPE per target group (held-out figures: `evaluate`)
    candidates: tuple[Candidate, ...] = ()  # every kind of chooser cross-validation compared, the chosen first


def train_flag_model(
    labels: LabelSet,
    features: np.ndarray,
    representations: Sequence[Representation],
    *,
    llvm_version: str,
    k: int = DEFAULT_K,
    accept: Callable[[int], bool] | None = None,
    objective: Objective = SIZE,
    probed: Mapping[str, np.ndarray] | None = None,
    finish: PassNames = (),
) -> tuple[FlagModel, TrainReport]:
    """`features`: raw (unstandardized) rows in `labels.programs` order. `accept(j)` may veto pool list j
    (e.g. run the validator) when the coreset selection would take it. The coreset and the ranker work on
    `objective` relative to -Oz (object size by default); `probed` holds the values of its probed terms
    (`labels.probed`). The model's lists end with the `finish` passes, which the labels did not measure."""
    standardizer = Standardizer.fit(features, log=True)
    x = standardizer.transform(features)
    ratios = labels.objective_values(objective, probed)
    coreset = select_coreset(ratios, k, accept)
    if not coreset.indices:
        raise InputError("no list of the pool beats -Oz on any labeled program: search longer (--pool-budget)")
    lists = tuple(labels.lists[j] for j in coreset.indices)
    chosen_ratios = ratios[:, list(coreset.indices)]
    targets = log_ratio_targets(chosen_ratios)
    folds = package_folds([p.package for p in labels.programs])
    best, score = _choose_hyper_parameters(x, targets, chosen_ratios, folds)
    ranker = ListRanker(int(best["neighbors"]), best["ridge"], best["blend"], best["shrink"]).fit(x, targets)
    languages = [unit_language(p.uri) for p in labels.programs]
    candidates, held_out = _compare_choosers(x, targets, chosen_ratios, folds, best, languages)
    winner = candidates[0]
    fast = held_out.fast_policy(held_out.orders[winner.kind, winner.setting], chosen_ratios)
    chooser: SoftmaxChooser | NeighbourChooser | None = None
    if winner.kind == "chooser":
        (penalty,) = winner.setting
        chooser = SoftmaxChooser(penalty).fit(x, decision_costs(chosen_ratios))
        best = {**best, "chooser_penalty": penalty}
    elif winner.kind in ("neighbours", PER_LANGUAGE, PER_LANGUAGE_TUNED):
        count, shrink, *tuned = winner.setting
        chooser = NeighbourChooser(int(count), shrink).fit(
            x, chosen_ratios, None if winner.kind == "neighbours" else languages
        )
        best = {**best, "chooser_neighbors": int(count), "chooser_shrink": shrink}
        settings = [(int(own_count), own_shrink) for own_count, own_shrink in _language_settings(tuned)]
        if any(setting != (count, shrink) for setting in settings):  # else it is the chooser per language
            chooser = chooser.tuned_per_language(settings)
            for language, (own_count, own_shrink) in zip(chooser.languages, settings, strict=True):
                best = {**best, f"chooser_neighbors[{language}]": own_count, f"chooser_shrink[{language}]": own_shrink}
    elif winner.kind == "best single list":
        chooser = SoftmaxChooser.constant(-constant_order(chosen_ratios), x.shape[1])
    if winner.kind != "regression ranker":  # the hyper-parameters shown are the ranker's (it still predicts sizes)
        score = winner.static_backup
    actual = size_values(labels, coreset)
    size_model = SizeModel(size_targets(len(lists)), ridge=1.0).fit(x, features, actual, folds)
    size_mape = size_errors(size_model.predict(x, features), actual)
    model = FlagModel(
        tuple(representations),
        standardizer,
        lists,
        ranker,
        size_model,
        llvm_version,
        labels.catalogue,
        {
            "dataset": labels.dataset,
            "programs": len(labels.programs),
            "pool": len(labels.lists),
            "toolchain": labels.toolchain,
            "objective": str(objective),
        },
        chooser,
        fast,
    ).with_finish(finish)
    return model, TrainReport(coreset, score, {k: float(v) for k, v in best.items()}, size_mape, candidates)


def fast_policy_for_model(
    model: FlagModel, toolchain: Toolchain, labels: LabelSet, store: EvaluationStore | None = None
) -> tuple[FastPolicy, dict[str, str]]:
    """The `fast` margin of a model trained before margins were learned: its own lists, standardizer and way of
    choosing, cross-validated on package folds of `labels` (the programs whose IR this machine reproduces;
    skipped ones returned uri -> why), as training now does for new models."""
    columns = {passes: j for j, passes in enumerate(labels.lists)}
    labelled = model.labelled_lists()
    missing = [",".join(passes) for passes in labelled if passes not in columns]
    if missing:
        raise InputError(f"{len(missing)} of the model's lists are not in these labels (e.g. {missing[0]})")
    data = labeled_features(
        toolchain, labels, model.representations, FeatureCache(store) if store is not None else None
    )
    if not data.labels.programs:
        raise InputError("no labeled program could be read: build the dataset first (`stitchopt datasets build`)")
    ratios = data.labels.objective_values(SIZE)[:, [columns[passes] for passes in labelled]]
    x = model.standardizer.transform(data.features)
    ranker = {
        "neighbors": float(model.ranker.neighbors),
        "ridge": model.ranker.ridge,
        "blend": model.ranker.blend,
        "shrink": model.ranker.shrink,
    }
    folds = package_folds([p.package for p in data.labels.programs])
    languages = [unit_language(p.uri) for p in data.labels.programs]
    candidates, held_out = _compare_choosers(x, log_ratio_targets(ratios), ratios, folds, ranker, languages)
    kind, setting = _kind_and_setting(model.chooser)
    own = own_order(held_out.orders, kind, setting, languages, _chooser_languages(model))
    if own is None:
        raise InputError(
            f"the model chooses by {_candidate_name(kind, setting, _chooser_languages(model))}, which training no "
            "longer compares: train it again with `stitchopt train`"
        )
    return held_out.fast_policy(own, ratios), data.skipped


def own_order(
    orders: dict[tuple[str, tuple[float, ...]], np.ndarray],
    kind: str,
    setting: tuple[float, ...],
    languages: Sequence[str | None],
    chooser_languages: Sequence[str],
) -> np.ndarray | None:
    """The held-out order (`HeldOut.orders`) of a model's way of choosing (`kind`, `setting`) over programs in
    `languages`, None when training compares no such way. A chooser tuned per language (its languages
    `chooser_languages`) answers each language's programs with that language's setting as it was trained,
    not one chosen again on these labels."""
    if kind != PER_LANGUAGE_TUNED:
        return orders.get((kind, setting))
    count, shrink, *own = setting
    order = orders.get((PER_LANGUAGE, (count, shrink)))
    if order is None:
        return None
    order = np.array(order)  # a copy
    for language, own_setting in zip(chooser_languages, _language_settings(own), strict=True):
        answered = orders.get((PER_LANGUAGE, own_setting))
        if answered is None:
            return None
        rows = np.array([name == language for name in languages])
        order[rows] = answered[rows]
    return order


def _language_settings(values: Sequence[float]) -> list[tuple[float, float]]:
    """Each language's (count, shrink) from the flat tail of a tuned candidate's setting."""
    return [(values[i], values[i + 1]) for i in range(0, len(values), 2)]


def _chooser_languages(model: FlagModel) -> tuple[str, ...]:
    return model.chooser.languages if isinstance(model.chooser, NeighbourChooser) else ()


def _kind_and_setting(chooser: SoftmaxChooser | NeighbourChooser | None) -> tuple[str, tuple[float, ...]]:
    """Which of `_compare_choosers`' candidates a trained model's way of choosing is."""
    if chooser is None:
        return "regression ranker", ()
    if isinstance(chooser, NeighbourChooser):
        if chooser.language_settings:
            own = [float(value) for setting in chooser.language_settings for value in setting]
            return PER_LANGUAGE_TUNED, (float(chooser.neighbors), chooser.shrink, *own)
        kind = "neighbours" if chooser.train_languages is None else PER_LANGUAGE
        return kind, (float(chooser.neighbors), chooser.shrink)
    return ("chooser", (chooser.penalty,)) if chooser.penalty else ("best single list", ())


@dataclass(frozen=True)
class HeldOut:
    """Held-out folds' answers: each way of choosing's order per program (lists, then -Oz) and the regression
    ranker's static (shrunk) predicted log ratios, which the `fast` policy's margin is set on."""

    orders: dict[tuple[str, tuple[float, ...]], np.ndarray]
    static_predictions: np.ndarray

    def fast_policy(self, order: np.ndarray, ratios: np.ndarray) -> FastPolicy:
        """The margin for building the static choice of a way of choosing (its held-out `order`) without the
        -Oz backup."""
        first = np.argsort(order, axis=1, kind="stable")[:, 0]
        rows = np.arange(len(first))
        is_list = first < ratios.shape[1]
        column = np.minimum(first, ratios.shape[1] - 1)
        predicted = np.where(is_list, self.static_predictions[rows, column], np.inf)
        return fit_fast_margin(predicted, np.where(is_list, ratios[rows, column], 1.0))


def _compare_choosers(
    x: np.ndarray,
    targets: np.ndarray,
    ratios: np.ndarray,
    folds: np.ndarray,
    ranker: dict[str, float],
    languages: Sequence[str | None],
) -> tuple[tuple[Candidate, ...], HeldOut]:
    """The best single list, the regression ranker chosen by `_choose_hyper_parameters`, the softmax chooser at
    each penalty and the neighbours' gains at each count and shrink, over all programs and (when some program's
    language is known) per language, on the same held-out folds; the best static + backup first (ties: the
    better jit, then the simpler model). Each gives every program an order over the lists and -Oz (the last
    column), read the way the modes read a ranking: static builds the first, jit the first JIT_K (with -Oz
    always built)."""
    oz = ratios.shape[1]
    neighbours = [(float(count), shrink) for count in NEIGHBOUR_COUNTS for shrink in NEIGHBOUR_SHRINKS]
    kinds = ["neighbours", PER_LANGUAGE] if any(languages) else ["neighbours"]
    orders: dict[tuple[str, tuple[float, ...]], np.ndarray] = {
        ("best single list", ()): np.zeros((len(ratios), oz + 1)),
        ("regression ranker", ()): np.zeros((len(ratios), oz + 1)),
        **{("chooser", (penalty,)): np.zeros((len(ratios), oz + 1)) for penalty in PENALTIES},
        **{(kind, setting): np.zeros((len(ratios), oz + 1)) for kind in kinds for setting in neighbours},
    }
    for order in orders.values():
        order[:, :oz] = np.inf  # a program alone in its fold keeps -Oz, as in `_choose_hyper_parameters`
    costs = decision_costs(ratios)
    static_predictions = np.full(ratios.shape, np.inf)
    for fold in np.unique(folds):
        test = folds == fold
        if test.all():
            continue
        orders["best single list", ()][test] = constant_order(ratios[~test])
        fitted = ListRanker(int(ranker["neighbors"]), ranker["ridge"], ranker["blend"], ranker["shrink"])
        orders["regression ranker", ()][test] = fitted.fit(x[~test], targets[~test]).order(x[test])
        static_predictions[test] = fitted.predict(x[test])
        for weight in PENALTIES:
            orders["chooser", (weight,)][test] = SoftmaxChooser(weight).fit(x[~test], costs[~test]).order(x[test])
        trained = [language for language, held in zip(languages, test, strict=True) if not held]
        tested = [language for language, held in zip(languages, test, strict=True) if held]
        for kind, (count, shrink) in itertools.product(kinds, neighbours):
            chooser = NeighbourChooser(int(count), shrink).fit(
                x[~test], ratios[~test], trained if kind == PER_LANGUAGE else None
            )
            orders[kind, (count, shrink)][test] = chooser.order(x[test], tested)
    with_oz = np.hstack([ratios, np.ones((len(ratios), 1))])
    if PER_LANGUAGE in kinds:
        tuned, order = _tuned_per_language(orders, with_oz, folds, languages, neighbours)
        orders[PER_LANGUAGE_TUNED, tuned] = order
    candidates = []
    for (kind, setting), order in orders.items():
        chosen, tried = _first_and_tried(order, with_oz)
        candidates.append(
            Candidate(
                _candidate_name(kind, setting, sorted({language for language in languages if language})),
                geomean_change(np.where(np.isfinite(chosen), chosen, 2.0)),
                geomean_change(np.minimum(chosen, 1.0)),
                geomean_change(np.minimum(tried, 1.0)),
                float((chosen > 1.0).mean()),
                kind,
                setting,
            )
        )
    simplicity = {candidate.name: i for i, candidate in enumerate(candidates)}
    best_first = tuple(sorted(candidates, key=lambda c: (round(c.static_backup, 6), c.jit, simplicity[c.name])))
    return best_first, HeldOut(orders, static_predictions)


def _tuned_per_language(
    orders: dict[tuple[str, tuple[float, ...]], np.ndarray],
    with_oz: np.ndarray,
    folds: np.ndarray,
    languages: Sequence[str | None],
    settings: Sequence[tuple[float, float]],
) -> tuple[tuple[float, ...], np.ndarray]:
    """A chooser per language whose languages each keep the neighbour setting that serves their programs best
    (static + backup, then jit), for languages that want other settings than the rest. Each fold's programs of
    a language are answered by the setting chosen on the other folds' programs of that language (programs of
    no known language, and a language all in one fold, by the one chosen on all the other folds' programs), so
    that the choice is held out too; the setting returned, which training saves, is chosen on all of them.
    Returns (count, shrink) for programs of no known language (the best over all programs), then each
    language's in sorted order, and the held-out order."""
    gains = {}
    for setting in settings:
        static, tried = _first_and_tried(orders[PER_LANGUAGE, setting], with_oz)
        gains[setting] = np.log(np.minimum(static, 1.0)), np.log(np.minimum(tried, 1.0))

    def best(rows: np.ndarray) -> tuple[float, float]:
        def score(setting: tuple[float, float]) -> tuple[float, float]:
            static, jit = gains[setting]
            return round(float(static[rows].mean()), 9), round(float(jit[rows].mean()), 9)

        return min(settings, key=score)  # ties: the earlier setting

    everyone = np.ones(len(with_oz), dtype=bool)
    named = np.array([language or "" for language in languages])
    known = sorted(set(named) - {""})
    order = np.empty_like(orders[PER_LANGUAGE, settings[0]])
    for group in [*known, ""]:
        rows = named == group
        for fold in np.unique(folds[rows]):
            outside = folds != fold
            own = rows & outside if group else outside  # no known language: chosen on every language's
            chosen_on = own if own.any() else outside
            held = rows & ~outside
            order[held] = orders[PER_LANGUAGE, best(chosen_on if chosen_on.any() else everyone)][held]
    chosen = [value for rows in [everyone, *(named == language for language in known)] for value in best(rows)]
    return tuple(chosen), order


def _first_and_tried(order: np.ndarray, with_oz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per program, the ratio of the list static builds (the first of `order`) and the best of the JIT_K that
    jit builds (-Oz among them: ratio 1)."""
    ranked = np.argsort(order, axis=1, kind="stable")
    chosen = with_oz[np.arange(len(with_oz)), ranked[:, 0]]
    return chosen, np.take_along_axis(with_oz, ranked[:, :JIT_K], axis=1).min(axis=1)


def _candidate_name(kind: str, setting: tuple[float, ...], languages: Sequence[str] = ()) -> str:
    if kind == "chooser":
        return f"chooser penalty={setting[0]:g}"
    if kind == PER_LANGUAGE_TUNED:
        own = [
            f"{name} k={count:g} shrink={shrink:g}"
            for name, (count, shrink) in zip(languages, _language_settings(setting[2:]), strict=True)
        ]
        return f"{kind} ({', '.join(own)})"
    if kind in ("neighbours", PER_LANGUAGE):
        return f"{kind} k={setting[0]:g} shrink={setting[1]:g}"
    return kind


def constant_order(ratios: np.ndarray) -> np.ndarray:
    """One row of positions, lowest tried first: the list with the best geomean gain with the -Oz backup over
    `ratios`' programs, then the lists in `cover`'s order over them, then the rest by gain; -Oz last."""
    gains = backup_gains(ratios)
    by_gain = [int(j) for j in np.argsort(gains.mean(axis=0), kind="stable")]
    tried = cover_order(by_gain, [(1.0, gains)])
    order = np.full(len(by_gain) + 1, np.inf)
    order[tried] = np.arange(len(tried))
    return order


def size_errors(predicted: np.ndarray, actual: np.ndarray) -> dict[str, float]:
    """MAPE of the size model's target groups (columns as in `size_model.size_targets`)."""
    after = [2, *range(4, actual.shape[1])]  # -Oz, -O3 and every coreset list
    return {
        "size before": mape(predicted[:, 0], actual[:, 0]),
        "instructions before": mape(predicted[:, 1], actual[:, 1]),
        "size after": mape(predicted[:, after], actual[:, after]),
        "instructions after -Oz": mape(predicted[:, 3], actual[:, 3]),
    }


def size_values(labels: LabelSet, coreset: Coreset) -> np.ndarray:
    rows = []
    for p in labels.programs:
        row: list[float] = [
            p.baseline_sizes["O0"],
            p.baseline_instructions["O0"],
            p.baseline_sizes["Oz"],
            p.baseline_instructions["Oz"],
            p.baseline_sizes["O3"],
        ]
        row += [float(size) if (size := p.sizes[j]) is not None else np.nan for j in coreset.indices]
        rows.append(row)
    return np.asarray(rows, dtype=np.float64)


def package_folds(packages: Sequence[str]) -> np.ndarray:
    """Fold index per program from a hash of its package: near-duplicates never straddle folds."""
    return np.array([int(hashlib.sha256(p.encode()).hexdigest(), 16) % FOLDS for p in packages])


def _choose_hyper_parameters(
    x: np.ndarray, targets: np.ndarray, ratios: np.ndarray, folds: np.ndarray
) -> tuple[dict[str, float], float]:
    """The grid point whose top-1 choice (with the -Oz backup) is smallest on held-out folds; ties (every
    point with shrink 0 picks the same lists) go to the better jit ordering, which uses the unshrunk
    predictions. Shrinking only rescales a fitted ranker's output, so each fold is fitted once per
    neighbours/ridge/blend point."""
    best: tuple[tuple[float, float], dict[str, float]] | None = None
    for neighbors, ridge, blend in itertools.product(NEIGHBORS, RIDGES, BLENDS):
        predicted = np.zeros_like(targets)  # a program alone in its fold keeps -Oz
        means = np.zeros_like(targets)
        for fold in np.unique(folds):
            test = folds == fold
            if test.all():
                continue
            predicted[test] = ListRanker(neighbors, ridge, blend).fit(x[~test], targets[~test]).predict(x[test])
            means[test] = targets[~test].mean(axis=0)
        jit = jit_change(predicted, ratios, JIT_K)
        for shrink in SHRINKS:
            score = (round(static_change(shrink * predicted + (1 - shrink) * means, ratios), 6), jit)
            if best is None or score < best[0]:
                best = (score, {"neighbors": neighbors, "ridge": ridge, "blend": blend, "shrink": shrink})
    assert best is not None
    return best[1], best[0][0]


def train_from_labels(
    toolchain: Toolchain,
    catalogue: Catalogue,
    labels: LabelSet,
    *,
    k: int = DEFAULT_K,
    store: EvaluationStore | None = None,
    validation: ListValidation | None = None,
    representations: Sequence[Representation] | None = None,
    objective: Objective = SIZE,
    jobs: int = 1,
    finish: PassNames = (),
) -> tuple[FlagModel, TrainReport, dict[str, str]]:
    """Features for the labeled programs, then `train_flag_model`; with `validation`, every coreset list passed
    it (with the `finish` passes it ends with); a `security` term in `objective` is measured for every (program,
    list) first, `jobs` at a time.
    Returns the model, its report and the programs skipped (uri -> why)."""
    if labels.catalogue != catalogue.identity:
        raise InputError(
            f"labels were made with pass catalogue {labels.catalogue}, this LLVM's is {catalogue.identity}: "
            "relabel with `stitchopt labels` (search and broadcast, or pool) for this LLVM"
        )
    chosen = tuple(representations or default_representations())
    data = labeled_features(toolchain, labels, chosen, FeatureCache(store) if store is not None else None)
    if not data.labels.programs:
        raise InputError("no labeled program could be read: build the dataset first (`stitchopt datasets build`)")

    def accept(index: int) -> bool:
        return validation is None or validation.check(tuned_pipeline((*labels.lists[index], *finish), catalogue)).passed

    model, report = train_flag_model(
        data.labels,
        data.features,
        chosen,
        llvm_version=catalogue.llvm_version,
        k=k,
        accept=accept,
        objective=objective,
        probed=probed_values(toolchain, catalogue, data.labels, objective, store, jobs),
        finish=finish,
    )
    return model, report, data.skipped
