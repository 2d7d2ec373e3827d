"""How much the features tell the static chooser: the shipped way of choosing (each list's mean gain over the
nearest training units) against the same means without features, with random features, and with a chooser per
language (C or C++, by the source file's suffix: neighbours and the means they are shrunk toward taken among
units of the unit's language), on the package-grouped folds training cross-validates on.

Reads a broadcast matrix's module units (train and validation splits: nothing of the test split) and a model's
lists (the shipped model's by default), so no compilation is needed: each held-out unit's size under a list is
its matrix row. Shares are of the pool's ceiling on the same units (each unit's best list of the model's, with
-Oz as backup; printed as `ceiling`), per language too; static + backup builds the top choice and -Oz, jit
k=10 the first ten.

    python benchmarks/chooser_cv.py --matrix data/labels/searched/matrix-<pool> [--model DIR] [--json F]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR, unit_language
from stitchopt.features.base import FeatureCache, Standardizer
from stitchopt.labels.labelset import labeled_features
from stitchopt.labels.shards import load_matrix
from stitchopt.learning.train import JIT_K, SIZE, constant_order, package_folds
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NEIGHBOUR_COUNTS, NEIGHBOUR_SHRINKS, NeighbourChooser
from stitchopt.models.ranker import geomean_change
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain


def held_out_orders(
    ratios: np.ndarray, folds: np.ndarray, kinds: np.ndarray, fit: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> np.ndarray:
    """Each unit's order over the lists and -Oz from `fit(train, test)` (row masks) on the other folds' units of
    its kind (one kind: all of them)."""
    order = np.zeros((len(ratios), ratios.shape[1] + 1))
    for fold in np.unique(folds):
        for kind in np.unique(kinds):
            test = (folds == fold) & (kinds == kind)
            if test.any():
                order[test] = fit((folds != fold) & (kinds == kind), test)
    return order


def shares(order: np.ndarray, ratios: np.ndarray, groups: dict[str, np.ndarray]) -> dict[str, float]:
    """Static + backup and jit k=10 (geomean change, and share of the ceiling) over all units and each group."""
    built = np.hstack([np.where(np.isfinite(ratios), ratios, 2.0), np.ones((len(ratios), 1))])
    ranked = np.argsort(order, axis=1, kind="stable")
    static = np.minimum(built[np.arange(len(built)), ranked[:, 0]], 1.0)
    jit = np.minimum(np.take_along_axis(built, ranked[:, :JIT_K], axis=1).min(axis=1), 1.0)
    ceiling = np.minimum(built.min(axis=1), 1.0)
    result: dict[str, float] = {}
    for name, rows in groups.items():
        reach = geomean_change(ceiling[rows])
        result[f"{name} ceiling"] = reach
        result[f"{name} static+backup"] = geomean_change(static[rows])
        result[f"{name} static+backup share"] = geomean_change(static[rows]) / reach
        result[f"{name} jit share"] = geomean_change(jit[rows]) / reach
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", type=Path, required=True, help="a broadcast matrix directory (matrix-<pool>)")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR, help="whose lists and representations")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    started = time.monotonic()
    toolchain = find_toolchain(None)
    model = FlagModel.from_pretrained(args.model)
    labels = load_matrix(args.matrix).subset(lambda p: FUNCTION_SEPARATOR not in p.uri)
    cache = FeatureCache(EvaluationStore(store_path(None)))
    data = labeled_features(toolchain, labels, model.representations, cache)
    columns = {passes: j for j, passes in enumerate(data.labels.lists)}
    ratios = data.labels.objective_values(SIZE)[:, [columns[passes] for passes in model.labelled_lists()]]
    programs = data.labels.programs
    folds = package_folds([p.package for p in programs])
    languages = [unit_language(p.uri) for p in programs]
    cxx = np.array([language == "c++" for language in languages])
    groups = {"all": np.ones(len(programs), dtype=bool), "C": ~cxx, "C++": cxx}
    x = Standardizer.fit(data.features, log=True).transform(data.features)
    everyone = np.zeros(len(programs), dtype=bool)

    def neighbours(features: np.ndarray, per_language: bool) -> Callable[[int, float], np.ndarray]:
        def orders(count: int, shrink: float) -> np.ndarray:
            def fit(train: np.ndarray, test: np.ndarray) -> np.ndarray:
                trained = [languages[i] for i in np.flatnonzero(train)] if per_language else None
                chooser = NeighbourChooser(count, shrink).fit(features[train], ratios[train], trained)
                return chooser.order(features[test], [languages[i] for i in np.flatnonzero(test)])

            return held_out_orders(ratios, folds, everyone, fit)

        return orders

    def featureless(kinds: np.ndarray) -> np.ndarray:
        return held_out_orders(ratios, folds, kinds, lambda train, test: constant_order(ratios[train]))

    ways = {
        "neighbours (the shipped features)": neighbours(x, False),
        "a chooser per language": neighbours(x, True),
        "neighbours by random features": neighbours(np.random.default_rng(0).normal(size=x.shape), False),
    }
    results: list[tuple[str, str, dict[str, float]]] = [
        ("no features (each list's mean gain)", "", shares(featureless(everyone), ratios, groups)),
        ("no features, per language", "", shares(featureless(cxx), ratios, groups)),
    ]
    for name, orders in ways.items():
        for count in NEIGHBOUR_COUNTS:
            for shrink in NEIGHBOUR_SHRINKS:
                setting = f"k={count} shrink={shrink:g}"
                results.append((name, setting, shares(orders(count, shrink), ratios, groups)))
    title = (
        f"{len(programs)} module units ({int(cxx.sum())} C++) of {len({p.package for p in programs})} packages, "
        f"{ratios.shape[1]} lists of {args.model}"
    )
    print(
        f"{title}; {len(data.skipped)} skipped (IR differs here or not built); {time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    keys = list(results[0][2])
    table = [
        [name, setting, *(f"{100 * v[k]:.0f}%" if "share" in k else f"{100 * v[k]:+.2f}%" for k in keys)]
        for name, setting, v in results
    ]
    print(to_markdown(Rows(title, ["way of choosing", "setting", *keys], table)))
    if args.json:
        document = [{"way": name, "setting": setting, **v} for name, setting, v in results]
        args.json.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
