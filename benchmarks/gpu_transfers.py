"""Copies between host and device of the project's OpenMP offload programs (src/stitchopt/datasets/kernels_v1/
omp), with clang's -O3 host pipeline and with the plugin's stitchopt-hoist-target-data after it.

Each program is built twice and run with the host CPU as the offload device (LLVM's libomptarget: the copies a
GPU build makes, counted by the runtime), sandboxed; a list counts only when the program's output is identical
to -O3's and -O3's is the one omp/expected.json records. The pass is not learned (no split is trained on):
every family is shown, its split beside it.

    python benchmarks/gpu_transfers.py [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from stitchopt.datasets.kernels import FAMILY_SPLITS, offload_expected_output, offload_sources
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.offload_build import HOISTING_PIPELINE
from stitchopt.toolchain.plugin_library import plugin_path
from stitchopt.validate.offload import check_host_list


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=str, default=None, help="write the per-program results here")
    args = parser.parse_args()
    toolchain = find_toolchain()
    began = time.monotonic()
    rows, results, ratios = [], [], []
    for source in offload_sources():
        check = check_host_list(toolchain, [source], HOISTING_PIPELINE, pass_plugins=[plugin_path()])
        expected = check.baseline.outcome.stdout.decode() == offload_expected_output(source)
        before, after = check.baseline.transfers, check.candidate.transfers
        rows.append(
            [
                source.stem,
                FAMILY_SPLITS[source.stem],
                f"{before.to_device + before.from_device} / {before.total_bytes / 2**20:.2f} MiB",
                f"{after.to_device + after.from_device} / {after.total_bytes / 2**20:.2f} MiB",
                f"{100 * check.bytes_change:+.1f}%",
                "yes" if check.same_output and expected else "NO",
            ]
        )
        results.append({"program": source.stem, "split": FAMILY_SPLITS[source.stem], **check.to_dict()})
        if check.same_output and expected:
            ratios.append(after.total_bytes / before.total_bytes)
    seconds = time.monotonic() - began
    title = (
        f"Copies and bytes between host and device in one run: -O3 vs {HOISTING_PIPELINE} (host as the offload device)"
    )
    header = ["program", "split", "-O3 copies / bytes", "list copies / bytes", "bytes", "outputs as expected"]
    print(to_markdown(Rows(title, header, rows)))
    cut = sum(ratio <= 0.7 for ratio in ratios)
    print(
        f"\n{cut} of {len(results)} programs copy at least 30% fewer bytes, outputs identical in {len(ratios)}; "
        f"median bytes {100 * (statistics.median(ratios) - 1):+.1f}%; {seconds:.0f} s"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"pipeline": HOISTING_PIPELINE, "seconds": seconds, "programs": results}, out, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
