"""The device model judged on held-out kernel families: what one compilation (static), two (static + backup)
and k + 1 (jit) get, against each kernel's own search, on the kernels of `stitchopt gpu labels`.

The model is trained on the train split's kernels (the way it chooses picked by family folds) and judged on the
validation and test splits from the pool matrix: no build beyond the labels. With `--stitched`, stitched
experts (`studies/device_stitching.py`) stop and are chosen on the validation split, so they are judged on test
only. A kernel counts as better when its
build is no worse than clang's -O3 in SASS, registers, spills and stack and smaller in SASS or registers; worse
when it is worse in any. Static measures only: a kernel 10% or more smaller is also shown counted as -O3 (with
how many there were), and with `--evidence` (benchmarks/gpu_emulation.py's record: every pool list run on the
CPU beside -O3) how many of those wins ran with -O3's outputs, and the better kernels when the others count as
-O3.

    python benchmarks/gpu_model.py [--labels data/labels/device] [--evidence RECORD] [--json F] [--save DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from stitchopt.errors import InputError, StitchoptError
from stitchopt.labels.device import labelled_kernels
from stitchopt.labels.labelset import read_gzip_json
from stitchopt.learning.device import (
    EVERY_LIST,
    Outcome,
    geomean_change,
    judge,
    labelled_features,
    stacked,
    train_device_model,
)
from stitchopt.learning.verification import UNVERIFIED_WIN_RATIO
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.studies.kernel_emulation import SAME
from stitchopt.toolchain.cuda import find_cuda
from stitchopt.toolchain.discovery import find_toolchain


def unverified(outcome: Outcome) -> bool:
    """A win of 10% or more: no kernel runs here, so it is reported apart (DEVELOPERS.md's rule)."""
    return outcome.better and outcome.built.sass <= UNVERIFIED_WIN_RATIO * outcome.o3.sass


def as_o3(outcome: Outcome) -> Outcome:
    return Outcome(outcome.o3, outcome.o3, outcome.compilations)


def ran_same(evidence: dict[tuple[str, str], str], uri: str, outcome: Outcome) -> bool:
    """Whether the list a method chose for the kernel `uri` ran with -O3's outputs (run evidence)."""
    return outcome.chosen is not None and evidence.get((uri, outcome.chosen)) == SAME


def evidence_columns(outcomes: list[Outcome], uris: list[str], evidence: dict[tuple[str, str], str]) -> list[str]:
    """Of the 10%+ wins, those that ran the same; the better kernels when the others count as -O3."""
    wins = [unverified(o) for o in outcomes]
    checked = [w and ran_same(evidence, u, o) for w, u, o in zip(wins, uris, outcomes, strict=True)]
    better = sum(o.better and (c or not w) for o, w, c in zip(outcomes, wins, checked, strict=True))
    return [f"{sum(checked)} of {sum(wins)}", f"{better} ({100 * better / len(outcomes):.0f}%)"]


def read_evidence(path: Path, pool: list[str]) -> dict[tuple[str, str], str]:
    """gpu_emulation.py's verdicts by (kernel URI, pipeline), from a record of the labels' own pool."""
    document = read_gzip_json(path, "not a gpu_emulation.py record")
    if document.get("pool") != pool or not isinstance(document.get("kernels"), list):
        raise InputError(f"{path}: not a gpu_emulation.py record of this label pool: run gpu_emulation.py again")
    return {(k["uri"], pipeline): v for k in document["kernels"] for pipeline, v in k["lists"].items()}


def summary(outcomes: list[Outcome], search: list[Outcome]) -> list[str]:
    better = sum(o.better for o in outcomes)
    worse = sum(o.worse for o in outcomes)
    gain, reference = geomean_change(outcomes), geomean_change(search)
    share = f"{100 * gain / reference:.0f}%" if reference < 0 and gain < 0 else "-"
    ruled = geomean_change([as_o3(o) if unverified(o) else o for o in outcomes])
    return [
        f"{better} ({100 * better / len(outcomes):.0f}%)",
        str(worse),
        f"{100 * gain:+.2f}%",
        share,
        f"{100 * ruled:+.2f}% ({sum(map(unverified, outcomes))})",
        str(max(o.compilations for o in outcomes)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=Path("data/labels/device"))
    parser.add_argument("--evidence", type=Path, default=None, help="gpu_emulation.py's record of CPU runs")
    parser.add_argument("--json", type=Path, default=None, help="write the per-kernel outcomes here")
    parser.add_argument("--save", type=Path, default=None, help="save the trained model directory here")
    parser.add_argument("--stitched", action="store_true", help="also judge stitched experts (needs PyTorch)")
    args = parser.parse_args()
    began = time.monotonic()
    toolchain, cuda = find_toolchain(), find_cuda()
    labels, units = labelled_kernels(toolchain, cuda, args.labels)
    evidence = read_evidence(args.evidence, labels.pool) if args.evidence else None
    features = labelled_features(toolchain, labels, units)
    catalogue = load_catalogue(toolchain, device=True)
    model, folds = train_device_model(labels, features, ["train"], toolchain.version_string, catalogue.identity)
    print(f"pool of {len(labels.pool)} lists; {model.trained_on}; family folds: {folds}", file=sys.stderr)
    chosen = stacked(features, model.features)
    orders = {"chooser": lambda i: model.order(chosen[i])}
    if args.stitched:
        from stitchopt.stitching.experts import TrainConfig
        from stitchopt.studies.device_stitching import device_expert_data, stitched_orders

        module_of = {unit.uri: unit.module for unit in units}
        modules = [module_of[uri] for uri in labels.uris]
        stitched, members = stitched_orders(device_expert_data(toolchain, labels, modules), labels.pool, TrainConfig())
        print(f"stitched ensemble: {members}", file=sys.stderr)
        orders["stitched"] = stitched.__getitem__
    table, document = [], {"pool": labels.pool, "folds": folds, "model": model.trained_on, "splits": {}}
    for split in ("validation", "test"):
        rows = labels.rows([split])
        methods = {}
        for name, order_of in orders.items():
            if name == "stitched" and split == "validation":
                continue  # the stitched experts stop and are chosen on it: not held out for them
            judged = judge(order_of, labels, rows)
            search = judged.pop("search")
            if name == "stitched":
                del judged[EVERY_LIST]  # the same for every way of choosing: shown once, with the chooser
            methods.update({f"{name} {method}" if len(orders) > 1 else method: o for method, o in judged.items()})
        methods["search"] = search
        uris = [labels.uris[i] for i in rows]
        for name, outcomes in methods.items():
            if evidence is None:
                ran = []
            elif name == "search":  # the searches' lists are not in the pool the record ran
                ran = ["-", "-"]
            else:
                ran = evidence_columns(outcomes, uris, evidence)
            table.append([split, name, str(len(rows)), *summary(outcomes, methods["search"]), *ran])
        document["splits"][split] = {
            name: [{"uri": labels.uris[i], **asdict(o)} for i, o in zip(rows, outcomes, strict=True)]
            for name, outcomes in methods.items()
        }
    header = [
        "split", "method", "kernels", "better", "worse", "geomean SASS", "share of search",
        "10%+ wins as -O3 (how many)", "compilations",
    ]  # fmt: skip
    if evidence is not None:
        header += ["10%+ wins that ran the same on the CPU", "better (10%+ wins not run as -O3)"]
    print(
        to_markdown(
            Rows("Device model on held-out kernel families (static measures, unverified on a GPU)", header, table)
        )
    )
    print(f"{(time.monotonic() - began):.0f} s")
    if args.json:
        args.json.write_text(json.dumps(document, indent=1))
    if args.save:
        model.save(args.save)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except StitchoptError as exc:  # bad labels, a directory that cannot be written: one line, as the CLI says it
        print(f"gpu_model.py: {exc}", file=sys.stderr)
        sys.exit(2)
