"""Label shards: what per-program searches found, stored as small files that accumulate across machines.

A label directory holds `searches/*.json.gz` (each unit's search: every evaluated list with its object size, the
successive bests and the minimized best) and `matrix-<pool id>/*.json.gz` (a pool of lists measured on every
unit: `LabelSet` files, the programs x lists matrix that coresets and rankers learn from). Every unit is keyed
by its URI and IR hash, and every shard is stamped with the toolchain, the pass catalogue and the search
settings, so work done once on any machine is recognized and never redone. A shard's name is a hash of its
keys: two machines that did the same work write the same file, never a near-copy.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR, Benchmark
from stitchopt.datasets.manifest import file_sha256
from stitchopt.errors import InputError
from stitchopt.labels.labelset import LabelSet, read_gzip_json, write_gzip_json
from stitchopt.models.ranker import geomean_change
from stitchopt.passes.pipeline import PassNames

SHARDS_FORMAT = 1
# What a search shard's CPU seconds count. The first shards (no such field) counted wall seconds times the
# evaluator's workers, an upper bound.
CPU_MEASURE = "opt+llc seconds"
SEARCHES_DIR = "searches"
MATRIX_PREFIX = "matrix-"
T = TypeVar("T")


@dataclass(frozen=True)
class SearchSettings:
    """How each unit was searched: part of the key (another budget or seed is other work)."""

    strategy: str = "local"
    budget: int = 200
    seed: int = 0
    minimize: bool = True

    @property
    def identity(self) -> str:
        return f"{self.strategy}-b{self.budget}-s{self.seed}{'-min' if self.minimize else ''}"


@dataclass(frozen=True)
class SearchedUnit:
    """One unit's search. Sizes are object bytes; None marks a list that failed or that the guards distrusted."""

    uri: str
    ir_sha256: str
    package: str
    split: str
    oz_size: int  # 0: -Oz failed, the unit was not searched
    best: PassNames | None  # the minimized best; None when nothing beat -Oz
    best_size: int | None
    bests: tuple[tuple[PassNames, int], ...]  # the search's successive bests, the latest last
    evaluated: tuple[tuple[PassNames, int | None], ...]  # every list the search evaluated, in order
    cpu_seconds: float  # opt + llc seconds of its evaluations (in shards without CPU_MEASURE: wall x workers)

    @property
    def key(self) -> tuple[str, str]:
        return (self.uri, self.ir_sha256)

    @property
    def failed(self) -> bool:
        """-Oz itself failed on the unit: it was not searched (and is not searched again)."""
        return self.oz_size == 0

    @property
    def best_ratio(self) -> float:
        """The minimized best's size over -Oz's (1.0 when nothing beat -Oz)."""
        return self.best_size / self.oz_size if self.best_size else 1.0


