"""Learning curve: how much of the autotuner the flag model keeps as its labelled units grow, so that the next
step (more labels, or another model) is chosen from data.

From one label directory (`stitchopt labels search` + `labels broadcast`): models are trained on N units of the
train split (round-robin over packages, `--repeats` draws per N, fixed seeds), with function units (`#` in the
URI) or without, and scored on every module unit of the validation split, never trained on. No compilation is
needed: each held-out unit's size under a list is read from the broadcast matrix, whose pool is cut to the lists
some train unit's search found (a list only a held-out unit's search found is never a candidate). The reference
("autotuner") of a unit is the better of its own search's minimized best and the pool's best list, with -Oz as
backup, as LLM Compiler's autotuner keeps the best of its search and broadcast (the single-unit searches' lists
only: lists searched for groups of train units, `labels groups`, are candidates, never the reference; with
`--no-groups` they are left out). Lists the directory's verdicts failed (`stitchopt labels validate`) are
never candidates. Shares are
(1 - geomean ratio of the method) / (1 - geomean ratio of the autotuner); the pool's ceiling (each held-out
unit's best pool list, what any way of choosing from the pool can reach) is printed beside. Train units may be
broadcast only (`labels broadcast --unsearched`); the held-out units are the searched ones. Two one-pipeline
compiles are scored for how often they make a unit larger: static alone (the top choice, -Oz where the chooser
ranks it first) and `fast` (the clang plugin's policy: the top list only where its predicted gain passes the
margin training learned).

    python benchmarks/learning_curve.py --labels data/labels/searched [--matrix DIR/matrix-<pool>] [--no-groups]
        [--no-unsearched] [--functions off|on|both]
        [--sizes 60,120,250,500,1000,1500] [--repeats 3] [--jit-ks 10,40] [--features unoptimized] [--json F]

`--features` says what the model reads: the unoptimized IR (as shipped), the IR after -Oz (`after-oz`), or both
side by side (`both`): features that see what -Oz makes of the unit, beside what the lists start from.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR, benchmark_module, unit_language
from stitchopt.features.base import FeatureCache, extract_all
from stitchopt.features.by_name import default_representations
from stitchopt.features.module import FeatureModule
from stitchopt.labels.groups import group_lists, load_groups, train_groups
from stitchopt.labels.labelset import LabeledProgram, LabelSet, labeled_features
from stitchopt.labels.shards import SearchedUnit, load_matrix, load_searches
from stitchopt.labels.verdicts import failed_lists
from stitchopt.learning.heldout import fast_ratio
from stitchopt.learning.train import train_flag_model
from stitchopt.models.ranker import geomean_change
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.process import run_tool


@dataclass(frozen=True)
class Point:
    units: int  # labelled units trained on
    functions: bool  # function units among them
    packages: int
    repeats: int
    static_backup: float  # geomean size change vs -Oz over the held-out units (mean over repeats)
    static_alone: float  # the top choice compiled alone (-Oz where the chooser ranks it first)
    regressed: float  # share of held-out units static alone makes larger than -Oz
    fast: float  # the plugin's one-pipeline policy: the top list only where predicted past its learned margin
    fast_regressed: float
    jit: tuple[float, ...]  # the best of the top k lists and -Oz, one per `--jit-ks` (seeded search's seeds too)
    share_static_backup: float  # of the autotuner's gain
    share_jit: tuple[float, ...]
    chosen: str  # the kind of chooser cross-validation over packages picked, in each draw
    train_seconds: float


def after_oz_features(toolchain: Toolchain, programs: tuple[LabeledProgram, ...], cache: FeatureCache) -> np.ndarray:
    """The default representations of each program's IR after `opt -passes='default<Oz>'`."""
    rows = []
    for program in programs:
        bitcode = benchmark_module(toolchain, program.uri).bitcode
        run = run_tool(opt_command(str(toolchain.tools["opt"]), "default<Oz>"), stdin=bitcode)
        if run.returncode != 0:
            last = (run.stderr_text.strip().splitlines() or ["no message"])[-1]
            raise SystemExit(f"{program.uri}: opt -Oz failed: {last}")
        module = FeatureModule.from_bytes(toolchain, run.stdout, f"{program.uri} after -Oz")
        rows.append(np.concatenate(list(extract_all(default_representations(), module, cache).values())))
    return np.array(rows)


def is_function(program: LabeledProgram) -> bool:
    return FUNCTION_SEPARATOR in program.uri


def draw(programs: list[int], packages: list[str], size: int, seed: int) -> list[int]:
    """`size` of `programs` (row indices), round-robin over their packages in a seeded order."""
    rng = random.Random(seed)
    by_package: dict[str, list[int]] = {}
    for row in programs:
        by_package.setdefault(packages[row], []).append(row)
    groups = [rng.sample(rows, len(rows)) for _, rows in sorted(by_package.items())]
    rng.shuffle(groups)
    rounds = max(map(len, groups), default=0)
    ordered = [group[i] for i in range(rounds) for group in groups if i < len(group)]
    return ordered[:size]


