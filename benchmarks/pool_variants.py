"""Do the searches' lists generalize better behind -Oz? The pool's ceiling on held-out units, as searched and with
each list run after `default<Oz>`, so that the next pool is chosen from data.

From one label directory with a broadcast matrix: the `--top` lists of a greedy cover of the train units (each
next list the one that most lowers the train units' geomean with the -Oz backup; read from the matrix, no
compilation) are measured on the validation split's module units twice: as searched (read from the matrix) and
as `default<Oz>,<list>` (compiled here, through the evaluation cache, wins checked by the programs' IR guards as
labels are). For each set: the best single list of the cover (chosen on the train units) with the -Oz backup,
and the ceiling (each held-out unit's best list of the set), as shares of the held-out units' autotuner (their
own search's best or the pool's best, -Oz as backup), as in `learning_curve.py`.

    python benchmarks/pool_variants.py --labels data/labels/searched [--top 10] [--jobs 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from learning_curve import autotuner_ratios, is_function, restricted_to_train_bests  # (this directory's script)

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.datasets.benchmarks import benchmark_module
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.measure import Program, label_programs
from stitchopt.labels.shards import load_matrix, load_searches
from stitchopt.models.coreset import select_coreset
from stitchopt.models.ranker import geomean_change
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain

OZ = "default<Oz>"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, required=True, help="label directory with a broadcast matrix")
    parser.add_argument("--matrix", type=Path, help="its matrix directory, when it holds several")
    parser.add_argument("--top", type=int, default=10, help="lists of the greedy cover of the train units")
    parser.add_argument("--jobs", type=int, default=0, help="concurrent evaluations (default: all cores)")
    args = parser.parse_args()

    start = time.perf_counter()
    toolchain = find_toolchain(None)
    catalogue = load_catalogue(toolchain)
    labels = restricted_to_train_bests(load_matrix(args.matrix or args.labels), load_searches(args.labels), args.labels)
    ratios = labels.ratios()
    train = [i for i, p in enumerate(labels.programs) if p.split == "train"]
    held = [i for i, p in enumerate(labels.programs) if p.split == "validation" and not is_function(p)]
    cover = list(select_coreset(ratios[train], args.top).indices)
    lists = [labels.lists[j] for j in cover]
    behind_oz = [(OZ, *passes) for passes in lists]
    programs = [
        Program(p.uri, p.package, p.split, benchmark_module(toolchain, p.uri))
        for p in (labels.programs[i] for i in held)
    ]
    with EvaluationStore(store_path(None)) as store, Evaluator(toolchain, store, jobs=args.jobs) as evaluator:
        rows, cpu = label_programs(evaluator, catalogue, programs, behind_oz)
    measured = {row.uri: row for row in rows}
    kept = [i for i in held if labels.programs[i].uri in measured]
    as_searched = ratios[kept][:, cover]
    after_oz = np.array(
        [
            [np.inf if size is None else size / row.baseline_sizes["Oz"] for size in row.sizes]
            for row in (measured[labels.programs[i].uri] for i in kept)
        ]
    )
    autotuner = geomean_change(autotuner_ratios(args.labels, labels, ratios, kept))

    def share(change: float) -> str:
        return f"{change:+.2%} ({change / autotuner:.0%})" if autotuner < 0 else f"{change:+.2%}"

    table = []
    for name, held_out in (("as searched", as_searched), (f"after {OZ}", after_oz)):
        first = np.minimum(held_out[:, 0], 1.0)
        ceiling = np.minimum(held_out.min(axis=1), 1.0)
        larger = float(np.mean(held_out[:, 0] > 1.0))
        table.append([name, share(geomean_change(first)), f"{larger:.0%}", share(geomean_change(ceiling))])
    both = np.minimum(np.minimum(as_searched, after_oz).min(axis=1), 1.0)
    table.append(["either", "-", "-", share(geomean_change(both))])
    title = (
        f"The {len(cover)} lists of a greedy cover of {len(train)} train units, on {len(kept)} held-out module units "
        f"(autotuner {autotuner:+.2%}); {cpu:.0f} CPU s of opt + llc, {time.perf_counter() - start:.0f} s in all"
    )
    headers = ["lists", "first list + backup (share)", "first list alone larger", "ceiling of the lists (share)"]
    print(f"{title}\n\n{to_markdown(Rows(title, headers, table))}")


if __name__ == "__main__":
    main()