@dataclass(frozen=True)
class SearchShard:
    toolchain: str
    catalogue: str
    dataset: str
    settings: SearchSettings
    units: tuple[SearchedUnit, ...]

    @property
    def cpu_seconds(self) -> float:
        return sum(u.cpu_seconds for u in self.units)

    @property
    def name(self) -> str:
        """`<settings>-<hash of the stamps and unit keys>.json.gz`: the same work gives the same name."""
        keys = sorted(f"{uri}\0{sha}" for uri, sha in (u.key for u in self.units))
        digest = hashlib.sha256("\n".join([self.toolchain, self.catalogue, self.settings.identity, *keys]).encode())
        return f"{self.settings.identity}-{digest.hexdigest()[:16]}.json.gz"

    def save(self, directory: Path) -> Path:
        """Written to a temporary name and renamed: a shard file is whole or absent."""
        vocabulary = sorted({name for u in self.units for passes in _lists_of(u) for name in passes})
        index = {name: i for i, name in enumerate(vocabulary)}

        def encode(passes: PassNames | None) -> str | None:
            return None if passes is None else " ".join(str(index[name]) for name in passes)

        data = {
            "format": SHARDS_FORMAT,
            "kind": "searches",
            "toolchain": self.toolchain,
            "catalogue": self.catalogue,
            "dataset": self.dataset,
            "settings": asdict(self.settings),
            "cpu_seconds": round(self.cpu_seconds, 2),
            "cpu_measure": CPU_MEASURE,
            "passes": vocabulary,
            "units": [
                {
                    "uri": u.uri,
                    "ir_sha256": u.ir_sha256,
                    "package": u.package,
                    "split": u.split,
                    "oz_size": u.oz_size,
                    "best": encode(u.best),
                    "best_size": u.best_size,
                    "bests": [[encode(p), size] for p, size in u.bests],
                    "evaluated": [[encode(p), size] for p, size in u.evaluated],
                    "cpu_seconds": round(u.cpu_seconds, 2),
                }
                for u in self.units
            ],
        }
        path = directory / SEARCHES_DIR / self.name
        write_gzip_json(path, data)
        return path

    @classmethod
    def load(cls, path: Path) -> SearchShard:
        try:
            return cls._from_data(_read_shard(path, "searches"))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise InputError(f"{path}: a damaged search shard ({exc!r}); delete it and search again") from exc

    @classmethod
    def _from_data(cls, data: dict[str, Any]) -> SearchShard:
        vocabulary: list[str] = data["passes"]

        def decoded(text: str) -> PassNames:
            return tuple(vocabulary[int(i)] for i in text.split())

        units = tuple(
            SearchedUnit(
                uri=u["uri"],
                ir_sha256=u["ir_sha256"],
                package=u["package"],
                split=u["split"],
                oz_size=u["oz_size"],
                best=None if u["best"] is None else decoded(u["best"]),
                best_size=u["best_size"],
                bests=tuple((decoded(p), size) for p, size in u["bests"]),
                evaluated=tuple((decoded(p), size) for p, size in u["evaluated"]),
                cpu_seconds=u["cpu_seconds"],
            )
            for u in data["units"]
        )
        settings = SearchSettings(**data["settings"])
        return cls(data["toolchain"], data["catalogue"], data["dataset"], settings, units)


def _lists_of(unit: SearchedUnit) -> Iterable[PassNames]:
    yield from (p for p, _ in unit.bests)
    yield from (p for p, _ in unit.evaluated)
    if unit.best is not None:
        yield unit.best


def load_searches(
    directory: Path, toolchain: str | None = None, catalogue: str | None = None, settings: SearchSettings | None = None
) -> list[SearchedUnit]:
    """Every searched unit of a label directory, once per key, from the shards matching the given stamps."""
    units: dict[tuple[str, str], SearchedUnit] = {}
    for path in sorted((directory / SEARCHES_DIR).glob("*.json.gz")):
        shard = readable_shard(SearchShard.load, path)
        if shard is None:
            continue
        if toolchain is not None and shard.toolchain != toolchain:
            continue
        if catalogue is not None and shard.catalogue != catalogue:
            continue
        if settings is not None and shard.settings != settings:
            continue
        for unit in shard.units:
            units.setdefault(unit.key, unit)
    return list(units.values())


def searched_dataset(directory: Path) -> str:
    """The dataset a label directory's searches came from (its first readable shard's)."""
    shards = (readable_shard(SearchShard.load, path) for path in sorted((directory / SEARCHES_DIR).glob("*.json.gz")))
    found = next((shard for shard in shards if shard is not None), None)
    if found is None:
        raise InputError(f"{directory}: no search shards: run `stitchopt labels search` first")
    return found.dataset


def pool_identity(lists: Sequence[PassNames]) -> str:
    """A short hash of a pool of lists, naming the matrix directory measured with it."""
    return hashlib.sha256("\n".join(",".join(p) for p in lists).encode()).hexdigest()[:12]


def matrix_directory(directory: Path, lists: Sequence[PassNames]) -> Path:
    return directory / f"{MATRIX_PREFIX}{pool_identity(lists)}"


def matrix_directories(directory: Path) -> list[Path]:
    """The pools' matrix directories (`matrix-<pool>`) of a label directory, in name order."""
    return sorted(p for p in directory.glob(f"{MATRIX_PREFIX}*") if p.is_dir())


def matrix_shards(pool: Path) -> list[LabelSet]:
    """The `LabelSet` shards of one pool's matrix directory (none when it does not exist yet)."""
    shards = (readable_shard(LabelSet.load, path) for path in sorted(pool.glob("*.json.gz")))
    return [shard for shard in shards if shard is not None]


