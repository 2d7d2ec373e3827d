"""Model stitching study: one expert per representation, every stitched pair, stitched ensembles of k experts.

    python benchmarks/stitching.py LABELS HELD_OUT_LABELS [--model DIR] [--epochs 300] [--hidden 256]
        [--seed 0] [--no-pairs] [--exclude-package P] [--json F]

LABELS: train and validation programs (experts and layers fit on train, stop and are chosen on validation);
HELD_OUT_LABELS: other programs labeled with the same list pool (`stitchopt labels pool --split test --lists-from`),
used only for the scores; the experts rank the coreset lists of `--model` (default: the shipped model, whose
lists passed HumanEval-X). Prints the three tables of the README's stitching section and the OT timing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from stitchopt.cache.store import EvaluationStore
from stitchopt.features.base import FeatureCache
from stitchopt.labels.labelset import LabelSet
from stitchopt.labels.shards import load_matrix
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.stitching import comparisons, curve_rows, expert_rows, pair_rows, write_json
from stitchopt.reports.tables import to_markdown
from stitchopt.stitching.alignment import align
from stitchopt.stitching.experts import TrainConfig
from stitchopt.stitching.study import run_study
from stitchopt.toolchain.discovery import find_toolchain


def alignment_seconds(programs: int = 2000, units: int = 256, seed: int = 0) -> float:
    """Time of one exact OT alignment of two random ReLU hidden spaces of that size."""
    rng = np.random.default_rng(seed)
    h_source = np.maximum(rng.standard_normal((programs, units)), 0)
    h_target = np.maximum(h_source @ rng.standard_normal((units, units)) / 16, 0)
    start = time.perf_counter()
    align(h_source, h_target, method="emd")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", type=Path)
    parser.add_argument("held_out", type=Path)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pairs", action="store_true", help="skip the pair table (the slowest part)")
    parser.add_argument("--exclude-package", help="also score the held-out programs without this package")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core, as inference will be; also makes runs repeatable
    start = time.perf_counter()
    toolchain = find_toolchain()
    lists = FlagModel.from_pretrained(args.model, load_catalogue(toolchain)).labelled_lists()
    with EvaluationStore() as store:
        report = run_study(
            toolchain,
            load_matrix(args.labels),
            LabelSet.load(args.held_out),
            lists,
            TrainConfig(epochs=args.epochs, seed=args.seed),
            hidden=args.hidden,
            cache=FeatureCache(store),
            pairs=not args.no_pairs,
        )
    exclude = args.exclude_package
    for rows in (expert_rows(report, exclude), pair_rows(report, exclude), curve_rows(report, exclude)):
        if rows.rows:
            print(to_markdown(rows))
            print()
    print("\n".join(comparisons(report)))
    print(f"OT alignment (exact, 2,000 programs x 256 units): {alignment_seconds():.2f} s")
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        write_json(report, args.json)


if __name__ == "__main__":
    main()
