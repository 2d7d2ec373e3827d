"""How many Csmith programs it takes to catch each known miscompiling list: every list is validated on the same
N Csmith programs (consecutive seeds that finish at -O0), and the table says how many of them fail it and the
position of the first that does, which is the least Csmith suite size that catches it.

    python benchmarks/csmith_strength.py [--programs 100] [--jobs 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.validate.miscompiles import KNOWN_MISCOMPILES
from stitchopt.validate.runner import Validator
from stitchopt.validate.selection import DEFAULT_CSMITH_PROGRAMS, select_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    toolchain = find_toolchain()
    rows = []
    with tempfile.TemporaryDirectory() as scratch, EvaluationStore(Path(scratch) / "cache.sqlite") as store:
        validator = Validator(toolchain, store, jobs=args.jobs)
        start = time.monotonic()
        suite = select_suite("csmith", validator.builder, limit=args.programs, jobs=args.jobs)
        print(f"{len(suite.programs)} Csmith programs in {time.monotonic() - start:.0f} s", flush=True)
        for known in KNOWN_MISCOMPILES:
            report = validator.validate(suite, known.pipeline)
            failing = [i for i, v in enumerate(report.verdicts, 1) if v.status.counts_against]
            first = failing[0] if failing else None
            seeds = [report.verdicts[i - 1].program for i in failing[:5]]
            rows.append(
                [
                    known.name,
                    f"{len(failing)} of {len(report.verdicts)}",
                    str(first) if first else "never",
                    "yes" if first is not None and first <= DEFAULT_CSMITH_PROGRAMS else "no",
                    ", ".join(seeds),
                ]
            )
            print(f"{known.name}: {len(failing)} failing, first at {first}", flush=True)
    header = [
        "list",
        "programs that catch it",
        "first that does",
        f"caught by the default {DEFAULT_CSMITH_PROGRAMS}",
        "first catching programs",
    ]
    print(to_markdown(Rows(f"known miscompiles on {args.programs} Csmith programs", header, rows)))


if __name__ == "__main__":
    main()
