"""Train and judge the device model from device labels (`stitchopt gpu labels`): the pool matrix says what every
list does to every kernel, the searches what each kernel's own search found (the reference a model is judged
against, as the autotuner is on the host).

How the model chooses (the best single list, or the chooser on one of FEATURE_SETS with its L2 penalty) is
picked by cross-validation over the train kernels' families (no family on both sides of a fold); held-out
families are only judged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from stitchopt.errors import InputError
from stitchopt.features.base import Standardizer
from stitchopt.labels.device import DeviceLabels, KernelUnit
from stitchopt.models.chooser import PENALTIES, SoftmaxChooser
from stitchopt.models.covering import cover_order
from stitchopt.models.device_model import FEATURE_SETS, DeviceModel, device_costs, representation_outputs
from stitchopt.models.ranker import geomean_change as ranker_geomean
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.tune.device import Measure

FOLDS = 5
JIT_KS = (3, 10)
EVERY_LIST = "every pool list"  # the ceiling of any way of choosing from the pool
BEST_SINGLE_LIST = "best single list"


def family_folds(families: Sequence[str], folds: int = FOLDS) -> list[np.ndarray]:
    """Fold masks over kernels; every family's kernels in one fold (families dealt by size, largest first)."""
    sizes: dict[str, int] = {}
    for family in families:
        sizes[family] = sizes.get(family, 0) + 1
    load, fold_of = [0] * folds, {}
    for family in sorted(sizes, key=lambda f: (-sizes[f], f)):
        fold_of[family] = load.index(min(load))
        load[fold_of[family]] += sizes[family]
    return [np.array([fold_of[f] == k for f in families]) for k in range(folds) if load[k]]


def fit_chooser(features: np.ndarray, costs: np.ndarray, how: str | float) -> SoftmaxChooser:
    """`how`: an L2 penalty (the chooser) or BEST_SINGLE_LIST (the list with the lowest mean cost, else -O3,
    then the lists in `covering_order`)."""
    if how == BEST_SINGLE_LIST:
        order = covering_order(costs)
        preference = np.empty(len(order))
        preference[order] = np.arange(len(order), 0, -1)
        return SoftmaxChooser.constant(preference, features.shape[1])
    return SoftmaxChooser(float(how)).fit(features, costs)


def covering_order(costs: np.ndarray) -> list[int]:
    """One order of the choices (columns of `costs`: lists, then -O3) for every kernel: first the lowest mean
    cost (static's pick), then the lists in `cover`'s order over the kernels, then the rest by mean cost."""
    by_mean = [int(j) for j in np.argsort(costs.mean(axis=0), kind="stable")]
    return cover_order(by_mean, [(1.0, costs)], candidates=range(costs.shape[1] - 1))


Way = tuple[tuple[str, ...], str | float]  # (representations, BEST_SINGLE_LIST or the chooser's L2 penalty)
WAYS: tuple[Way, ...] = (
    (FEATURE_SETS[0], BEST_SINGLE_LIST),
    *((names, penalty) for names in FEATURE_SETS for penalty in sorted(PENALTIES, reverse=True)),
)  # simplest first: ties go to the earlier


def labelled_features(toolchain: Toolchain, labels: DeviceLabels, units: Sequence[KernelUnit]) -> dict[str, np.ndarray]:
    """Every representation of FEATURE_SETS for each labelled kernel: kernels (rows as `labels`) x features."""
    names = sorted({name for feature_set in FEATURE_SETS for name in feature_set})
    module = {unit.uri: unit.module for unit in units}
    rows = [representation_outputs(toolchain, module[uri], names) for uri in labels.uris]
    return {name: np.vstack([row[name] for row in rows]) for name in names}


def stacked(features: Mapping[str, np.ndarray], names: Sequence[str]) -> np.ndarray:
    """kernels x features: the representations `names` side by side, as `kernel_features` computes them."""
    return np.hstack([features[name] for name in names])


def choose_by_folds(
    features: Mapping[str, np.ndarray], costs: np.ndarray, families: Sequence[str]
) -> tuple[Way, dict[str, float]]:
    """The way of choosing whose top pick keeps the least (with the -O3 backup) on held-out families, ties to the
    simplest, and each way's cross-validated mean cost. Optimistic for every way alike: the pool holds the
    searches' lists of the held-out fold's kernels too."""
    if len(set(families)) < 2:
        raise InputError("the device model's folds need train kernels of at least two families: label more")
    scores: dict[Way, float] = {}
    for names, how in WAYS:
        matrix, total = stacked(features, names), 0.0
        for fold in family_folds(families):
            standardizer = Standardizer.fit(matrix[~fold])
            chooser = fit_chooser(standardizer.transform(matrix[~fold]), costs[~fold], how)
            picks = chooser.order(standardizer.transform(matrix[fold])).argmin(axis=1)
            total += float(costs[fold][np.arange(fold.sum()), picks].sum())
        scores[(names, how)] = total / len(families)
    best = min(scores, key=lambda way: (scores[way], WAYS.index(way)))
    return best, {_name(way): score for way, score in scores.items()}


