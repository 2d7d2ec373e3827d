"""Device labels: what pass lists do to GPU kernels, one shard per kernel and stage, so that a label run
survives any stop and other machines recognize finished work.

Two stages, as on the host:
- `search`: per kernel, the device search (`tune/device.py`: local search seeded by clang's printed -O3 device
  pipeline, the minimized best kept only when ptxas reports it no worse than -O3 anywhere);
- `matrix`: a pool of lists measured on every kernel (SASS bytes, registers, spilled bytes, stack), -O3 beside
  them. A model learns from the matrix; the searches give the pool and the reference a model is judged against.

A kernel is a unit of its own (the file's other kernels deleted: `toolchain.device.kernel_unit`), named
`bench://<dataset>/<file>#<kernel>`. Sources: the project's kernels (`bench://kernels-v1`, split by family: the
CUDA files and the OpenMP programs' target regions, `bench://kernels-v1/omp/<family>#__omp_offloading_<function>
_l<line>`, without the file IDs clang puts in their names) and built device datasets (`bench://ggml-cuda-v1`,
split by the source's families).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from stitchopt.core import CompileOptions, IRModule
from stitchopt.datasets.benchmarks import DEVICE_DATASET_NAMES, dataset_benchmarks, interleaved, open_source
from stitchopt.datasets.kernels import (
    FAMILY_SPLITS,
    KERNELS_URI,
    OPENMP_PREFIX,
    kernel_sources,
    offload_sources,
)
from stitchopt.datasets.normalize import normalized_sha256
from stitchopt.datasets.uri import SCHEME
from stitchopt.errors import InputError, StitchoptError, ToolchainError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.labelset import read_gzip_json, write_gzip_json
from stitchopt.passes.catalogue import Catalogue
from stitchopt.toolchain.cuda import OFFLOAD_INSTALL_HINT, CudaToolkit, openmp_offload_bitcode
from stitchopt.toolchain.device import (
    DEFAULT_ARCH,
    build_device,
    cuda_device_ir,
    device_baseline,
    device_options,
    kernel_names,
    kernel_unit,
    openmp_device_ir,
    without_file_ids,
)
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble, load_module, module_from_bitcode
from stitchopt.tune.device import Measure, tune_device
from stitchopt.tune.driver import Budget, TuningRun

FORMAT = 1
SEARCH, MATRIX = "search", "matrix"
SPLIT_ORDER = ("train", "validation", "test")


@dataclass(frozen=True)
class KernelUnit:
    uri: str  # bench://<dataset>/<file>#<kernel>
    family: str  # what the split is by
    split: str
    kernel: str
    module: IRModule  # the kernel alone
    options: CompileOptions
    ir: str  # sha256 of its normalized IR (no file names): the same on every machine and checkout


def kernel_units(
    toolchain: Toolchain,
    cuda: CudaToolkit,
    sources: Sequence[str],
    per_file: int | None = None,
    only: set[str] | None = None,
    jobs: int = 0,
) -> list[KernelUnit]:
    """Every kernel of `sources` (`bench://kernels-v1`, built device datasets), at most `per_file` of a file
    (spread over its kernels in name order: template instantiations of one kernel come in runs); with `only`,
    just the kernels of those URIs (and only their files compiled). Files are compiled and split `jobs` at a time
    (0: a core each; a file is a few tool runs one after another), the units in the files' order."""
    files: list[tuple[str, str, str, Callable[[], bytes]]] = []
    for source in sources:
        if _is_project_kernels(source):
            runtime = _openmp_runtime(toolchain)
            files += [
                (KERNELS_URI + p.stem, p.stem, FAMILY_SPLITS[p.stem], partial(cuda_device_ir, toolchain, cuda, p))
                for p in kernel_sources()
            ]
            files += [
                (
                    KERNELS_URI + OPENMP_PREFIX + p.stem,
                    p.stem,
                    FAMILY_SPLITS[p.stem],
                    partial(openmp_device_ir, toolchain, cuda, p, runtime=runtime),
                )
                for p in offload_sources()
            ]
        else:
            files += [
                (b.uri, b.package, b.split, partial(_bitcode, toolchain, b.path))
                for b in dataset_benchmarks(require_device_source(source))
            ]

    def units_of(uri: str, family: str, split: str, compiled: Callable[[], bytes]) -> list[KernelUnit]:
        bitcode = compiled()
        text = disassemble(toolchain, bitcode, uri)
        options = device_options(text, cuda, uri)
        units = []
        for kernel in _spread(kernel_names(text), per_file):
            name = f"{uri}#{without_file_ids(kernel)}"
            if only is None or name in only:
                unit = kernel_unit(toolchain, bitcode, kernel, text)
                module = module_from_bitcode(toolchain, unit, name)
                units.append(
                    KernelUnit(name, family, split, kernel, module, options, normalized_sha256(toolchain, unit))
                )
        return units

    if only is not None:  # no file compiled for nothing
        wanted = {name.split("#", 1)[0] for name in only}
        files = [file for file in files if file[0] in wanted]
    threads = ThreadPoolExecutor(jobs or os.cpu_count() or 1)
    try:
        return [unit for units in threads.map(lambda file: units_of(*file), files) for unit in units]
    finally:  # an error or an interrupt stops here: files not yet started are not compiled
        threads.shutdown(wait=True, cancel_futures=True)


