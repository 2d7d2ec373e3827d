"""Kernel time on a GPU: every way of choosing a device list, timed against clang's -O3 device build, outputs
compared.

Three steps, because the GPU machine has no LLVM, and two more for documents written before `prepare` kept the
builds' loop shapes and executed instructions:

    python benchmarks/gpu_timing.py prepare [--labels data/labels/device] [--splits train,validation,test]
        [--lists gpu_static.json] [--candidates benchmarks/gpu_time_candidates.txt] -o gpu-run
    python benchmarks/gpu_timing.py run gpu-run --json timing.json [--repeats 30] [--seconds 420] [--nvcc]
    python benchmarks/gpu_timing.py report timing.json[.gz] [--json F] [--margin 0.02]
    python benchmarks/gpu_timing.py loops timing.json[.gz] [--labels data/labels/device] -o with-loops.json.gz
    python benchmarks/gpu_timing.py executed timing.json[.gz] [--labels data/labels/device] -o counted.json.gz

`prepare` (here) builds, for each labelled kernel of `--splits` that studies/gpu_launches.py can launch, -O3, every
list of the label pool, the device model's lists, -O3 with each unroll count the time objective tries, the
kernel's own search's kept list, with `--lists`
(`benchmarks/gpu_static.py --json`) that script's search list, and with `--candidates` more lists (e.g. -O3 with
one pass more, made to look for speed; a line `PIPELINE ; FLAGS` also gives opt flags, such as an unroll count);
identical cubins are kept once. The manifest holds each build's ptxas measures, its loop shapes, the instructions
it executes on the CPU with the kernel's launch (`gpu optimize --objective time --launch`'s measure; null where
that run fails or its outputs differ from -O3's) and the shipped device model's order of choices, so the report
needs no LLVM. `run` (on the GPU machine: numpy and CuPy, `PYTHONPATH=src`) runs each
kernel in a process of its own (a kernel whose build faults cannot stop the other kernels): one launch of every
build on the same seeded inputs, a build rejected when any output differs from -O3's by one bit (a miscompile, as
on the CPU), then 3 warm-up rounds and `--repeats` timed rounds (CUDA events), the builds interleaved in each round
so that clock changes hit all alike and the written buffers reset before each launch; the fastest build with -O3's
outputs is then timed again beside -O3 in rounds of their own. It writes the device, its clocks, the driver and the
time of the run; with `--nvcc`, nvcc's own build of the project's kernel files is timed in the same rounds and
reported apart. Without CuPy or a device it writes the same document with `"gpu": null` and the reason and exits 0.
`report` (anywhere) times what each method chooses from the ptxas measures alone (the device model's static +
backup and jit k, the best of every pool list, the kernel's search), the one list fastest over the train kernels
applied to the others (a static choice learned from time), and the fastest build with -O3's outputs as its second
rounds timed it (what timing every build on the GPU would choose). Where the manifest's builds carry their loop
shapes (`prepare` writes them; `loops` adds them to an older document by rebuilding each build here and checking
its ptxas measures), `report` adds `gpu optimize --objective time`'s choices and how its loop signs sort the
timed builds; where they carry executed instructions (`executed` adds them as `loops` does), the time objective
with the launch (the model's lists and -O3 with each unroll count, the fewest instructions executed) and the
fewest executed over every build.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.studies.gpu_launches import LAUNCHES, Buffer, Launch, argument_types, launch, ptx_parameter_types
from stitchopt.studies.kernel_timing import (
    FLAGS_SEPARATOR,
    candidate_rows,
    executed_margin_rows,
    executed_rank_rows,
    loop_sign_rows,
    method_rows,
    o3_build,
    summarize,
    timed_entries,
    vendor_rows,
)
from stitchopt.toolchain.device_time import TIME_MARGIN, TIME_UNROLL_COUNTS, unroll_flags

MANIFEST = "manifest.json"
# datasets/kernels.py's KERNELS_URI and KERNEL_DIR, spelled again: that module cannot be imported on the GPU
# machine (its imports reach the evaluation store's dependencies), and `run` needs them there for --nvcc.
PROJECT_KERNELS = "bench://kernels-v1/"
PROJECT_SOURCES = Path(__file__).resolve().parents[1] / "src" / "stitchopt" / "datasets" / "kernels_v1"
KERNEL_SECONDS = 120  # one kernel's process, all its builds: far above what a launch of these inputs takes


def prepare(
    labels_directory: Path, splits: list[str], output: Path, searched: Path | None, candidates: list[str]
) -> int:
    """Every distinct build of each launchable labelled kernel of `splits`, as cubins, and the manifest."""
    from stitchopt.diagnostics import exception_line
    from stitchopt.errors import StitchoptError
    from stitchopt.labels.device import SEARCH, labelled_kernels, read_shards
    from stitchopt.models.device_model import kernel_features, load_device_model
    from stitchopt.toolchain.cuda import find_cuda
    from stitchopt.toolchain.device import DEFAULT_ARCH, device_baseline
    from stitchopt.toolchain.discovery import find_toolchain
    from stitchopt.tune.device import Measure
    from stitchopt.validate.device_run import DeviceRunner

    toolchain, cuda = find_toolchain(), find_cuda()
    labels, units = labelled_kernels(toolchain, cuda, labels_directory)
    model = load_device_model()
    runner = DeviceRunner(toolchain)
    unit_of = {unit.uri: unit for unit in units}
    row_of = {uri: i for i, uri in enumerate(labels.uris)}
    search_list = {  # the shard whose kept best the labels hold (older shards of a kernel may lie beside it)
        row["uri"]: row["pipeline"]
        for row in read_shards(labels_directory, SEARCH)
        if row["uri"] in row_of and row["best"] == labels.searched[row_of[row["uri"]]]
    }
    longer = {}
    if searched is not None:
        for result in json.loads(searched.read_text())["kernels"]:
            longer[result["kernel"]] = result["search"]["pipeline"]
    output.mkdir(parents=True, exist_ok=True)
    entries = []
    try:
        for i in labels.rows(splits):
            unit = unit_of[labels.uris[i]]
            if unit.kernel not in LAUNCHES:
                continue
            expected = argument_types(launch(unit.kernel))  # draws the launch's inputs (megabytes): once per kernel
            o3 = device_baseline(unit.options).pipeline
            roles = {"-O3": o3, "search": search_list.get(unit.uri)}  # None: the search kept -O3
            if unit.kernel in longer:
                roles["long search"] = longer[unit.kernel]
            # -O3 with each unroll count: what the time objective builds beside the lists
            unrolled = [o3 + FLAGS_SEPARATOR + " ".join(unroll_flags(n)) for n in TIME_UNROLL_COUNTS]
            chosen = [o3, *labels.pool, *model.lists, *(p for p in roles.values() if p), *unrolled, *candidates]
            pipelines = list(dict.fromkeys(chosen))
            builds: dict[str, int | None] = {}
            variants: list[dict[str, Any]] = []
            by_digest: dict[str, int] = {}
            count = _executed_counter(toolchain, runner, unit)
            for pipeline in pipelines:
                try:
                    built = _build(toolchain, unit, pipeline)
                except StitchoptError as exc:
                    if pipeline == o3:  # o3 is pipelines[0]: nothing is built before this stops
                        reason = exception_line(exc)
                        raise SystemExit(
                            f"{unit.uri}: clang's -O3 device pipeline does not build it: {reason}"
                        ) from exc
                    builds[pipeline] = None
                    continue
                if ptx_parameter_types(built.ptx, unit.kernel) != expected:
                    raise SystemExit(f"{unit.uri}: its launch passes {expected}, the PTX takes other parameters")
                digest = hashlib.sha256(built.cubin).hexdigest()
                if digest not in by_digest:
                    by_digest[digest] = len(variants)
                    name = f"{len(entries)}-{len(variants)}.cubin"
                    (output / name).write_bytes(built.cubin)
                    kernel = built.kernels[unit.kernel]
                    measures = {**asdict(Measure.of(kernel)), "loops": asdict(kernel.loops), "executed": count(built)}
                    variants.append({"cubin": name, **measures})
                builds[pipeline] = by_digest[digest]
            order = model.order(kernel_features(toolchain, unit.module, model.features))
            entries.append(
                {
                    "uri": unit.uri,
                    "kernel": unit.kernel,
                    "family": unit.family,
                    "split": unit.split,
                    "roles": roles,
                    "pool": labels.pool,
                    "candidates": candidates,
                    "order": [p or o3 for p in order],
                    "builds": builds,
                    "variants": variants,
                }
            )
            print(f"prepared {unit.uri}: {len(variants)} distinct builds of {len(pipelines)} lists", file=sys.stderr)
    finally:
        runner.close()
    manifest = {"arch": DEFAULT_ARCH, "ptxas": cuda.version, "model": model.trained_on, "kernels": entries}
    (output / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


def _build(toolchain: Any, unit: Any, pipeline: str) -> Any:
    """One device build of a labelled kernel; a candidate line may add opt flags after FLAGS_SEPARATOR."""
    from stitchopt.toolchain.device import build_device

    text, _, flags = pipeline.partition(FLAGS_SEPARATOR)
    options = replace(unit.options, opt_flags=(*unit.options.opt_flags, *flags.split()))
    return build_device(toolchain, unit.module.bitcode, text, options)


def _executed_counter(toolchain: Any, runner: Any, unit: Any) -> Any:
    """A function of a kernel's build: the instructions it executes on the CPU with the kernel's timing launch
    (its sampled blocks), as `gpu optimize --objective time --launch` counts them; None where the run fails or
    writes other outputs than the first build counted (-O3's, which `prepare` and `add_measures` build first)."""
    from stitchopt.errors import StitchoptError
    from stitchopt.studies.kernel_emulation import emulated_launch
    from stitchopt.toolchain.device import codegen_ir
    from stitchopt.validate.device_run import executed_instructions, sampled_blocks

    emulated = emulated_launch(launch(unit.kernel))
    blocks = sampled_blocks(emulated.grid)
    reference: list[Any] = []  # the first build's run

    def count(built: Any) -> int | None:
        try:
            ir = codegen_ir(toolchain, built.optimized, unit.options)
            outcome = runner.run(ir.encode(), unit.kernel, emulated, blocks, counted=True)
        except StitchoptError as exc:
            print(f"{unit.uri}: not counted: {exc}", file=sys.stderr)
            return None
        if not reference:
            reference.append(outcome)
        return executed_instructions(outcome) if outcome.behaves_like(reference[0]) else None

    return count


def add_measures(timing: Path, labels_directory: Path, output: Path, measure: str) -> int:
    """A timing document whose manifest's variants also carry `measure`: "loops" (their kernels' loop shapes, what
    the time objective compares without launches) or "executed" (the instructions executed on the CPU with the
    kernel's launch, what it compares with them), from each variant rebuilt here by the first list the manifest
    names for it; a rebuild whose ptxas measures differ from the manifest's stops this (another LLVM or ptxas
    would not build those cubins)."""
    from stitchopt.labels.device import labelled_kernels
    from stitchopt.toolchain.cuda import find_cuda
    from stitchopt.toolchain.discovery import find_toolchain
    from stitchopt.tune.device import Measure
    from stitchopt.validate.device_run import DeviceRunner

    document = _read_document(timing)
    toolchain, cuda = find_toolchain(), find_cuda()
    _, units = labelled_kernels(toolchain, cuda, labels_directory)
    unit_of = {unit.uri: unit for unit in units}
    runner = DeviceRunner(toolchain)
    try:
        for entry in document["manifest"]["kernels"]:
            unit = unit_of[entry["uri"]]
            count = _executed_counter(toolchain, runner, unit) if measure == "executed" else None
            first: dict[int, str] = {}
            for pipeline, v in entry["builds"].items():
                if v is not None:
                    first.setdefault(v, pipeline)
            for v, variant in enumerate(entry["variants"]):  # variant 0 is -O3's
                built = _build(toolchain, unit, first[v])
                kernel = built.kernels[unit.kernel]
                measured = asdict(Measure.of(kernel))
                if any(variant[what] != measured[what] for what in measured):
                    raise SystemExit(f"{entry['uri']}: {first[v]} builds {measured} here, the record has {variant}")
                variant[measure] = count(built) if count else asdict(kernel.loops)
            print(f"{entry['uri']}: {len(entry['variants'])} builds", file=sys.stderr)
    finally:
        runner.close()
    output.write_bytes(gzip.compress(json.dumps(document).encode(), mtime=0))
    return 0


def _read_document(timing: Path) -> Any:
    raw = timing.read_bytes()
    return json.loads(gzip.decompress(raw) if timing.suffix == ".gz" else raw)


def _gpu() -> tuple[Any, str | None]:
    """CuPy and a device, or None and why not."""
    try:
        import cupy
    except ImportError as exc:
        return None, f"no CuPy here ({exc}): run this on the GPU machine"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return None, "CuPy sees no CUDA device"
    except Exception as exc:  # noqa: BLE001 (any driver error means: no usable GPU here)
        return None, f"no usable CUDA device: {exc}"
    return cupy, None


def _device_arguments(cupy: Any, prepared: Launch) -> tuple[list[Any], list[Any]]:
    arguments, outputs = [], []
    for argument in prepared.arguments:
        if isinstance(argument, Buffer):
            array = cupy.asarray(argument.data)
            arguments.append(array)
            if argument.output:
                outputs.append(array)
        else:
            arguments.append(argument)
    return arguments, outputs


def _timed_rounds(cupy: Any, functions: list[Any], prepared: Launch, rounds: int) -> list[list[float]]:
    """Each function's launch times (ms) over `rounds` interleaved rounds after 3 warm-up ones. Before every
    launch the written buffers get their initial contents back (outside the timed events), so that kernels that
    work in place (a sort step, a BFS level) time the same work each time."""
    arguments, written = _device_arguments(cupy, prepared)
    initial = [array.copy() for array in written]
    times: list[list[float]] = [[] for _ in functions]
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for round_ in range(3 + rounds):
        for j, function in enumerate(functions):
            for array, first in zip(written, initial, strict=True):
                array[...] = first
            start.record()
            function(prepared.grid, prepared.block, tuple(arguments), shared_mem=prepared.shared_bytes)
            end.record()
            end.synchronize()
            if round_ >= 3:
                times[j].append(cupy.cuda.get_elapsed_time(start, end))
    return times


def time_kernel(directory: Path, index: int, repeats: int, vendor: str | None) -> dict[str, Any]:
    """One kernel's builds on the GPU: outputs against -O3's, interleaved timed rounds, and the fastest build
    with -O3's outputs timed again beside -O3 in rounds of their own, so that the pick of the fastest of many
    noisy medians is checked on fresh measurements."""
    cupy, reason = _gpu()
    if cupy is None:
        raise SystemExit(reason)
    entry = json.loads((directory / MANIFEST).read_text())["kernels"][index]
    kernel = entry["kernel"]
    cubins = [v["cubin"] for v in entry["variants"]] + ([vendor] if vendor else [])
    functions = [cupy.RawModule(path=str(directory / cubin)).get_function(kernel) for cubin in cubins]
    reference = o3_build(entry)
    outputs = []
    prepared = launch(kernel)  # drawn once; each build's launch gets fresh device copies of the same inputs
    for function in functions:  # one launch each: the outputs compared
        arguments, written = _device_arguments(cupy, prepared)
        function(prepared.grid, prepared.block, tuple(arguments), shared_mem=prepared.shared_bytes)
        cupy.cuda.Device().synchronize()
        outputs.append([cupy.asnumpy(array) for array in written])
    identical = [all(np.array_equal(a, b) for a, b in zip(outputs[reference], mine, strict=True)) for mine in outputs]
    times = _timed_rounds(cupy, functions, prepared, repeats)
    medians = [statistics.median(values) for values in times]
    result: dict[str, Any] = {"uri": entry["uri"]}
    if vendor:  # timed with the builds, reported apart: no way of choosing a list can make it
        result["vendor"] = {"identical_outputs": identical.pop(), "median_ms": medians.pop()}
        times.pop()
    fastest = min((v for v in range(len(medians)) if identical[v]), key=medians.__getitem__)
    again = _timed_rounds(cupy, [functions[reference], functions[fastest]], prepared, repeats)
    return result | {
        "identical_outputs": identical,
        "median_ms": medians,
        "spread_ms": [[min(values), max(values)] for values in times],
        "fastest_again": {"build": fastest, "o3_ms": statistics.median(again[0]), "ms": statistics.median(again[1])},
    }


def _last_line(stderr: str) -> str:
    """What a failed step said last: its error, on one line."""
    return (stderr.strip().splitlines() or ["no message"])[-1]


def _project_kernel(uri: str) -> bool:
    return uri.startswith(PROJECT_KERNELS) and not uri.startswith(PROJECT_KERNELS + "omp/")


def vendor_builds(directory: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """nvcc's own build (`-cubin -O3`) of each of the project's kernel files the manifest times, into `directory`:
    the vendor compiler beside clang's -O3. Empty when there is no nvcc."""
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc is None:
        print("--nvcc: no nvcc on PATH or in /usr/local/cuda/bin: nvcc's builds are not timed", file=sys.stderr)
        return {}
    version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    built, failed = {}, {}
    for family in sorted({e["family"] for e in manifest["kernels"] if _project_kernel(e["uri"])}):
        cubin = f"nvcc-{family}.cubin"
        command = [nvcc, "-cubin", f"-arch={manifest['arch']}", "-O3", "-o", str(directory / cubin)]
        done = subprocess.run([*command, str(PROJECT_SOURCES / f"{family}.cu")], capture_output=True, text=True)
        if done.returncode == 0:
            built[family] = cubin
        else:
            failed[family] = _last_line(done.stderr)
    return {"nvcc": version, "cubins": built, "failed": failed}


def run(directory: Path, output: Path, repeats: int, seconds: float, nvcc: bool) -> int:
    manifest = json.loads((directory / MANIFEST).read_text())
    document: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "manifest": manifest}
    cupy, reason = _gpu()
    if cupy is None:
        document |= {"gpu": None, "reason": reason, "kernels": []}
        output.write_text(json.dumps(document, indent=1) + "\n")
        print(f"no timing: {reason}", file=sys.stderr)
        return 0
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    document["gpu"] = {
        "name": properties["name"].decode() if isinstance(properties["name"], bytes) else properties["name"],
        "sm_clock_khz": properties.get("clockRate"),
        "memory_clock_khz": properties.get("memoryClockRate"),
        "driver": cupy.cuda.runtime.driverGetVersion(),
        "cupy": cupy.__version__,
    }
    if nvcc:
        document["vendor"] = vendor_builds(directory, manifest)
    vendor = document.get("vendor", {}).get("cubins", {})
    began, results, failures = time.monotonic(), [], []
    for index, entry in enumerate(manifest["kernels"]):
        if time.monotonic() - began > seconds:
            document["stopped"] = f"time limit after {len(results)} kernels"
            break
        command = [sys.executable, __file__, "time-kernel", str(directory), str(index), "--repeats", str(repeats)]
        if _project_kernel(entry["uri"]) and entry["family"] in vendor:
            command += ["--vendor", vendor[entry["family"]]]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=KERNEL_SECONDS)
        except subprocess.TimeoutExpired:
            failures.append({"uri": entry["uri"], "error": f"no answer in {KERNEL_SECONDS} s"})
            continue
        if done.returncode != 0:
            failures.append({"uri": entry["uri"], "error": _last_line(done.stderr)})
            continue
        results.append(json.loads(done.stdout))
        print(f"{entry['uri']}: {results[-1]['median_ms']}", file=sys.stderr)
        output.write_text(json.dumps(document | {"kernels": results, "failed": failures}, indent=1) + "\n")
    document |= {"kernels": results, "failed": failures}
    output.write_text(json.dumps(document, indent=1) + "\n")
    if failures and not results:
        print(f"no kernel was timed: {failures[0]['uri']}: {failures[0]['error']}", file=sys.stderr)
        return 1
    return 0