def readable_shard(load: Callable[[Path], T], path: Path) -> T | None:
    """A shard, or None with a warning naming its file when it cannot be read (cut short by a kill, edited by
    hand): one bad file costs its own units, never the directory's."""
    try:
        return load(path)
    except (InputError, KeyError, TypeError, ValueError) as error:  # unreadable, or fields missing or mistyped
        warnings.warn(
            f"{path}: skipped, not a readable label shard ({error}); delete it to search its units again", stacklevel=3
        )
        return None


def save_matrix_shard(directory: Path, labels: LabelSet) -> Path:
    """One `LabelSet` shard of a pool's matrix, named by a hash of its programs' keys."""
    keys = sorted(f"{p.uri}\0{p.ir_sha256}" for p in labels.programs)
    name = hashlib.sha256("\n".join([labels.toolchain, labels.catalogue, *keys]).encode()).hexdigest()[:16]
    target = matrix_directory(directory, labels.lists) / f"{name}.json.gz"
    labels.save(target)
    return target


def load_matrix(path: Path) -> LabelSet:
    """A labels file, a pool's matrix directory (`matrix-<pool>`), or a label directory holding one matrix: its
    shards merged into one `LabelSet` (each program once). A label directory with several matrices (its searches
    grew, or another `--pool`) needs the one meant named."""
    if path.is_file():
        return LabelSet.load(path)
    if not path.is_dir():
        raise InputError(f"{path}: no such labels file or label directory")
    pools = [path] if path.name.startswith(MATRIX_PREFIX) else matrix_directories(path)
    if len(pools) != 1:
        found = ", ".join(p.name for p in pools)
        raise InputError(
            f"{path}: several matrices ({found}): name one, e.g. {pools[-1]}"
            if pools
            else f"{path}: no {MATRIX_PREFIX}<pool> matrix yet: run `stitchopt labels broadcast {path}`"
        )
    shards = matrix_shards(pools[0])
    if not shards:
        raise InputError(f"{pools[0]}: no label shards yet: run `stitchopt labels broadcast`")
    return merge_label_sets(shards)


def merge_label_sets(shards: Sequence[LabelSet]) -> LabelSet:
    """One `LabelSet` from shards of one pool (same toolchain, catalogue and lists); each program once."""
    first = shards[0]
    for shard in shards[1:]:
        if (shard.toolchain, shard.catalogue, shard.lists) != (first.toolchain, first.catalogue, first.lists):
            raise InputError("label shards of different toolchains, catalogues or pools cannot be merged")
    seen: dict[tuple[str, str], Any] = {}
    for shard in shards:
        for program in shard.programs:
            seen.setdefault((program.uri, program.ir_sha256), program)
    cpu = sum(s.cpu_seconds for s in shards)
    return LabelSet(first.toolchain, first.catalogue, first.dataset, first.lists, tuple(seen.values()), cpu)


def _read_shard(path: Path, kind: str) -> dict[str, Any]:
    data = read_gzip_json(path, "not a stitchopt label shard; delete it and run the labels again")
    if data.get("format") != SHARDS_FORMAT or data.get("kind") != kind:
        raise InputError(f"{path}: not a {kind} label shard of format {SHARDS_FORMAT}")
    return data


@dataclass(frozen=True)
class MatrixSummary:
    name: str
    programs: int
    searched: int  # of them units a search covered; the rest were only broadcast (`--unsearched`)
    functions: int  # of them function units
    lists: int
    cpu_hours: float


QueuedUnit = tuple[str, str, str, str, int]  # URI, its IR file's sha256, package, split, functions to search


def benchmark_key(benchmark: Benchmark) -> tuple[str, str]:
    """The `SearchedUnit.key` a dataset's unit has, read without loading it: a built dataset's bitcode file is
    loaded as it is, so its bytes' hash is the searched module's ("" for a missing file: never searched)."""
    return (benchmark.uri, file_sha256(benchmark.path) or "")


@dataclass(frozen=True)
class PackageSummary:
    package: str
    split: str
    modules: int  # searched module units
    functions: int  # searched function units
    queued: int  # units of the dataset selection still to search (`summarize_directory(queue=...)`)
    cpu_hours: float
    geomean_change: float  # of the minimized bests vs -Oz