def require_device_source(source: str) -> str:
    """`source` if device labels can take it (`bench://kernels-v1`, a device dataset); else InputError saying
    what they take (a host dataset or an unknown name)."""
    if _is_project_kernels(source):
        return source
    if source.removeprefix(SCHEME).rstrip("/").rpartition("-v")[0] not in DEVICE_DATASET_NAMES:
        datasets = ", ".join(f"{SCHEME}{name}-v{open_source(name).version}" for name in DEVICE_DATASET_NAMES)
        raise InputError(
            f"{source} is not a device dataset: device labels take {KERNELS_URI} and built device datasets ({datasets})"
        )
    return source


def _is_project_kernels(source: str) -> bool:
    return source.rstrip("/") + "/" == KERNELS_URI


def _bitcode(toolchain: Toolchain, path: Path) -> bytes:
    return load_module(toolchain, path).bitcode


def _openmp_runtime(toolchain: Toolchain) -> Path:
    """The OpenMP device runtime the project's target regions are built with, as a program's build links it in:
    required, so that a region's IR, and the shards it names, are the same on every machine."""
    library = openmp_offload_bitcode(toolchain, DEFAULT_ARCH)
    if library is None:
        raise ToolchainError(
            f"the OpenMP programs' target regions are labelled with LLVM's OpenMP device runtime "
            f"(libomptarget-nvptx-{DEFAULT_ARCH}.bc): {OFFLOAD_INSTALL_HINT}"
        )
    return library