def restricted_to_train_bests(
    labels: LabelSet,
    searched: list[SearchedUnit],
    directory: Path,
    groups: bool = True,
) -> LabelSet:
    """The matrix without the pool lists that only held-out units' searches found (a held-out unit's own best
    list would otherwise be a candidate for it); lists searched for groups of train units stay, with `groups`;
    lists that failed validation (the directory's verdicts, `stitchopt labels validate`) go."""
    bests = {u.best for u in searched if u.split == "train" and u.best is not None}
    if groups:
        bests.update(group_lists(train_groups(load_groups(directory), searched)))
    bests -= failed_lists(directory)
    keep = [j for j, passes in enumerate(labels.lists) if passes in bests]
    programs = tuple(
        replace(
            p,
            sizes=tuple(p.sizes[j] for j in keep),
            instructions=tuple(p.instructions[j] for j in keep),
            seconds=tuple(p.seconds[j] for j in keep) if p.seconds else (),
        )
        for p in labels.programs
    )
    lists = tuple(labels.lists[j] for j in keep)
    return LabelSet(labels.toolchain, labels.catalogue, labels.dataset, lists, programs, labels.cpu_seconds)


def autotuner_ratios(directory: Path, labels: LabelSet, ratios: np.ndarray, rows: list[int]) -> np.ndarray:
    """Per held-out row: the better of its search's minimized best and the pool's best list, -Oz as backup."""
    searched = {u.uri: u.best_ratio for u in load_searches(directory) if not u.failed}
    pool_best = np.min(ratios[rows], axis=1)
    own = np.array([searched.get(labels.programs[row].uri, 1.0) for row in rows])
    return np.asarray(np.minimum(np.minimum(own, pool_best), 1.0))


