"""Can an unroll count be chosen for a GPU kernel without its launch? Labels from CPU runs, a chooser learned on the
train families, judged by the instructions executed on the held-out kernels and by an H200's times.

    python benchmarks/gpu_time_chooser.py label [--labels data/labels/device] [--jobs 2] -o RECORD.json.gz
    python benchmarks/gpu_time_chooser.py evaluate RECORD.json.gz \
        [--timing data/gpu-timing/h200-2026-12-04-executed.json.gz]

`label` builds each labelled kernel that has a launch (studies/gpu_launches.py's CUDA launches, the OpenMP
regions `openmp_launch` can launch) with -O3 and with -O3 and each unroll count of `TIME_UNROLL_COUNTS`, runs
each build on the CPU beside -O3's with its instructions counted (studies/executed_labels.py), and stores the
kernel's features (the shipped device model's representations) beside them. `evaluate` (no LLVM) fits a
softmax chooser (models/chooser.py) over -O3 and the unrolled builds on the train kernels, where a build's cost
is its log instruction ratio to -O3 (without a launch nothing refuses a build once chosen), and reports per
split, over the kernels whose every build was counted, what each way of choosing executes against -O3: -O3, each
count alone, the count best on train, the chooser (these build what they choose: no launch tells them
otherwise), and the fewest of the three where the time objective would keep it (what the launch decides). With
`--timing`, the same choices' times on the kernels that the H200 record timed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.features.base import Standardizer
from stitchopt.models.chooser import SoftmaxChooser, decision_costs
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.studies.executed_labels import unrolled_names
from stitchopt.studies.kernel_timing import FLAGS_SEPARATOR, NOISE, o3_build, timed_entries
from stitchopt.toolchain.device_time import LOCAL_MEMORY, TIME_MARGIN, fewest_executed

O3 = "-O3"
SPLITS = ("train", "validation", "test")


def label(labels_directory: Path, jobs: int, output: Path) -> int:
    from stitchopt.labels.device import labelled_kernels
    from stitchopt.labels.labelset import write_gzip_json
    from stitchopt.models.device_model import kernel_features, load_device_model
    from stitchopt.studies.executed_labels import executed_records
    from stitchopt.studies.kernel_emulation import launchable
    from stitchopt.toolchain.cuda import find_cuda
    from stitchopt.toolchain.discovery import find_toolchain

    began = time.monotonic()
    toolchain, cuda = find_toolchain(), find_cuda()
    labels, units = labelled_kernels(toolchain, cuda, labels_directory)
    kernels = launchable(labels, units)
    records = executed_records(toolchain, kernels, jobs, lambda line: print(line, file=sys.stderr))
    model = load_device_model()
    features = {u.uri: kernel_features(toolchain, u.module, model.features).tolist() for u in kernels}
    for record in records:
        record["features"] = features[record["uri"]]
    document = {"toolchain": toolchain.version_string, "features": list(model.features), "kernels": records}
    write_gzip_json(output, document)
    print(f"{len(records)} kernels in {time.monotonic() - began:.0f} s", file=sys.stderr)
    return 0


def kept_ratio(record: dict[str, Any], name: str) -> float | None:
    """A build's instructions against -O3's where the time objective with the launch could keep it (its run the
    same as -O3's, no more spills or stack), else None."""
    build, reference = record["builds"].get(name, {}), record["reference"]
    ratio = build.get("ratio")
    if ratio is None or build["verdict"] != "same" or any(build[what] > reference[what] for what in LOCAL_MEMORY):
        return None
    return float(ratio)


def _geomean_change(ratios: list[float]) -> str:
    return f"{100 * (math.exp(statistics.fmean(math.log(r) for r in ratios)) - 1):+.2f}%" if ratios else "-"


def counted(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The kernels whose every unrolled build ran on the CPU with -O3's outputs and was counted."""
    names = unrolled_names()
    return [r for r in document["kernels"] if r["launch"] and all(r["builds"][n].get("ratio") for n in names)]


LAUNCH_DECIDES = "fewest executed (the launch decides)"


def choices(document: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per method, per counted kernel's uri: the build it chooses (O3 or an unrolled build's name)."""
    names = unrolled_names()
    kernels = counted(document)
    train = [r for r in kernels if r["split"] == "train"]
    kept = [[kept_ratio(r, name) for name in names] for r in kernels]
    # what a build executes where it is built (without a launch nothing refuses it): every counted kernel has all
    ratios = np.array([[r["builds"][name]["ratio"] for name in names] for r in kernels])
    train_rows = [i for i, r in enumerate(kernels) if r["split"] == "train"]
    standardizer = Standardizer.fit(np.array([r["features"] for r in train]))
    features = standardizer.transform(np.array([r["features"] for r in kernels]))
    chooser = SoftmaxChooser().fit(features[train_rows], decision_costs(ratios[train_rows]))
    picked = chooser.probabilities(features).argmax(axis=1)
    train_logs = np.log(ratios[train_rows]).mean(axis=0)
    best_on_train = names[int(train_logs.argmin())] if train_logs.min() < 0 else O3
    methods: dict[str, dict[str, str]] = {O3: {}, "chooser (no launch)": {}, "best count on train": {}}
    methods |= {f"{name} alone": {} for name in names}
    methods[LAUNCH_DECIDES] = {}
    for i, record in enumerate(kernels):
        uri = record["uri"]
        methods[O3][uri] = O3
        methods["chooser (no launch)"][uri] = O3 if picked[i] == len(names) else names[picked[i]]
        methods["best count on train"][uri] = best_on_train
        for name in names:
            methods[f"{name} alone"][uri] = name
        fewest = fewest_executed(kept[i])
        methods[LAUNCH_DECIDES][uri] = O3 if fewest is None else names[fewest]
    return methods


def evaluate(record_path: Path, timing_path: Path | None) -> int:
    document = json.loads(gzip.decompress(record_path.read_bytes()))
    kernels = {r["uri"]: r for r in counted(document)}
    methods = choices(document)
    header = ["method"]
    header += [
        f"{split} ({sum(r['split'] == split for r in kernels.values())}): change, fewer, more" for split in SPLITS
    ]
    rows = []
    for method, chosen in methods.items():
        cells = []
        for split in SPLITS:
            mine = [uri for uri, r in kernels.items() if r["split"] == split]
            executed = [1.0 if chosen[uri] == O3 else kernels[uri]["builds"][chosen[uri]]["ratio"] for uri in mine]
            fewer = sum(r < 1 - TIME_MARGIN for r in executed)
            more = sum(r > 1 + TIME_MARGIN for r in executed)
            cells.append(f"{_geomean_change(executed)}, {fewer}, {more}")
        rows.append([method, *cells])
    title = "Instructions executed on the CPU against -O3: geomean, kernels with 2% fewer, with 2% more"
    print(to_markdown(Rows(title, header, rows)))
    if timing_path is not None:
        print()
        print(to_markdown(_timed(methods, json.loads(gzip.decompress(timing_path.read_bytes())))))
    return 0


def _timed(methods: dict[str, dict[str, str]], timing: dict[str, Any]) -> Rows:
    """Each method's choices on the kernels the timing record holds, by their H200 times against -O3."""
    header = ["method"]
    rows: dict[str, list[str]] = {method: [method] for method in methods}
    for split in SPLITS:
        mine = [(t, e) for t, e in timed_entries(timing) if e["split"] == split and e["uri"] in methods[O3]]
        header.append(f"{split} ({len(mine)}): time, faster, slower")
        for method, chosen in methods.items():
            ratios = []
            for timed, entry in mine:
                o3 = o3_build(entry)
                pipeline = entry["roles"]["-O3"] + FLAGS_SEPARATOR + chosen[entry["uri"]]
                build = o3 if chosen[entry["uri"]] == O3 else entry["builds"][pipeline]
                if build is None or not timed["identical_outputs"][build]:  # not built, or rejected: -O3 stays
                    build = o3
                ratios.append(timed["median_ms"][build] / timed["median_ms"][o3])
            faster, slower = sum(r < 1 - NOISE for r in ratios), sum(r > 1 + NOISE for r in ratios)
            rows[method].append(f"{_geomean_change(ratios)}, {faster}, {slower}")
    return Rows("H200 time against -O3 of the kernels the record timed", header, list(rows.values()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    labelled = steps.add_parser("label", help="build and count every launchable labelled kernel (needs LLVM)")
    labelled.add_argument("--labels", type=Path, default=Path("data/labels/device"))
    labelled.add_argument("--jobs", type=int, default=2)
    labelled.add_argument("-o", "--output", type=Path, required=True)
    judged = steps.add_parser("evaluate", help="fit the chooser on train and report every split")
    judged.add_argument("record", type=Path)
    judged.add_argument("--timing", type=Path, default=None)
    args = parser.parse_args()
    if args.step == "label":
        return label(args.labels, args.jobs, args.output)
    return evaluate(args.record, args.timing)


if __name__ == "__main__":
    sys.exit(main())