def _change(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f}%"


def report(timing: Path, output: Path | None, margin: float) -> int:
    """Markdown tables: each method per split (geomean time and SASS against -O3, kernels faster and slower by more
    than the noise, builds rejected for their outputs), each kernel (time / SASS change per method), where the
    builds carry loop shapes how the time objective's signs sort them, where they carry executed instructions how
    the counts order pairs of builds that differ in time, each candidate list alone on the train and test kernels,
    and nvcc's builds where they were timed."""
    from stitchopt.reports.tables import Rows, to_markdown  # here, not on the GPU machine (no LLVM-side packages)

    document = _read_document(timing)
    if document["gpu"] is None:
        raise SystemExit(f"{timing}: nothing was timed ({document['reason']})")
    rows = method_rows(document, margin)
    summary = summarize(rows)
    header = ["split", "method", "kernels", "geomean time", "geomean SASS", "faster", "slower", "rejected"]
    table = [
        [
            line["split"], line["method"], str(line["kernels"]), f"{100 * line['geomean_time']:+.2f}%",
            f"{100 * line['geomean_sass']:+.2f}%", str(line["faster"]), str(line["slower"]), str(line["rejected"]),
        ]
        for line in sorted(summary, key=lambda line: line["split"], reverse=True)
    ]  # fmt: skip
    gpu = document["gpu"]
    print(f"Kernel time on {gpu['name']}, run started {document['when']}\n")
    print(to_markdown(Rows("Each method against -O3", header, table)) + "\n")
    per_kernel = []
    for timed, entry in timed_entries(document):
        uri, o3 = timed["uri"], o3_build(entry)
        cells = [
            next((f"{_change(k['time'])} / {_change(k['sass'])}" for k in rows[method] if k["uri"] == uri), "-")
            for method in rows
        ]
        per_kernel.append(
            [entry["split"], entry["family"], f"`{uri.split('#')[1]}`", f"{timed['median_ms'][o3]:.4f}", *cells]
        )
    headers = ["split", "family", "kernel", "-O3 ms", *rows]
    print("Per kernel: time / SASS change against -O3\n")
    print(to_markdown(Rows("Per kernel: time / SASS change against -O3", headers, per_kernel)))
    signs = loop_sign_rows(document)
    if signs:
        print(
            "\nEvery timed build with -O3's outputs but -O3's own, by time against -O3 and whether the time "
            "objective's loop signs refuse it\n"
        )
        kinds = [f"{speed} {verdict}" for speed in ("slower", "same", "faster") for verdict in ("refused", "kept")]
        sign_table = [[row["split"], *(str(row.get(kind, 0)) for kind in kinds)] for row in signs]
        print(to_markdown(Rows("Loop signs", ["split", *kinds], sign_table)))
    ranks = executed_rank_rows(document)
    if ranks:
        print(
            "\nPairs of one kernel's builds (both with -O3's outputs) whose times differ by more than the noise, by "
            "whether their instructions executed on the CPU order them alike\n"
        )
        kinds = ["alike", "opposite", "tied"]
        rank_table = [[row["split"], *(str(row[kind]) for kind in kinds)] for row in ranks]
        print(to_markdown(Rows("Executed instructions against time", ["split", *kinds], rank_table)))
        print(
            f"\nEvery timed build that executed {margin:.0%} fewer instructions than -O3 on the CPU (no more spills or "
            "stack: what the time objective may keep), by its time against -O3\n"
        )
        speeds = ["faster", "same", "slower"]
        margin_table = [
            [r["split"], *(str(r[speed]) for speed in speeds)] for r in executed_margin_rows(document, margin)
        ]
        print(to_markdown(Rows("Builds the margin keeps", ["split", *speeds], margin_table)))
    alone = [row for row in candidate_rows(document) if row["split"] != "validation"]
    if alone:
        print("\nEach candidate list on every kernel of a split (-O3 where it fails or changes the outputs)\n")
        candidate_table = [
            [
                f"`{row['candidate']}`", row["split"], str(row["kernels"]), f"{100 * row['geomean_time']:+.2f}%",
                str(row["faster"]), str(row["slower"]),
            ]
            for row in sorted(alone, key=lambda row: (row["candidate"], row["split"] != "train"))
        ]  # fmt: skip
        headers = ["candidate", "split", "kernels", "geomean time", "faster", "slower"]
        print(to_markdown(Rows("Candidates alone", headers, candidate_table)))
    against_vendor = vendor_rows(document)
    if against_vendor:
        print(f"\nnvcc's own build ({' '.join(document['vendor']['nvcc'])}) against clang's -O3\n")
        vendor_table = [
            [
                row["split"], f"`{row['uri'].split('#')[1]}`", f"{row['o3_ms']:.4f}", f"{row['nvcc_ms']:.4f}",
                _change(row["nvcc_ms"] / row["o3_ms"]), "yes" if row["identical_outputs"] else "no",
            ]
            for row in against_vendor
        ]  # fmt: skip
        headers = ["split", "kernel", "clang -O3 ms", "nvcc ms", "nvcc against clang -O3", "same outputs"]
        print(to_markdown(Rows("nvcc against clang -O3", headers, vendor_table)))
    if output is not None:
        result = {
            "gpu": gpu,
            "when": document["when"],
            "summary": summary,
            "kernels": rows,
            "loop_signs": signs,
            "executed_ranks": ranks,
            "vendor": against_vendor,
        }
        output.write_text(json.dumps(result, indent=1) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    made = steps.add_parser("prepare", help="build the cubins (needs LLVM and ptxas)")
    made.add_argument("--labels", type=Path, default=Path("data/labels/device"))
    made.add_argument("--splits", default="train,validation,test", help="comma-separated splits of the labels")
    made.add_argument("--candidates", type=Path, default=None, help="more lists to build for every kernel, one a line")
    made.add_argument("--lists", type=Path, default=None, help="benchmarks/gpu_static.py --json output")
    made.add_argument("-o", "--output", type=Path, required=True)
    timed = steps.add_parser("run", help="time the cubins (needs a GPU and CuPy)")
    timed.add_argument("directory", type=Path)
    timed.add_argument("--json", type=Path, required=True)
    timed.add_argument("--repeats", type=int, default=30)
    timed.add_argument("--seconds", type=float, default=420.0, help="start no kernel after this long")
    timed.add_argument("--nvcc", action="store_true", help="also time nvcc's build of the project's kernels")
    one = steps.add_parser("time-kernel", help="(run's own step) time one kernel of the manifest")
    one.add_argument("directory", type=Path)
    one.add_argument("index", type=int)
    one.add_argument("--repeats", type=int, default=30)
    one.add_argument("--vendor", default=None, help="a cubin of the same kernel to time beside the builds")
    for measure, what in (("loops", "loop shapes"), ("executed", "instructions executed on the CPU")):
        added = steps.add_parser(measure, help=f"add the builds' {what} to a document (needs LLVM and ptxas)")
        added.add_argument("timing", type=Path)
        added.add_argument("--labels", type=Path, default=Path("data/labels/device"))
        added.add_argument("-o", "--output", type=Path, required=True)
    reported = steps.add_parser("report", help="each method's time from run's document")
    reported.add_argument("timing", type=Path)
    reported.add_argument("--json", type=Path, default=None)
    reported.add_argument(
        "--margin", type=float, default=TIME_MARGIN, help="the time objective's margin of executed instructions"
    )
    args = parser.parse_args()
    if args.step == "prepare":
        extra = (
            [line.strip() for line in args.candidates.read_text().splitlines() if line.strip()]
            if args.candidates
            else []
        )
        return prepare(args.labels, args.splits.split(","), args.output, args.lists, extra)
    if args.step == "time-kernel":
        print(json.dumps(time_kernel(args.directory, args.index, args.repeats, args.vendor)))
        return 0
    if args.step == "report":
        return report(args.timing, args.json, args.margin)
    if args.step in ("loops", "executed"):
        return add_measures(args.timing, args.labels, args.output, args.step)
    return run(args.directory, args.json, args.repeats, args.seconds, args.nvcc)


if __name__ == "__main__":
    sys.exit(main())
