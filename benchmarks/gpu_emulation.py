"""Run evidence for the device labels' lists on a machine without a GPU: every pool list built on each labelled
CUDA kernel that has a launch (studies/gpu_launches.py), its IR retargeted to the host and run on the CPU
beside -O3's build (validate/device_run.py), the output buffers compared byte for byte. The record (`-o`, gzip
JSON) says per kernel and list "same", "differs: ..." or why -O3's own build could not run, and whether the
unoptimized IR ran the same (a check of the emulator: it should, unless a kernel has undefined behaviour);
benchmarks/gpu_model.py `--evidence` reads it to count a model's 10%+ wins that ran the same. NVPTX's code generator and
ptxas do not run here (a GPU run checks those: benchmarks/gpu_timing.py). OpenMP target regions are launched
as the OpenMP runtime would where their -O3 build is SPMD, with their programs' values where
studies/gpu_launches.py `OPENMP_ARGUMENTS` names them, else where their arrays have sizes the IR states
(studies/kernel_emulation.py `openmp_launch`); the others have no launch and are left out of the table.

    python benchmarks/gpu_emulation.py [--labels data/labels/device] [--jobs 2] -o RECORD.json.gz
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

from stitchopt.errors import StitchoptError
from stitchopt.labels.device import labelled_kernels
from stitchopt.labels.labelset import write_gzip_json
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.studies.kernel_emulation import NO_LAUNCH, SAME, check_labelled
from stitchopt.toolchain.cuda import find_cuda
from stitchopt.toolchain.discovery import find_toolchain


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=Path("data/labels/device"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    began = time.monotonic()
    toolchain, cuda = find_toolchain(), find_cuda()
    labels, units = labelled_kernels(toolchain, cuda, args.labels)
    records = check_labelled(toolchain, labels, units, args.jobs, lambda line: print(line, file=sys.stderr))
    write_gzip_json(args.output, {"pool": labels.pool, "toolchain": toolchain.version_string, "kernels": records})
    table = []
    for split in ("train", "validation", "test"):
        mine = [r for r in records if r["split"] == split and r["reference"] != NO_LAUNCH]
        ran = [r for r in mine if r["reference"] == "ran"]
        verdicts = collections.Counter(v.split(":")[0] for r in ran for v in r["lists"].values())
        table.append(
            [
                split,
                str(len(mine)),
                str(len(ran)),
                str(sum(r["unoptimized"] == SAME for r in ran)),
                str(sum(all(v == SAME for v in r["lists"].values()) for r in ran)),
                str(verdicts[SAME]),
                str(verdicts["differs"]),
                str(sum(verdicts.values()) - verdicts[SAME] - verdicts["differs"]),
            ]
        )
    header = [
        "split", "kernels with a launch", "-O3 ran", "unoptimized IR the same", "every list the same", "same",
        "differs", "not run",
    ]  # fmt: skip
    print(to_markdown(Rows(f"The {len(labels.pool)} pool lists run on the CPU beside -O3", header, table)))
    for record in records:
        for pipeline, verdict in record["lists"].items():
            if verdict.startswith("differs"):
                print(f"- {record['uri']}: {verdict} with {labels.pool.index(pipeline) + 1}. pool list")
    print(f"{(time.monotonic() - began):.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except StitchoptError as exc:
        print(f"gpu_emulation.py: {exc}", file=sys.stderr)
        sys.exit(2)
