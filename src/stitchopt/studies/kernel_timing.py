"""What each way of choosing a device list makes of a kernel's time on a GPU (benchmarks/gpu_timing.py's
report): the builds the methods choose from ptxas's measures alone, looked up in the timed builds of the same
kernel. Pure Python over the timing script's documents, so that it is tested without a GPU."""

from __future__ import annotations

import math
import statistics
from typing import Any

from stitchopt.toolchain.device_time import LOCAL_MEMORY, TIME_MARGIN, TIME_UNROLL_COUNTS, fewest_executed, unroll_flags
from stitchopt.toolchain.ptx_code import LoopShape

JIT_KS = (3, 10)
# A kernel is faster or slower when its median moves by more than this: below it, medians of one build move
# between runs on an H200; on a 14 us kernel, -O3 timed against itself has moved 5%.
NOISE = 0.02
FASTEST_TRAIN_LIST = "fastest train list"
FASTEST = "fastest with -O3's outputs"
TIME_SUFFIX = ", time objective"  # `gpu optimize --objective time`: the loops kept as -O3 shapes them
LAUNCH_SUFFIX = ", time objective with the launch"  # ... --launch: the fewest instructions executed on the CPU
FEWEST_EXECUTED = "fewest executed on the CPU"
FLAGS_SEPARATOR = " ; "  # in a manifest's pipeline: the pipeline, then opt flags that a pass list cannot say


def o3_build(entry: dict[str, Any]) -> int:
    """The variant index of a manifest entry's -O3 build."""
    build: int = entry["builds"][entry["roles"]["-O3"]]
    return build