@dataclass(frozen=True)
class DirectorySummary:
    """What a label directory holds and the CPU hours behind it (`stitchopt labels info`)."""

    directory: str
    searched_units: int
    function_units: int
    failed_units: int  # -Oz failed: recorded, not searched
    packages: int
    evaluations: int
    units_beating_oz: int
    search_geomean_change: float  # of the minimized bests vs -Oz, over the searched units
    search_cpu_hours: float
    matrices: tuple[MatrixSummary, ...]
    packages_detail: tuple[PackageSummary, ...]
    queued_units: int


def summarize_directory(directory: Path, queue: Sequence[QueuedUnit] = ()) -> DirectorySummary:
    """What `directory` holds; `queue`: (URI, IR file sha256, package, split, functions) of every unit a search
    of it is to cover, so that each package's units still to do are counted (functions: at most that many, a unit
    may have fewer)."""

    if not directory.is_dir():
        raise InputError(f"{directory}: no such label directory (make one with `stitchopt labels search -o DIR`)")
    units = load_searches(directory)
    searched = [u for u in units if not u.failed]
    searched_keys = {u.key for u in searched}  # a row of a unit rebuilt since its search is broadcast only
    matrices = []
    for pool in matrix_directories(directory):
        shards = matrix_shards(pool)
        lists = len(shards[0].lists) if shards else 0
        hours = sum(s.cpu_seconds for s in shards) / 3600
        rows = [(p.uri, p.ir_sha256) for s in shards for p in s.programs]
        matrices.append(
            MatrixSummary(
                name=pool.name,
                programs=len(rows),
                searched=sum(key in searched_keys for key in rows),
                functions=sum(FUNCTION_SEPARATOR in uri for uri, _ in rows),
                lists=lists,
                cpu_hours=hours,
            )
        )
    ratios = [u.best_ratio for u in searched]
    details = _per_package(units, queue)
    return DirectorySummary(
        directory=str(directory),
        searched_units=len(searched),
        function_units=sum(FUNCTION_SEPARATOR in u.uri for u in searched),
        failed_units=len(units) - len(searched),
        packages=len({u.package for u in searched}),
        evaluations=sum(len(u.evaluated) for u in searched),
        units_beating_oz=sum(u.best is not None for u in searched),
        search_geomean_change=geomean_change(np.array(ratios)) if ratios else 0.0,
        search_cpu_hours=sum(u.cpu_seconds for u in units) / 3600,
        matrices=tuple(matrices),
        packages_detail=details,
        queued_units=sum(d.queued for d in details),
    )


def _per_package(units: Sequence[SearchedUnit], queue: Sequence[QueuedUnit]) -> tuple[PackageSummary, ...]:
    """Per package: the searched units (those whose -Oz failed count as done, never as searched) and the
    queue's units not in any shard."""
    by_package: dict[str, list[SearchedUnit]] = {}
    searched = [u for u in units if not u.failed]
    for unit in searched:
        by_package.setdefault(unit.package, []).append(unit)
    keys = {u.key for u in units}
    parts: dict[str, int] = {}
    for uri in {u.uri for u in units}:
        if FUNCTION_SEPARATOR in uri:
            module = uri.partition(FUNCTION_SEPARATOR)[0]
            parts[module] = parts.get(module, 0) + 1
    queued: dict[str, int] = {}
    splits = {u.package: u.split for u in units}
    for uri, ir_sha256, package, split, functions in queue:
        # Keyed as the search skips units: one whose IR has changed since (another build) is searched again.
        missing = ((uri, ir_sha256) not in keys) + max(0, functions - parts.get(uri, 0))
        queued[package] = queued.get(package, 0) + missing
        by_package.setdefault(package, [])
        splits.setdefault(package, split)
    rows = []
    for package, units in sorted(by_package.items()):
        functions = sum(FUNCTION_SEPARATOR in u.uri for u in units)
        ratios = [u.best_ratio for u in units]
        rows.append(
            PackageSummary(
                package=package,
                split=splits[package],
                modules=len(units) - functions,
                functions=functions,
                queued=queued.get(package, 0),
                cpu_hours=sum(u.cpu_seconds for u in units) / 3600,
                geomean_change=geomean_change(np.array(ratios)) if ratios else 0.0,
            )
        )
    return tuple(rows)