def score(
    labels: LabelSet,
    features: np.ndarray,
    ratios: np.ndarray,
    train: list[int],
    held: list[int],
    ks: tuple[int, ...],
    llvm_version: str,
) -> tuple[dict[str, float], str]:
    """Train on `train` rows, then each held-out row's ratio under the model's choices; and the kind of
    chooser the training's cross-validation picked."""
    subset = LabelSet(
        labels.toolchain,
        labels.catalogue,
        labels.dataset,
        labels.lists,
        tuple(labels.programs[i] for i in train),
        labels.cpu_seconds,
    )
    model, report = train_flag_model(subset, features[train], default_representations(), llvm_version=llvm_version)
    column = {passes: j for j, passes in enumerate(labels.lists)}
    ranked = model.rank_features(features[held], [unit_language(labels.programs[i].uri) for i in held])
    answers = model.fast_choices(features[held], ranked)
    top: list[float] = []
    fast: list[float] = []
    jit: dict[int, list[float]] = {k: [] for k in ks}
    for row, order, answer in zip(held, ranked, answers, strict=True):
        values = [1.0 if entry.passes is None else float(ratios[row, column[entry.passes]]) for entry in order]
        top.append(values[0])
        for k in ks:
            jit[k].append(min(1.0, *values[:k]))
        fast.append(fast_ratio(1.0 if answer is None else float(ratios[row, column[answer]])))
    scores = {
        "static_backup": geomean_change(np.minimum(np.array(top), 1.0)),
        "static_alone": geomean_change(np.array(top)),
        "regressed": float(np.mean(np.array(top) > 1.0)),
        "fast": geomean_change(np.array(fast)),
        "fast_regressed": float(np.mean(np.array(fast) > 1.0)),
        **{f"jit{k}": geomean_change(np.array(jit[k])) for k in ks},
    }
    return scores, report.candidates[0].name if report.candidates else "regression ranker"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, required=True, help="label directory with a broadcast matrix")
    parser.add_argument("--matrix", type=Path, help="its matrix directory, when it holds several")
    parser.add_argument(
        "--groups", action=argparse.BooleanOptionalAction, default=True, help="keep the groups' lists in the pool"
    )
    parser.add_argument("--sizes", default="60,120,250,500,1000,1500")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jit-ks", default="10,40", help="jit's k values (40: seeded search's seeds)")
    parser.add_argument("--features", choices=("unoptimized", "after-oz", "both"), default="unoptimized")
    parser.add_argument(
        "--unsearched",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="train on units only broadcast too (`labels broadcast --unsearched`), not only searched ones",
    )
    parser.add_argument("--functions", choices=("off", "on", "both"), default="both", help="function units")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    ks = tuple(int(k) for k in args.jit_ks.split(",") if k)

    toolchain = find_toolchain(None)
    catalogue = load_catalogue(toolchain)
    labels = load_matrix(args.matrix or args.labels)
    with EvaluationStore(store_path(None)) as store:
        data = labeled_features(toolchain, labels, default_representations(), FeatureCache(store))
        features = data.features
        if args.features != "unoptimized":
            after = after_oz_features(toolchain, data.labels.programs, FeatureCache(store))
            features = after if args.features == "after-oz" else np.hstack([features, after])
    searched = load_searches(args.labels)
    labels = restricted_to_train_bests(data.labels, searched, args.labels, args.groups)
    print(f"{len(labels.programs)} labelled units with IR ({len(data.skipped)} skipped)", file=sys.stderr)
    ratios = labels.ratios()
    packages = [p.package for p in labels.programs]
    # held out: the searched validation module units (a unit only broadcast has no search to be the reference)
    reached = {u.uri for u in searched}
    held = [
        i for i, p in enumerate(labels.programs) if p.split == "validation" and not is_function(p) and p.uri in reached
    ]
    # the reference is the same with or without the groups' lists: single-unit searches and their bests
    singles = restricted_to_train_bests(data.labels, searched, args.labels, groups=False)
    reference = autotuner_ratios(args.labels, singles, singles.ratios(), held)
    autotuner = geomean_change(reference)

    def share(change: float) -> float:
        return change / autotuner if autotuner < 0 else 0.0

    best_in_pool = np.minimum(ratios[held].min(axis=1), 1.0)  # what any way of choosing from the pool reaches
    ceiling_change = geomean_change(best_in_pool)
    ceiling = (
        f"pool ceiling: the best pool list per held-out unit keeps {100 * share(ceiling_change):.0f}% of the"
        f" autotuner ({ceiling_change:+.2%}); {np.mean(best_in_pool < 1):.0%} of the held-out units have a pool list"
        " below -Oz"
    )
    points = []
    trainable = [
        i for i, p in enumerate(labels.programs) if p.split == "train" and (args.unsearched or p.uri in reached)
    ]
    for functions in {"off": (False,), "on": (True,), "both": (False, True)}[args.functions]:
        pool = [i for i in trainable if functions or not is_function(labels.programs[i])]
        for size in sorted({min(int(s), len(pool)) for s in args.sizes.split(",")}):
            start = time.perf_counter()
            runs, chosen, drawn = [], [], []
            for repeat in range(args.repeats):
                train = draw(pool, packages, size, seed=repeat)
                drawn.append({packages[i] for i in train})
                scores, kind = score(labels, features, ratios, train, held, ks, catalogue.llvm_version)
                runs.append(scores)
                chosen.append(kind)
            mean = {key: float(np.mean([r[key] for r in runs])) for key in runs[0]}
            points.append(
                Point(
                    size,
                    functions,
                    len(drawn[0]),
                    args.repeats,
                    mean["static_backup"],
                    mean["static_alone"],
                    mean["regressed"],
                    mean["fast"],
                    mean["fast_regressed"],
                    tuple(mean[f"jit{k}"] for k in ks),
                    share(mean["static_backup"]),
                    tuple(share(mean[f"jit{k}"]) for k in ks),
                    ", ".join(chosen),
                    (time.perf_counter() - start) / args.repeats,
                )
            )
            print(f"{size} units (functions {'on' if functions else 'off'}) done", file=sys.stderr)
    title = (
        f"Learning curve: {len(held)} held-out module units of {len({packages[i] for i in held})} validation "
        f"packages, autotuner {100 * autotuner:+.2f}% vs -Oz; pool of {len(labels.lists)} lists"
    )
    rows = [
        [
            str(p.units),
            "on" if p.functions else "off",
            str(p.packages),
            f"{100 * p.static_backup:+.2f}%",
            f"{100 * p.share_static_backup:.0f}%",
            f"{100 * p.static_alone:+.2f}%",
            f"{100 * p.regressed:.0f}%",
            f"{100 * p.fast:+.2f}%",
            f"{100 * p.fast_regressed:.0f}%",
            *(
                cell
                for c, s in zip(p.jit, p.share_jit, strict=True)
                for cell in (f"{100 * c:+.2f}%", f"{100 * s:.0f}%")
            ),
            p.chosen,
        ]
        for p in points
    ]
    headers = ["units", "functions", "packages", "static+backup", "share", "static alone", "regressed", "fast"]
    headers += ["regressed"]
    headers += [name for k in ks for name in (f"jit k={k}", "share")] + ["chooser picked (per draw)"]
    print(f"{title}\n{ceiling}\n\n{to_markdown(Rows(title, headers, rows))}")
    if args.json:
        summary = {
            "title": title,
            "autotuner": autotuner,
            "pool_ceiling": ceiling_change,
            "held_out": len(held),
            "jit_ks": ks,
            "points": [asdict(p) for p in points],
        }
        args.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