def timed_entries(document: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each timed kernel of a run's document with its manifest entry."""
    entries = {entry["uri"]: entry for entry in document["manifest"]["kernels"]}
    return [(timed, entries[timed["uri"]]) for timed in document["kernels"]]


def _time_counts(times: list[float]) -> dict[str, Any]:
    """Kernels faster and slower by more than NOISE, and the geomean change, of time ratios against -O3."""
    return {
        "kernels": len(times),
        "faster": sum(t < 1 - NOISE for t in times),
        "slower": sum(t > 1 + NOISE for t in times),
        "geomean_time": _geomean_change(times),
    }


# `smallest` below is `apply/device.py`'s rule (no worse than -O3 in every ptxas measure, then the smallest) over
# the manifest's plain numbers: this module must import on the GPU machine, which has none of the LLVM side.
def _measure(variant: dict[str, Any]) -> tuple[int, int, int, int]:
    return (variant["sass"], variant["registers"], variant["spilled"], variant["stack"])


def _no_worse(variant: dict[str, Any], o3: dict[str, Any], objective: str) -> bool:
    """`apply/device.py`'s test of a build against -O3's: the ptxas measures, and for "time" the loop shape too
    (a manifest's variants carry it as "loops" since `gpu_timing.py loops` or `prepare` wrote it)."""
    if not all(a <= b for a, b in zip(_measure(variant), _measure(o3), strict=True)):
        return False
    return objective == "size" or not LoopShape(**variant["loops"]).slower_signs(LoopShape(**o3["loops"]))


def choices(entry: dict[str, Any], margin: float = TIME_MARGIN) -> dict[str, int]:
    """The build (index into `entry["variants"]`) each method chooses for one kernel of the manifest, from the
    ptxas measures alone: the device model's top list with the -O3 backup (static + backup), the smallest of its
    top k lists no worse than -O3 (jit k), the same over the whole pool, and the kernel's own searches; where the
    variants carry their loop shapes, static + backup and jit k under the time objective too (TIME_SUFFIX)."""
    builds, variants, roles = entry["builds"], entry["variants"], entry["roles"]
    o3 = o3_build(entry)

    def smallest(pipelines: list[str], objective: str = "size") -> int:
        built: list[int] = [builds[p] for p in pipelines if builds.get(p) is not None]
        kept = [v for v in built if _no_worse(variants[v], variants[o3], objective)]
        return min([o3, *kept], key=lambda v: (variants[v]["sass"], variants[v]["registers"]))

    ranked = [p for p in entry["order"] if p != roles["-O3"]]
    chosen = {"static + backup": smallest(entry["order"][:1])}
    chosen |= {f"jit k={k}": smallest(ranked[:k]) for k in JIT_KS}
    if all("loops" in variant for variant in variants):
        chosen["static + backup" + TIME_SUFFIX] = smallest(entry["order"][:1], "time")
        chosen |= {f"jit k={k}{TIME_SUFFIX}": smallest(ranked[:k], "time") for k in JIT_KS}
    if all("executed" in variant for variant in variants):
        unrolled = [roles["-O3"] + FLAGS_SEPARATOR + " ".join(unroll_flags(n)) for n in TIME_UNROLL_COUNTS]
        if missing := [pipeline for pipeline in unrolled if pipeline not in builds]:
            raise ValueError(f"{entry['uri']}: the manifest has no build {missing[0]!r} (prepare's --candidates)")
        chosen["static + backup" + LAUNCH_SUFFIX] = _fewest_executed(entry, [*entry["order"][:1], *unrolled], margin)
        chosen |= {
            f"jit k={k}{LAUNCH_SUFFIX}": _fewest_executed(entry, [*ranked[:k], *unrolled], margin) for k in JIT_KS
        }
        chosen[FEWEST_EXECUTED] = _fewest_executed(entry, list(builds), margin)
    chosen["every pool list"] = smallest(entry["pool"])
    for role in ("search", "long search"):  # "long search": only on the kernels the timing run was given one for
        if role in roles:
            chosen[role] = smallest([roles[role]] if roles[role] else [])
    return chosen


def _fewest_executed(entry: dict[str, Any], pipelines: list[str], margin: float) -> int:
    """`apply/device.py`'s time objective with launches over the manifest's numbers (`fewest_executed` of
    `pipelines`' builds; None for a build whose CPU run failed or wrote other outputs, or with more spills or
    stack than -O3's); -O3 where none is kept. (A manifest's variants carry "executed" since `gpu_timing.py
    executed` or `prepare` wrote it.)"""
    builds, variants, o3 = entry["builds"], entry["variants"], o3_build(entry)
    counted = [builds[p] for p in pipelines if builds.get(p) is not None]  # no ratio where -O3's own did not run
    chosen = fewest_executed([_executed_ratio(variants, v, o3) for v in counted], margin)
    return o3 if chosen is None else counted[chosen]


def _executed_ratio(variants: list[dict[str, Any]], v: int, o3: int) -> float | None:
    """A build's instructions executed against -O3's, where the time objective may keep it (counted with -O3's
    outputs, no more spills or stack); else None."""
    local = any(variants[v][what] > variants[o3][what] for what in LOCAL_MEMORY)
    executed, reference = variants[v]["executed"], variants[o3]["executed"]
    return None if executed is None or reference is None or local else float(executed / reference)


def fastest_train_list(document: dict[str, Any]) -> str | None:
    """The list with the best geomean time against -O3 over the timed train kernels, among those that build
    every one of them with -O3's outputs: a static choice learned from time. None without train kernels."""
    train = [(timed, entry) for timed, entry in timed_entries(document) if entry["split"] == "train"]
    if not train:
        return None
    geomeans: dict[str, float] = {}
    for pipeline in train[0][1]["builds"]:
        logs = []
        for timed, entry in train:
            v = entry["builds"].get(pipeline)
            if v is None or not timed["identical_outputs"][v]:
                break
            logs.append(math.log(timed["median_ms"][v] / timed["median_ms"][o3_build(entry)]))
        else:
            geomeans[pipeline] = statistics.fmean(logs)
    return min(geomeans, key=geomeans.__getitem__) if geomeans else None


def method_rows(document: dict[str, Any], margin: float = TIME_MARGIN) -> dict[str, list[dict[str, Any]]]:
    """Per method, per timed kernel: its build's median time and SASS as ratios of -O3's. A build whose outputs
    differ from -O3's is rejected (a miscompile): the kernel keeps -O3 (ratio 1) and is counted. Kernels outside
    the train split also get the fastest train list (`fastest_train_list`; -O3 where it cannot build). The last
    method is the fastest build with -O3's outputs (`_fastest_again`): what timing every build on the GPU would
    choose."""
    learned = fastest_train_list(document)
    rows: dict[str, list[dict[str, Any]]] = {}
    for timed, entry in timed_entries(document):
        o3 = o3_build(entry)
        medians, same = timed["median_ms"], timed["identical_outputs"]
        chosen = choices(entry, margin)
        if learned is not None and entry["split"] != "train":
            built = entry["builds"].get(learned)
            chosen[FASTEST_TRAIN_LIST] = o3 if built is None else built
        for method, v in chosen.items():
            rejected = not same[v]
            sass = entry["variants"][v]["sass"] / entry["variants"][o3]["sass"]
            rows.setdefault(method, []).append(
                {
                    "uri": timed["uri"],
                    "split": entry["split"],
                    "time": 1.0 if rejected else medians[v] / medians[o3],
                    "sass": 1.0 if rejected else sass,
                    "rejected": rejected,
                }
            )
        rows.setdefault(FASTEST, []).append(_fastest_again(timed, entry, o3))
    return rows


def _fastest_again(timed: dict[str, Any], entry: dict[str, Any], o3: int) -> dict[str, Any]:
    """The fastest build with -O3's outputs as its own rounds beside -O3 timed it (the pick of the fastest of
    many noisy medians would flatter it): kept when those rounds find it faster by more than NOISE, else -O3."""
    again = timed["fastest_again"]
    ratio = again["ms"] / again["o3_ms"]
    kept = again["build"] != o3 and ratio < 1 - NOISE  # -O3 timed against itself is noise, not a win
    sass = entry["variants"][again["build"]]["sass"] / entry["variants"][o3]["sass"]
    return {
        "uri": timed["uri"],
        "split": entry["split"],
        "time": ratio if kept else 1.0,
        "sass": sass if kept else 1.0,
        "rejected": False,
    }


def _geomean_change(ratios: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(r) for r in ratios)) - 1


