"""Objective weights: one flag-tuning model per weighting of size and compile time (trained on the train split),
each static choice measured on the validation split, the Pareto front of (object size, compile time) marked.

    python benchmarks/objective_grid.py LABELS [--objectives 'size=1;size=1,compile-time=0.3;...'] [--k 50]

LABELS must hold compile times (written by this stitchopt's `stitchopt labels pool` or `labels broadcast`). The
lists are not validated here: the table is about the trade-off, `stitchopt train --objective ...` validates the
lists it ships.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import Objective
from stitchopt.features.base import FeatureCache
from stitchopt.features.by_name import default_representations
from stitchopt.labels.labelset import LabelSet, labeled_features
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.studies.objective_grid import DEFAULT_GRID, objective_grid
from stitchopt.toolchain.discovery import find_toolchain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", type=Path)
    parser.add_argument("--objectives", default=";".join(DEFAULT_GRID), help="weightings separated by ';'")
    parser.add_argument("--k", type=int, default=50)
    args = parser.parse_args()
    start = time.perf_counter()
    toolchain = find_toolchain()
    representations = default_representations()
    with EvaluationStore() as store:
        data = labeled_features(toolchain, LabelSet.load(args.labels), representations, FeatureCache(store))
    rows = objective_grid(
        data.labels,
        data.features,
        representations,
        llvm_version=load_catalogue(toolchain).llvm_version,
        objectives=[Objective.parse(text) for text in args.objectives.split(";")],
        k=args.k,
    )
    table = Rows(
        f"Static choice on the validation split ({sum(p.split == 'validation' for p in data.labels.programs)} "
        "programs), geomean vs -Oz",
        ["objective", "object size", "compile time (opt + llc)", "programs not at -Oz", "Pareto front"],
        [
            [
                r.objective,
                f"{100 * r.size_change:+.2f}%",
                f"{100 * r.compile_time_change:+.1f}%",
                f"{100 * r.changed:.0f}%",
                "yes" if r.pareto else "",
            ]
            for r in rows
        ],
    )
    print(to_markdown(table))
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