def _spread(kernels: list[str], limit: int | None) -> list[str]:
    if limit is None or len(kernels) <= limit:
        return kernels
    return [kernels[i * len(kernels) // limit] for i in range(limit)]


def measure(toolchain: Toolchain, unit: KernelUnit, pipeline: str) -> Measure | None:
    """The kernel built with `pipeline`; None when the list cannot build it."""
    try:
        return Measure.of(build_device(toolchain, unit.module.bitcode, pipeline, unit.options).kernels[unit.kernel])
    except StitchoptError:
        return None


def shard_path(directory: Path, stage: str, unit: KernelUnit, identity: dict[str, Any]) -> Path:
    """Named by what decides its content: the stage, the kernel's URI and IR, the toolchain and the settings."""
    key = {"stage": stage, "uri": unit.uri, "ir": unit.ir, **identity}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return directory / stage / f"{unit.uri.split('/')[-1].split('#')[0]}-{digest}.json.gz"


def read_shards(directory: Path, stage: str) -> list[dict[str, Any]]:
    """A stage's shards; one that does not parse is named and skipped."""
    found = (_read_or_warn(path) for path in sorted((directory / stage).glob("*.json.gz")))
    return [document for document in found if document is not None]


def search_kernel(
    evaluator: Evaluator,
    catalogue: Catalogue,
    start: str,
    unit: KernelUnit,
    budget: int,
    seed: int,
    stop: threading.Event | None = None,
    *,
    minimize: bool = True,
) -> dict[str, Any]:
    """One kernel's search as a shard's document; once `stop` is set, StageStopped after the batch it is at."""

    def stopped(run: TuningRun) -> None:
        if stop is not None and stop.is_set():
            raise StageStopped(unit.uri)

    baseline = device_baseline(unit.options)
    result = tune_device(
        evaluator,
        unit.module,
        catalogue,
        baseline,
        start,
        seed=seed,
        budget=Budget(budget),
        minimize_best=minimize,
        on_progress=stopped,
    )
    o3 = Measure.of(result.reference.kernels[unit.kernel])
    best = Measure.of(result.answer.kernels[unit.kernel]) if result.passes else None
    return {
        "uri": unit.uri,
        "family": unit.family,
        "split": unit.split,
        "o3": asdict(o3),
        "pipeline": result.pipeline if result.passes else None,
        "best": asdict(best) if best else None,
        "rejected": result.rejected,
        "evaluations": result.run.evaluations,
        "seconds": result.run.seconds,
    }


Stored = dict[str, int] | None  # a Measure as a shard stores it (None: the list cannot build the kernel)


def matrix_row(
    toolchain: Toolchain, unit: KernelUnit, pool: Sequence[str], jobs: int, known: Mapping[str, Stored] | None = None
) -> dict[str, Any]:
    """The pool measured on one kernel as a shard's document; lists in `known` (by pipeline, -O3's too: what
    earlier pools measured, `earlier_measures`) are not built again."""
    reference = device_baseline(unit.options).pipeline
    known = known or {}
    wanted = [p for p in dict.fromkeys([reference, *pool]) if p not in known]
    with ThreadPoolExecutor(max(1, jobs)) as threads:
        fresh = dict(zip(wanted, threads.map(lambda p: _stored(measure(toolchain, unit, p)), wanted), strict=True))
    measured = {**known, **fresh}
    if measured[reference] is None:
        raise StitchoptError(f"{unit.uri}: clang's -O3 device pipeline cannot build it")
    return {
        "uri": unit.uri,
        "family": unit.family,
        "split": unit.split,
        "o3": measured[reference],
        "lists": [measured[p] for p in pool],
    }


def _stored(found: Measure | None) -> Stored:
    return asdict(found) if found else None


def earlier_pools(directory: Path, versions: Mapping[str, str]) -> list[tuple[list[str], dict[str, Any]]]:
    """Every pool of `directory` measured with these tools (`versions`: LLVM's and ptxas's), with the identity
    its matrix rows are named by."""
    found = []
    for path in sorted(directory.glob("pool-*.json.gz")):
        document = _read_or_warn(path)
        identity, pool = (document.get("identity"), document.get("pool")) if document else (None, None)
        if not isinstance(identity, dict) or not isinstance(pool, list):
            continue
        if all(identity.get(name) == value for name, value in versions.items()):
            found.append((pool, matrix_identity(identity, pool)))
    return found


def earlier_measures(
    directory: Path, unit: KernelUnit, pools: Sequence[tuple[list[str], dict[str, Any]]]
) -> dict[str, Stored]:
    """What the matrix rows of `pools` (`earlier_pools`) measured on `unit`, by pipeline, -O3's under its own:
    a measure depends only on the kernel, the list and the tools, so a grown pool builds only its new lists."""
    known: dict[str, Stored] = {}
    for pool, identity in pools:
        path = shard_path(directory, MATRIX, unit, identity)
        try:  # quietly: a broken row is built again, and the stage that finds it broken has said so
            row = read_gzip_json(path, "cannot read this shard") if path.exists() else None
        except InputError:
            row = None
        if row is not None:
            known.update(zip(pool, row["lists"], strict=True))
            known[device_baseline(unit.options).pipeline] = row["o3"]
    return known


class StageStopped(Exception):
    """A label given up because its stage stopped: interrupted, or another kernel's label failed."""


def run_stage(
    units: Sequence[KernelUnit],
    directory: Path,
    stage: str,
    identity: dict[str, Any],
    label: Callable[[KernelUnit, threading.Event], dict[str, Any]],
    on_shard: Callable[[Path], None] | None = None,
    on_skip: Callable[[KernelUnit, str], None] | None = None,
    jobs: int = 1,
) -> int:
    """Label every unit that has no shard yet (resuming is running it again), `jobs` units at a time, each shard
    written as its unit finishes; returns how many were labelled. A unit that cannot be labelled is reported to
    `on_skip` and left for the next run. Interrupted (or a label failing otherwise), the event passed to `label` is
    set, the labels running stop at their next step (raising StageStopped), and what finished is written."""
    wanted = []
    for unit in units:
        path = shard_path(directory, stage, unit, identity)
        if not (path.exists() and _read_or_warn(path) is not None):  # a broken shard is labelled again
            wanted.append((unit, path))
    stop, handled = threading.Event(), set()

    def keep(future: Future[dict[str, Any]]) -> int:
        handled.add(future)
        unit, path = futures[future]
        try:
            document = future.result()
        except StitchoptError as exc:
            if on_skip is not None:
                on_skip(unit, str(exc))
            return 0
        write_gzip_json(path, {"format": FORMAT, **document, "identity": identity})
        if on_shard is not None:
            on_shard(path)
        return 1

    with ThreadPoolExecutor(max(1, jobs)) as threads:
        futures = {threads.submit(label, unit, stop): (unit, path) for unit, path in wanted}
        try:
            return sum(keep(future) for future in as_completed(futures))
        except BaseException:
            stop.set()
            for future in futures:
                future.cancel()
            wait(futures)
            for future in futures:
                if future not in handled and not future.cancelled() and future.exception() is None:
                    keep(future)
            raise


def train_first(units: Sequence[KernelUnit]) -> list[KernelUnit]:
    """Train kernels first, then validation, then test; in each, families interleaved (first of each, then
    second of each...): a partial run is already a pool from many families."""
    family: Callable[[KernelUnit], str] = lambda unit: unit.family  # noqa: E731
    return [unit for split in SPLIT_ORDER for unit in interleaved([u for u in units if u.split == split], family)]


def pool_of(searches: Mapping[str, dict[str, Any]], train: set[str], size: int) -> list[str]:
    """The kept bests of the searches (by kernel URI) of the kernels `train` (the train split as it is now,
    whatever a shard recorded), the most often found first (ties: the pipeline's text), at most `size`: the lists
    every kernel is then measured with."""
    counts: dict[str, int] = {}
    for uri, document in searches.items():
        if uri in train and document["pipeline"] is not None:
            counts[document["pipeline"]] = counts.get(document["pipeline"], 0) + 1
    return sorted(counts, key=lambda p: (-counts[p], p))[:size]


def matrix_identity(search_identity: Mapping[str, Any], pool: Sequence[str]) -> dict[str, Any]:
    """What decides a matrix row beside its kernel: the tools' versions and the pool."""
    digest = hashlib.sha256("\n".join(pool).encode()).hexdigest()[:16]
    return {"llvm": search_identity["llvm"], "ptxas": search_identity["ptxas"], "pool": digest}


def current_shards(
    directory: Path, stage: str, units: Sequence[KernelUnit], identity: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """The stage's shards of `units` as they are now (their IR) under `identity`, by kernel URI; a shard that
    does not parse is named and left out."""
    found = {}
    for unit in units:
        path = shard_path(directory, stage, unit, dict(identity))
        document = _read_or_warn(path) if path.exists() else None
        if document is not None:
            found[unit.uri] = document
    return found


@dataclass(frozen=True)
class DeviceLabelling:
    searched: int  # kernels searched by this call
    measured: int  # kernels measured with the pool by this call
    pool: list[str]
    unsearched_train: int  # train kernels without a search (skipped): a rerun that searches them changes the pool


def label_kernels(
    evaluator: Evaluator,
    cuda: CudaToolkit,
    catalogue: Catalogue,
    start: str,
    units: Sequence[KernelUnit],
    directory: Path,
    *,
    budget: int,
    seed: int,
    pool_size: int,
    minimize: bool = True,
    on_shard: Callable[[Path], None] | None = None,
    on_skip: Callable[[KernelUnit, str], None] | None = None,
) -> DeviceLabelling:
    """Both stages for `units`: every kernel searched (train first, families interleaved), then the pool of the
    train kernels' kept bests measured on every kernel. A rerun resumes; a changed pool builds only the lists no
    earlier pool measured. `minimize=False` keeps each search's best as found: most of a search's builds are its
    minimization (clang's printed pipeline has dozens of passes to drop one at a time), so this labels several
    times faster, with longer lists; the identity says so, and minimized shards keep their names."""
    toolchain = evaluator.toolchain
    versions = {"llvm": toolchain.version_string, "ptxas": cuda.version}
    search_identity = {**versions, "catalogue": catalogue.identity, "budget": budget, "seed": seed}
    if not minimize:
        search_identity["minimized"] = False
    ordered = train_first(units)
    searched = run_stage(
        ordered,
        directory,
        SEARCH,
        search_identity,
        lambda unit, stop: search_kernel(evaluator, catalogue, start, unit, budget, seed, stop, minimize=minimize),
        on_shard,
        on_skip,
        jobs=evaluator.jobs,  # a search is mostly one build after another: kernels side by side fill the cores
    )
    train = {unit.uri for unit in units if unit.split == "train"}
    searches = current_shards(directory, SEARCH, units, search_identity)
    pool = pool_of(searches, train, pool_size)
    identity = matrix_identity(search_identity, pool)
    pool_file = directory / f"pool-{identity['pool']}.json.gz"
    if not pool_file.exists():
        write_gzip_json(pool_file, {"format": FORMAT, "pool": pool, "size": pool_size, "identity": search_identity})
        if on_shard is not None:
            on_shard(pool_file)
    earlier = earlier_pools(directory, versions)
    measured = run_stage(
        ordered,
        directory,
        MATRIX,
        identity,
        lambda unit, _: matrix_row(toolchain, unit, pool, evaluator.jobs, earlier_measures(directory, unit, earlier)),
        on_shard,
        on_skip,
    )
    return DeviceLabelling(searched, measured, pool, len(train - set(searches)))


@dataclass(frozen=True)
class DeviceLabels:
    """The matrix of one pool, each kernel's search beside it; families and splits as the dataset has them now."""

    uris: list[str]
    families: list[str]
    splits: list[str]
    o3: list[dict[str, int]]  # a Measure as stored
    lists: list[list[dict[str, int] | None]]  # per kernel, per pool list (None: the list cannot build it)
    searched: list[dict[str, int] | None]  # the kernel's own search's kept best (None: -O3 stayed)
    evaluations: list[int]  # what that search cost
    pool: list[str]

    def rows(self, splits: Sequence[str]) -> list[int]:
        return [i for i, split in enumerate(self.splits) if split in splits]


def labelled_kernels(toolchain: Toolchain, cuda: CudaToolkit, directory: Path) -> tuple[DeviceLabels, list[KernelUnit]]:
    """A label directory as a model learns from it: the labels (`load_device_labels`) of the kernels its matrix
    rows measured, and those kernels' units as the datasets have them now."""
    uris = {row["uri"] for row in read_shards(directory, MATRIX)}
    sources = sorted({SCHEME + uri.removeprefix(SCHEME).split("/", 1)[0] for uri in uris})
    units = kernel_units(toolchain, cuda, sources, only=uris)
    return load_device_labels(directory, units), units


def load_device_labels(directory: Path, units: Sequence[KernelUnit]) -> DeviceLabels:
    """The pool matrix of `units` as the dataset has them now: of the pools in `directory` that the current train
    kernels' searches make (a pool from other searches, e.g. before a family moved out of train, is not one), the
    one with the most rows; kernels with a row and a search, families and splits as they are now. Warns when some
    of `units` are left out; InputError when no pool fits."""
    train = {unit.uri for unit in units if unit.split == "train"}
    chosen: tuple[list[str], dict[str, dict[str, Any]], dict[str, dict[str, Any]]] | None = None
    for path in sorted(directory.glob("pool-*.json.gz")):
        document = _read_or_warn(path)
        if document is None:
            continue
        identity, pool = document.get("identity"), document.get("pool")
        if not isinstance(identity, dict) or not isinstance(pool, list):
            warnings.warn(f"{path}: not a pool file (no identity or pool); skipped", stacklevel=2)
            continue
        searches = current_shards(directory, SEARCH, units, identity)
        if pool_of(searches, train, int(document.get("size", len(pool)))) != pool:
            continue
        rows = current_shards(directory, MATRIX, units, matrix_identity(identity, pool))
        if chosen is None or len(rows) > len(chosen[2]):
            chosen = (pool, searches, rows)
    if chosen is None:
        raise InputError(
            f"{directory}: no pool matrix fits these kernels as they are now; "
            f"run `stitchopt gpu labels ... -o {directory}` (it resumes what still fits)"
        )
    pool, searches, rows = chosen
    uris = sorted(uri for uri in rows if uri in searches)
    if len(uris) < len(units):
        warnings.warn(
            f"{directory}: {len(units) - len(uris)} of {len(units)} kernels have no search and row", stacklevel=2
        )
    current = {unit.uri: unit for unit in units}
    return DeviceLabels(
        uris,
        [current[uri].family for uri in uris],
        [current[uri].split for uri in uris],
        [rows[uri]["o3"] for uri in uris],
        [rows[uri]["lists"] for uri in uris],
        [searches[uri]["best"] for uri in uris],
        [searches[uri]["evaluations"] for uri in uris],
        pool,
    )


def _read_or_warn(path: Path) -> dict[str, Any] | None:
    """A shard or pool file; None (and a warning naming it) when it does not parse."""
    try:
        return read_gzip_json(path, "cannot read this shard")
    except InputError as exc:
        warnings.warn(f"{exc}; skipped", stacklevel=2)
        return None
