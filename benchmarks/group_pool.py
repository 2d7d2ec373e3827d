"""Do lists searched for groups of units (`stitchopt labels groups`) reach held-out units that single-unit bests do
not? The ceiling (each held-out unit's best list of a set, the -Oz backup) of the pool, of the groups' lists and of
both, as shares of the held-out units' autotuner, so that the next pool is chosen from data.

From one label directory with a broadcast matrix and group shards: the held-out units are the validation
split's module units built here with the searched IR (those under `--units`: datasets, packages); the pool is the
matrix's lists that train units' searches found (as in `learning_curve.py`); the groups' lists are measured on
the held-out units here (through the evaluation cache; wins checked by the programs' IR guards, as labels are).
Beside them, as many lists as there are group lists taken from the pool by a greedy cover of the train units
(read from the matrix), and the first list of each set (the best on its train units or group) with the backup,
alone.

    python benchmarks/group_pool.py --labels data/labels/searched [--matrix DIR] [--units bench://pypi-v1] [--jobs 2]

Lists the directory's verdicts failed (`stitchopt labels validate`) are left out of every set.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from learning_curve import (  # (this directory's script)
    autotuner_ratios,
    is_function,
    restricted_to_train_bests,
)

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.datasets.benchmarks import benchmark_module
from stitchopt.datasets.uri import is_under
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.groups import built_as_searched, group_lists, load_groups, train_groups
from stitchopt.labels.labelset import LabelSet
from stitchopt.labels.measure import Program, label_programs
from stitchopt.labels.shards import load_matrix, load_searches
from stitchopt.labels.verdicts import failed_lists
from stitchopt.models.coreset import select_coreset
from stitchopt.models.ranker import geomean_change
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, required=True, help="label directory with a matrix and groups")
    parser.add_argument("--matrix", type=Path, help="its matrix directory, when it holds several")
    parser.add_argument("--units", default="", help="held-out units whose URI starts so, comma-separated")
    parser.add_argument("--jobs", type=int, default=0, help="concurrent evaluations (default: all cores)")
    args = parser.parse_args()

    start = time.perf_counter()
    toolchain = find_toolchain(None)
    catalogue = load_catalogue(toolchain)
    labels = restricted_to_train_bests(
        load_matrix(args.matrix or args.labels),
        load_searches(args.labels),
        args.labels,
    )
    ratios = labels.ratios()
    roots = tuple(p.strip() for p in args.units.split(",") if p.strip())
    train = [i for i, p in enumerate(labels.programs) if p.split == "train"]
    validation = [(i, p) for i, p in enumerate(labels.programs) if p.split == "validation" and not is_function(p)]
    built = built_as_searched((p.uri, p.ir_sha256) for _, p in validation if not roots or is_under(p.uri, roots))
    held = [i for i, p in validation if (p.uri, p.ir_sha256) in built]
    groups = train_groups(load_groups(args.labels, toolchain.identity, catalogue.identity), load_searches(args.labels))
    failed = failed_lists(args.labels)
    lists = tuple(passes for passes in group_lists(groups) if passes not in failed)
    if not lists:
        raise SystemExit(f"{args.labels}: no group list beats -Oz on its group: run `stitchopt labels groups` first")
    programs = [
        Program(p.uri, p.package, p.split, benchmark_module(toolchain, p.uri))
        for p in (labels.programs[i] for i in held)
    ]
    with EvaluationStore(store_path(None)) as store, Evaluator(toolchain, store, jobs=args.jobs) as evaluator:
        rows, cpu = label_programs(evaluator, catalogue, programs, lists)
    by_uri = {row.uri: row for row in rows}
    kept = [i for i in held if labels.programs[i].uri in by_uri]
    singles = [j for j, passes in enumerate(labels.lists) if passes not in lists]  # a matrix may hold group lists
    pool, on_train = ratios[kept][:, singles], ratios[train][:, singles]
    measured = tuple(by_uri[labels.programs[i].uri] for i in kept)
    grouped = LabelSet(labels.toolchain, labels.catalogue, labels.dataset, lists, measured, cpu).ratios()
    cover = list(select_coreset(on_train, len(lists)).indices)
    autotuner = geomean_change(autotuner_ratios(args.labels, labels, ratios[:, singles], kept))

    def share(change: float) -> str:
        return f"{change:+.2%} ({change / autotuner:.0%})" if autotuner < 0 else f"{change:+.2%}"

    def line(name: str, held_out: np.ndarray, first: int | None) -> list[str]:
        ceiling = np.minimum(held_out.min(axis=1), 1.0)
        reached = f"{np.mean(ceiling < 1.0):.0%}"
        if first is None:
            return [name, str(held_out.shape[1]), share(geomean_change(ceiling)), reached, "-", "-"]
        alone = held_out[:, first]
        larger = f"{np.mean(alone > 1.0):.0%}"
        return [
            name,
            str(held_out.shape[1]),
            share(geomean_change(ceiling)),
            reached,
            share(geomean_change(np.minimum(alone, 1.0))),
            larger,
        ]

    table = [
        line("pool (train units' bests)", pool, int(np.argmin(np.log(np.minimum(on_train, 1.0)).sum(axis=0)))),
        line("greedy cover of the train units", pool[:, cover], 0),
        line("groups' lists", grouped, 0),
        line("pool + groups' lists", np.hstack([pool, grouped]), None),
    ]
    searched = sum(1 for g in groups if g.best is not None)
    title = (
        f"{len(lists)} lists of {len(groups)} groups ({searched} beat -Oz on their group, "
        f"{sum(g.cpu_seconds for g in groups) / 3600:.2f} CPU h of search) on {len(kept)} held-out module units "
        f"(autotuner {autotuner:+.2%}); {cpu:.0f} CPU s of opt + llc here, {time.perf_counter() - start:.0f} s in all"
    )
    headers = [
        "lists",
        "count",
        "ceiling (share of the autotuner)",
        "units below -Oz",
        "first list + backup (share)",
        "first list alone larger",
    ]
    print(f"{title}\n\n{to_markdown(Rows(title, headers, table))}")


if __name__ == "__main__":
    main()
