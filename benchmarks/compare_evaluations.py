"""Whether one model's held-out evaluation beats another's by more than the units' spread: each method's share of
the autotuner in two `benchmarks/flag_tuning.py --json` files on the same units, and the difference's interval
from a paired bootstrap over packages (a package's units are drawn together, as training's folds keep them;
`stitching.results.paired_difference` draws single programs, which units of one package are not).
Wins without run evidence count as -Oz, as in the evaluation's tables.

    python benchmarks/compare_evaluations.py BEFORE.json AFTER.json [--methods "static + backup,jit k=10"]
        [--samples 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.learning.verification import counted
from stitchopt.models.ranker import geomean_change
from stitchopt.reports.tables import Rows, to_markdown

REFERENCE = "autotuner"
DEFAULT_METHODS = "static + backup,jit k=10,seeded search k=40 b=50"


def counted_ratios(path: Path) -> dict[str, tuple[str, dict[str, float]]]:
    """uri -> (package, each method's ratio to -Oz as the tables count it) for the units the reference reached."""
    document: dict[str, Any] = json.loads(path.read_text())
    return {
        p["uri"]: (p["package"], counted(p["ratios"], p.get("unverified", ())))
        for p in document["programs"]
        if REFERENCE in p.get("ratios", {})
    }


def share(ratios: np.ndarray, reference: np.ndarray) -> float:
    """A method's geomean change below -Oz (the -Oz backup is in its ratios) over the reference's (NaN where
    the reference gains nothing)."""
    gained = geomean_change(reference)
    return geomean_change(ratios) / gained if gained else float("nan")


def compare(
    before: dict[str, tuple[str, dict[str, float]]],
    after: dict[str, tuple[str, dict[str, float]]],
    methods: Sequence[str],
    samples: int,
    seed: int,
) -> tuple[list[list[str]], int, int]:
    """One row per method: both shares, their difference and its 5th-95th percentile over package resamples."""
    units = sorted(set(before) & set(after))
    packages = sorted({before[u][0] for u in units})
    member = np.array([packages.index(before[u][0]) for u in units])
    rng = np.random.default_rng(seed)
    draws = [
        np.concatenate([np.flatnonzero(member == p) for p in rng.integers(len(packages), size=len(packages))])
        for _ in range(samples)
    ]

    def values(evaluation: dict[str, tuple[str, dict[str, float]]], method: str) -> np.ndarray:
        return np.array([evaluation[u][1][method] for u in units])

    old_reference, new_reference = values(before, REFERENCE), values(after, REFERENCE)  # each file's own counting
    rows = []
    for method in methods:
        old, new = values(before, method), values(after, method)
        difference = share(new, new_reference) - share(old, old_reference)
        spread = [share(new[d], new_reference[d]) - share(old[d], old_reference[d]) for d in draws]
        low, high = np.nanpercentile(spread, [5, 95])
        rows.append(
            [
                method,
                f"{100 * share(old, old_reference):.0f}%",
                f"{100 * share(new, new_reference):.0f}%",
                f"{100 * difference:+.1f}",
                f"{100 * low:+.1f} to {100 * high:+.1f}",
            ]
        )
    return rows, len(units), len(packages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--methods", default=DEFAULT_METHODS, help="comma-separated, as the tables name them")
    parser.add_argument("--samples", type=int, default=2000, help="package resamples")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        before, after = counted_ratios(args.before), counted_ratios(args.after)
        rows, units, packages = compare(before, after, args.methods.split(","), args.samples, args.seed)
    except (OSError, ValueError, KeyError) as error:
        print(
            f"compare_evaluations: {error}: give two files of benchmarks/flag_tuning.py --json",
            file=sys.stderr,
        )
        return 2
    title = f"{units} units of {packages} packages in both, shares of the {REFERENCE}"
    header = ["method", args.before.name, args.after.name, "difference (points)", "90% interval"]
    print(to_markdown(Rows(title, header, rows, caption=title)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
