"""Validation speed: seconds per pass list for each suite, on a cold and on a warm cache.

"setup" builds each program's IR and its reference runs (once per toolchain); "cold" is a new list's first
validation (opt, llc, link and run per program); "warm" is the same list again (verdicts from the cache).
Lists: clang's -O0, -Oz and -O3 pipelines and random catalogue lists (seeded). Every verdict is printed in
the totals, so a list that fails shows up.

    python benchmarks/validate_speed.py [--suites humaneval,csmith] [--csmith 20] [--random-lists 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import nest
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.validate.runner import Validator
from stitchopt.validate.selection import select_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", default="humaneval,csmith")
    parser.add_argument("--csmith", type=int, default=20, help="Csmith programs")
    parser.add_argument("--random-lists", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    toolchain = find_toolchain()
    catalogue = load_catalogue(toolchain)
    baselines = load_baselines(toolchain)
    rng = random.Random(args.seed)
    lists = {f"-{name}": baseline.pipeline for name, baseline in baselines.items()}
    for number in range(args.random_lists):
        lists[f"random {number + 1}"] = nest(rng.choices(catalogue.names(), k=rng.randint(1, 50)), catalogue)

    table = Rows(
        title=f"Validation speed (LLVM {toolchain.version_string}, {args.jobs} jobs)",
        headers=["suite", "programs", "setup s", "list", "cold s", "warm s", "verdicts"],
        rows=[],
    )
    with tempfile.TemporaryDirectory() as scratch, EvaluationStore(Path(scratch) / "cache.sqlite") as store:
        validator = Validator(toolchain, store, jobs=args.jobs)
        for spec in args.suites.split(","):
            start = time.perf_counter()
            suite = select_suite(
                spec, validator.builder, limit=args.csmith if spec == "csmith" else None, jobs=args.jobs
            )
            validator.prepare(suite)  # IR and references, timed apart from the lists
            setup = f"{time.perf_counter() - start:.1f}"
            for label, pipeline in lists.items():
                cold = validator.validate(suite, pipeline)
                warm = validator.validate(suite, pipeline)
                counts = Counter(v.status.value for v in cold.verdicts)
                table.rows.append(
                    [
                        suite.name,
                        str(len(suite.programs)),
                        setup,
                        label,
                        f"{cold.seconds:.1f}",
                        f"{warm.seconds:.2f}",
                        ", ".join(f"{n} {status}" for status, n in sorted(counts.items())),
                    ]
                )
                setup = ""
    print(to_markdown(table))


if __name__ == "__main__":
    main()
