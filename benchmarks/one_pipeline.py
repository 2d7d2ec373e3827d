"""Can one pipeline per unit, with no -Oz backup, gain while making at most a tenth of the units larger?

The issue's "static alone regresses on <= 10% of units" asks for a choice that knows when its list will beat
-Oz. This script asks the neighbours directly, with no model trained: for each held-out unit the neighbour
chooser (`NeighbourChooser`, as shipped: the k training units nearest on the standardized features) picks a list,
and the pipeline is built only where at least a share `t` of those neighbours were made smaller than -Oz by it
(else -Oz). Two picks are scored: static's (the most expected gain with the backup, what the model ships) and
the list with the least expected log ratio without it (what a one-pipeline compile should want), each -Oz where
the neighbours expect no list to gain (as the shipped order puts -Oz first there). Beside them,
static + backup for each chooser setting and the best single list, so the table says what the neighbours' choice
is worth at all on these units.

Units and reference as in `learning_curve.py`: train on the train split's module units (searched or only
broadcast), score on the validation split's searched module units; sizes read from the broadcast matrix, no
compilation.

    python benchmarks/one_pipeline.py --labels data/labels/searched [--matrix DIR/matrix-<pool>]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from learning_curve import autotuner_ratios, is_function, restricted_to_train_bests  # (this directory's script)

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.features.base import FeatureCache, Standardizer
from stitchopt.features.by_name import default_representations
from stitchopt.labels.labelset import labeled_features
from stitchopt.labels.shards import load_matrix, load_searches
from stitchopt.learning.train import constant_order
from stitchopt.models.neighbour_chooser import NeighbourChooser, shrunk_mean
from stitchopt.models.ranker import FAILED_LOG_RATIO, geomean_change
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain

SETTINGS = ((10, 0.5), (20, 0.5), (20, 1.0), (40, 0.5))  # (neighbours, shrink); the shipped model: k=20 shrink=0.5
VOTES = (0.6, 0.7, 0.8)  # the share of neighbours a list must have shrunk before it is built alone


def one_pipeline(ratios: np.ndarray, built: np.ndarray) -> str:
    """`ratios` of the chosen list per unit, built where `built`, -Oz elsewhere: geomean, built and grown."""
    outcome = np.where(built, ratios, 1.0)
    return f"{geomean_change(outcome):+.2%} / {built.mean():.0%} / {np.mean(outcome > 1):.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, required=True, help="label directory with a broadcast matrix")
    parser.add_argument("--matrix", type=Path, help="its matrix directory, when it holds several")
    args = parser.parse_args()

    toolchain = find_toolchain(None)
    with EvaluationStore(store_path(None)) as store:
        data = labeled_features(
            toolchain, load_matrix(args.matrix or args.labels), default_representations(), FeatureCache(store)
        )
    searched = load_searches(args.labels)
    labels = restricted_to_train_bests(data.labels, searched, args.labels)
    ratios = labels.ratios()
    ratios = np.where(np.isfinite(ratios), ratios, np.exp(FAILED_LOG_RATIO))  # as training counts a failure
    reached = {u.uri for u in searched}
    programs = labels.programs
    modules = [i for i, p in enumerate(programs) if not is_function(p)]
    train = [i for i in modules if programs[i].split == "train"]
    held = [i for i in modules if programs[i].split == "validation" and programs[i].uri in reached]
    singles = restricted_to_train_bests(data.labels, searched, args.labels, groups=False)
    autotuner = geomean_change(autotuner_ratios(args.labels, singles, singles.ratios(), held))
    if not held or autotuner >= 0:
        raise SystemExit("no held-out unit the searches shrank: nothing to take a share of")

    def with_backup(chosen: np.ndarray) -> str:
        change = geomean_change(np.minimum(chosen, 1.0))
        return f"{change:+.2%} ({change / autotuner:.0%})"

    standardizer = Standardizer.fit(data.features[train])
    train_x, held_x = standardizer.transform(data.features[train]), standardizer.transform(data.features[held])
    train_r, held_r = ratios[train], ratios[held]
    log_train = np.log(train_r)
    units = np.arange(len(held))
    single = int(np.argmin(constant_order(train_r)))  # the best single list: first in its order
    alone = held_r[:, single]
    rows = [
        [
            "best single list",
            with_backup(alone),
            one_pipeline(alone, np.ones(len(held), bool)),
            *["-"] * (2 * len(VOTES)),
        ]
    ]
    for neighbours, shrink in SETTINGS:
        chooser = NeighbourChooser(neighbours, shrink).fit(train_x, train_r)
        nearest = chooser.nearest(held_x)
        gains = chooser.gains(held_x)
        static = gains.argmin(axis=1)
        gains_any = gains.min(axis=1) < 0  # else static keeps -Oz, as the shipped order does
        expected = shrunk_mean(log_train, nearest, shrink)  # the log ratio without the backup
        unbacked = expected.argmin(axis=1)
        cells = []
        for pick, gate in ((static, gains_any), (unbacked, expected.min(axis=1) < 0)):
            votes = (train_r[nearest, pick[:, None]] < 1).mean(axis=1)
            cells.append([one_pipeline(held_r[units, pick], (votes >= share) & gate) for share in VOTES])
        chosen = np.where(gains_any, held_r[units, static], 1.0)
        rows.append(
            [
                f"neighbours k={neighbours} shrink={shrink}",
                with_backup(chosen),
                one_pipeline(chosen, gains_any),
                *cells[0],
                *cells[1],
            ]
        )
    title = (
        f"One pipeline per unit: {len(held)} held-out module units of the validation split, {len(train)} train module"
        f" units, {len(labels.lists)} lists; autotuner {autotuner:+.2%}. Cells: geomean vs -Oz / built / grown"
    )
    headers = ["chooser", "static + backup (share)", "static alone"]
    headers += [f"static's list, votes >= {share}" for share in VOTES]
    headers += [f"least expected ratio, votes >= {share}" for share in VOTES]
    print(f"{title}\n\n{to_markdown(Rows(title, headers, rows))}")
    print(f"{len(data.skipped)} units skipped (no IR)", file=sys.stderr)


if __name__ == "__main__":
    main()