def summarize(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per method and split: kernels faster and slower by more than NOISE, rejected builds, geomean time and
    SASS changes."""
    summary = []
    for method, kernels in rows.items():
        for split in sorted({k["split"] for k in kernels}, reverse=True):
            mine = [k for k in kernels if k["split"] == split]
            summary.append(
                {
                    "method": method,
                    "split": split,
                    **_time_counts([k["time"] for k in mine]),
                    "rejected": sum(k["rejected"] for k in mine),
                    "geomean_sass": _geomean_change([k["sass"] for k in mine]),
                }
            )
    return summary


def loop_sign_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per split, every timed build other than -O3's with -O3's outputs, by its time against -O3 (faster, same,
    slower by more than NOISE) and whether its loop shape shows a sign of slower code (what the time objective
    refuses beyond ptxas's measures). Empty when the variants carry no loop shapes."""
    counts: dict[str, dict[str, int]] = {}
    for timed, entry in timed_entries(document):
        variants, o3 = entry["variants"], o3_build(entry)
        if not all("loops" in variant for variant in variants):
            return []
        reference = LoopShape(**variants[o3]["loops"])
        for v, variant in enumerate(variants):
            if v == o3 or not timed["identical_outputs"][v]:
                continue
            ratio = timed["median_ms"][v] / timed["median_ms"][o3]
            speed = "faster" if ratio < 1 - NOISE else "slower" if ratio > 1 + NOISE else "same"
            signs = "refused" if LoopShape(**variant["loops"]).slower_signs(reference) else "kept"
            row = counts.setdefault(entry["split"], {})
            row[f"{speed} {signs}"] = row.get(f"{speed} {signs}", 0) + 1
    return [{"split": split, **row} for split, row in counts.items()]


def executed_rank_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per split, every pair of one kernel's timed builds with -O3's outputs (on the GPU and on the CPU) whose
    times differ by more than NOISE: ordered "alike" by their executed instructions, "opposite", or "tied" (the
    same count). Empty when the variants carry no counts."""
    counts: dict[str, dict[str, int]] = {}
    for timed, entry in timed_entries(document):
        variants = entry["variants"]
        if not all("executed" in variant for variant in variants):
            return []
        ran = [
            (variants[v]["executed"], timed["median_ms"][v])
            for v in range(len(variants))
            if timed["identical_outputs"][v] and variants[v]["executed"] is not None
        ]
        row = counts.setdefault(entry["split"], {"alike": 0, "opposite": 0, "tied": 0})
        for i, (executed, ms) in enumerate(ran):
            for other_executed, other_ms in ran[:i]:
                if abs(ms / other_ms - 1) <= NOISE:
                    continue
                if executed == other_executed:
                    row["tied"] += 1
                else:
                    row["alike" if (executed < other_executed) == (ms < other_ms) else "opposite"] += 1
    return [{"split": split, **row} for split, row in counts.items()]


def executed_margin_rows(document: dict[str, Any], margin: float = TIME_MARGIN) -> list[dict[str, Any]]:
    """Per split, every timed build with -O3's outputs (on the GPU and on the CPU) that executed `margin` fewer
    instructions than -O3's with no more spills or stack (what the time objective may keep), by its time
    against -O3: faster, same or slower by more than NOISE. Empty when the variants carry no counts."""
    counts: dict[str, dict[str, int]] = {}
    for timed, entry in timed_entries(document):
        variants, o3 = entry["variants"], o3_build(entry)
        if not all("executed" in variant for variant in variants):
            return []
        row = counts.setdefault(entry["split"], {"faster": 0, "same": 0, "slower": 0})
        for v in range(len(variants)):
            executed = _executed_ratio(variants, v, o3)
            if v != o3 and executed is not None and executed <= 1 - margin and timed["identical_outputs"][v]:
                ratio = timed["median_ms"][v] / timed["median_ms"][o3]
                row["faster" if ratio < 1 - NOISE else "slower" if ratio > 1 + NOISE else "same"] += 1
    return [{"split": split, **row} for split, row in counts.items()]


def vendor_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per kernel timed beside nvcc's own build (`gpu_timing.py run --nvcc`): both medians and whether nvcc's
    outputs are -O3's bit for bit (they need not be: nvcc may contract or order float operations otherwise)."""
    rows = []
    for timed, entry in timed_entries(document):
        if "vendor" not in timed:
            continue
        rows.append(
            {
                "uri": timed["uri"],
                "split": entry["split"],
                "o3_ms": timed["median_ms"][o3_build(entry)],
                "nvcc_ms": timed["vendor"]["median_ms"],
                "identical_outputs": timed["vendor"]["identical_outputs"],
            }
        )
    return rows


def candidate_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Each `--candidates` list applied to every kernel of a split alone (a build that fails or changes the outputs
    counts as -O3): what one such list does across kernels, beside what choosing per kernel gets."""
    ratios: dict[tuple[str, str], list[float]] = {}
    for timed, entry in timed_entries(document):
        o3 = o3_build(entry)
        for candidate in entry.get("candidates", []):
            v = entry["builds"].get(candidate)
            usable = v is not None and timed["identical_outputs"][v]
            ratio = timed["median_ms"][v] / timed["median_ms"][o3] if usable else 1.0
            ratios.setdefault((candidate, entry["split"]), []).append(ratio)
    return [
        {"candidate": candidate, "split": split, **_time_counts(values)}
        for (candidate, split), values in ratios.items()
    ]