def _name(way: Way) -> str:
    names, how = way
    return str(how) if how == BEST_SINGLE_LIST else f"{'+'.join(names)}, L2 {how}"


def train_device_model(
    labels: DeviceLabels,
    features: Mapping[str, np.ndarray],
    splits: Sequence[str],
    llvm_version: str,
    catalogue: str,
) -> tuple[DeviceModel, dict[str, float]]:
    """The model fitted on the kernels of `splits` (`features`: every labelled kernel's output of each
    representation of FEATURE_SETS, rows as `labels`), chosen by family folds; also the folds' scores."""
    rows = labels.rows(splits)
    if not labels.pool:
        raise InputError("the label pool is empty (no train kernel's search kept a list): nothing to choose from")
    costs = device_costs([labels.o3[i] for i in rows], [labels.lists[i] for i in rows])
    train = {name: matrix[rows] for name, matrix in features.items()}
    families = [labels.families[i] for i in rows]
    (names, how), scores = choose_by_folds(train, costs, families)
    matrix = stacked(train, names)
    standardizer = Standardizer.fit(matrix)
    chooser = fit_chooser(standardizer.transform(matrix), costs, how)
    card = {
        "kernels": len(rows),
        "families": len(set(families)),
        "splits": list(splits),
        "chosen": _name((names, how)),
    }
    return DeviceModel(tuple(labels.pool), names, chooser, standardizer, llvm_version, catalogue, card), scores


@dataclass(frozen=True)
class Outcome:
    """What a method builds for one kernel, beside -O3's build."""

    built: Measure
    o3: Measure
    compilations: int
    chosen: str | None = None  # the pool list built (None: -O3's build, or the kernel's own search)

    @property
    def better(self) -> bool:
        return self.built.better_than(self.o3)

    @property
    def worse(self) -> bool:
        return not self.built.no_worse_than(self.o3)


def judge(
    order_of: Callable[[int], Sequence[str | None]], labels: DeviceLabels, rows: Sequence[int]
) -> dict[str, list[Outcome]]:
    """Each method on each kernel of `rows`, from the matrix (no new builds), given a model's order of choices
    for a kernel (`order_of(row)`: pool lists and None for -O3, likeliest right first): static (the top choice
    alone: not offered, reported to show why the backup is needed), static + backup (it and -O3, the one no worse
    kept: static mode), jit k (the top k lists and -O3), every pool list (what any way of choosing from this
    pool can reach at most), and the kernel's own search (its kept best, else -O3)."""
    tried_names = [*(f"jit k={k}" for k in JIT_KS), EVERY_LIST]
    methods: dict[str, list[Outcome]] = {"static": [], "static + backup": [], **{name: [] for name in tried_names}}
    methods["search"] = []
    for i in rows:
        o3 = Measure(**labels.o3[i])
        measured = {p: (Measure(**m) if m else None) for p, m in zip(labels.pool, labels.lists[i], strict=True)}
        order = order_of(i)
        top = order[0]
        alone = o3 if top is None else measured[top]
        # A list that cannot build the kernel fails the build; static alone counts it as a doubling.
        failed = Measure(o3.sass * 2, o3.registers, o3.spilled, o3.stack)
        methods["static"].append(Outcome(alone or failed, o3, 1, top))
        compilations = 1 if top is None else 2
        if alone is not None and alone.no_worse_than(o3):
            methods["static + backup"].append(Outcome(alone, o3, compilations, top))
        else:
            methods["static + backup"].append(Outcome(o3, o3, compilations))
        ranked = [p for p in order if p is not None]
        tries = {**{f"jit k={k}": ranked[:k] for k in JIT_KS}, EVERY_LIST: list(labels.pool)}  # every: any order
        for name, tried in tries.items():
            candidates = [
                Outcome(m, o3, len(tried) + 1, p) for p in tried if (m := measured[p]) and m.no_worse_than(o3)
            ]
            backup = Outcome(o3, o3, len(tried) + 1)
            methods[name].append(min([backup, *candidates], key=lambda o: (o.built.sass, o.built.registers)))
        found = labels.searched[i]
        methods["search"].append(Outcome(Measure(**found) if found else o3, o3, labels.evaluations[i]))
    return methods


def geomean_change(outcomes: Sequence[Outcome]) -> float:
    """Geomean SASS change vs -O3 of a method's builds."""
    return ranker_geomean(np.array([o.built.sass / o.o3.sass for o in outcomes]))
