"""The label factory's second stage (LLM Compiler's broadcast): the searches' best lists, measured on every unit.

Each unit's own search finds a list that fits it; whether that list also helps other programs is what a
model needs to know to choose among lists. The pool is the searches' distinct minimized bests, the most common
first and then the largest gains on their own unit, then the lists searched for groups of units
(`labels.groups`); every pool list, -O0, -Oz and -O3 are measured on every
searched unit, and the rows are written as `LabelSet` shards of the pool's matrix as they finish, so this
stage resumes like the searches do. A pool that changed as the searches grew measures only its new lists on
the units other matrices measured (their rows are read back), and everything on new units.

A matrix row needs no search of its unit: the pool measured on units no search reached yet (`extra`) gives a
chooser more programs to learn from at a fraction of a search's cost (one compilation a list, where a search
makes hundreds), as LLM Compiler's broadcast covers every program and not only the searched ones.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR, Benchmark, benchmark_module
from stitchopt.datasets.manifest import file_sha256
from stitchopt.datasets.uri import is_under
from stitchopt.errors import DatasetError, InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.groups import group_lists, load_groups, train_groups
from stitchopt.labels.labelset import LabeledProgram, LabelSet
from stitchopt.labels.measure import KnownRow, Program, label_programs, list_measures, load_programs
from stitchopt.labels.shards import (
    MATRIX_PREFIX,
    SearchedUnit,
    benchmark_key,
    load_searches,
    matrix_directories,
    matrix_directory,
    matrix_shards,
    save_matrix_shard,
    searched_dataset,
)
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames
from stitchopt.toolchain.discovery import Toolchain

DEFAULT_POOL = 60
DEFAULT_MATRIX_UNITS = 50


@dataclass(frozen=True)
class PoolList:
    passes: PassNames
    units: int  # searched units whose minimized best it is
    own_gain: float  # mean log gain over -Oz on those units (> 0: smaller)


def best_lists(units: Sequence[SearchedUnit]) -> list[PoolList]:
    """Distinct minimized bests that beat -Oz, most common first, then by their gain on their own units."""
    gains: dict[PassNames, list[float]] = {}
    for unit in units:
        if unit.best is not None and unit.best_ratio < 1.0:
            gains.setdefault(unit.best, []).append(-math.log(unit.best_ratio))
    lists = [PoolList(passes, len(g), sum(g) / len(g)) for passes, g in gains.items()]
    return sorted(lists, key=lambda p: (-p.units, -p.own_gain, p.passes))


def broadcast_pool(units: Sequence[SearchedUnit], size: int = DEFAULT_POOL) -> tuple[PassNames, ...]:
    """The lists the matrix measures everywhere: the first `size` of `best_lists`."""
    return tuple(p.passes for p in best_lists(units)[:size])


class UnitKey(Protocol):
    """A unit named by a search or a matrix row: what rebuilding its IR needs."""

    @property
    def uri(self) -> str: ...
    @property
    def ir_sha256(self) -> str: ...
    @property
    def package(self) -> str: ...
    @property
    def split(self) -> str: ...


def searched_programs(toolchain: Toolchain, units: Sequence[UnitKey]) -> list[Program]:
    """The units' IR, rebuilt from the dataset; a unit whose IR differs from the searched (or measured) one, or
    that this machine's build of its package does not produce, is left out with a warning, never measured under
    the old unit's name."""
    kept = []
    for unit in units:
        try:
            module = benchmark_module(toolchain, unit.uri)
        except DatasetError:  # another build of the package (other configure results) lacks the file
            continue
        if module.sha256 == unit.ir_sha256:
            kept.append(Program(unit.uri, unit.package, unit.split, module))
    if len(kept) < len(units):
        lost = len(units) - len(kept)
        warnings.warn(
            f"{lost} units have other IR now or are not built by this machine's build of their package; "
            "they are left out",
            stacklevel=2,
        )
    return kept


@dataclass(frozen=True)
class MatrixProgress:
    directory: Path
    labeled: int
    skipped: int  # already in the pool's shards
    shards: tuple[Path, ...]
    cpu_seconds: float
    failed: int = 0  # no row: their -Oz build failed (measured again by a rerun)


def label_matrix(
    evaluator: Evaluator,
    catalogue: Catalogue,
    programs: Sequence[Program],
    pool: Sequence[PassNames],
    directory: Path,
    *,
    dataset: str,
    extra: Sequence[Benchmark] = (),
    shard_units: int = DEFAULT_MATRIX_UNITS,
    on_unit: Callable[[int, int], None] | None = None,
    on_shard: Callable[[Path], None] | None = None,
) -> MatrixProgress:
    """Measure `pool` on every program not yet in the pool's matrix shards, then on the dataset units of `extra`
    not yet in them (loaded as they are measured: see `unmeasured_units`), `shard_units` rows a shard (the last
    one whatever its size, also when the run is interrupted or fails)."""
    lists = tuple(pool)
    target = matrix_directory(directory, lists)
    stamps = (evaluator.toolchain.identity, catalogue.identity)
    done = measured_keys(target, stamps)
    todo = [p for p in programs if (p.uri, p.module.sha256) not in done]
    extra_todo, loaded = unmeasured_units(evaluator.toolchain, extra, done)
    known = rows_measured_before(directory, stamps) if todo or extra_todo else {}
    written: list[Path] = []
    rows: list[LabeledProgram] = []
    cpu = shard_cpu = 0.0
    labeled = 0
    skipped = len(programs) - len(todo) + len(extra) - len(extra_todo)
    failed = 0

    def flush() -> None:
        nonlocal shard_cpu
        if rows:
            path = save_matrix_shard(directory, LabelSet(*stamps, dataset, lists, tuple(rows), shard_cpu))
            written.append(path)
            rows.clear()
            shard_cpu = 0.0
            if on_shard is not None:
                on_shard(path)

    try:
        for index, program in enumerate(itertools.chain(todo, loaded)):
            if (program.uri, program.module.sha256) in done:  # an extra whose file changed on loading
                skipped += 1
                continue
            row, seconds = label_programs(evaluator, catalogue, [program], lists, known=known)
            cpu += seconds
            shard_cpu += seconds
            labeled += len(row)
            failed += not row
            rows.extend(row)
            done.add((program.uri, program.module.sha256))  # an extra that is also a searched unit: measured once
            if on_unit is not None:
                on_unit(index + 1, len(todo) + len(extra_todo))
            if len(rows) >= shard_units:
                flush()
    finally:  # an interrupted run (Ctrl-C, a kill) keeps the rows it finished
        flush()
    return MatrixProgress(target, labeled, skipped, tuple(written), cpu, failed)


def measured_keys(matrix: Path, stamps: tuple[str, str]) -> set[tuple[str, str]]:
    """(URI, IR hash) of every row of one pool's matrix directory measured with these stamps."""
    shards = matrix_shards(matrix)
    return {(p.uri, p.ir_sha256) for s in shards if (s.toolchain, s.catalogue) == stamps for p in s.programs}


def unmeasured_units(
    toolchain: Toolchain, benchmarks: Sequence[Benchmark], done: set[tuple[str, str]]
) -> tuple[list[Benchmark], Iterator[Program]]:
    """The dataset units `done` lacks and a generator that loads them one at a time (`load_programs`). A unit
    is recognized by its file's hash without loading it (a dataset's bitcode is loaded as it is, so its bytes'
    hash is the module's); one whose file changes on loading (.ll, IR without a target) is loaded, and
    `label_matrix` checks it by its module's hash."""
    todo = [b for b in benchmarks if (b.uri, file_sha256(b.path)) not in done]
    return todo, load_programs(toolchain, todo)


def rows_measured_before(directory: Path, stamps: tuple[str, str]) -> dict[tuple[str, str], KnownRow]:
    """What the matrices of `directory` (any pool) measured with these stamps (toolchain, catalogue), by program
    (URI and IR hash): what a changed pool need not measure again. Rows without compile seconds (older files)
    are left out, to be measured whole."""
    known: dict[tuple[str, str], KnownRow] = {}
    for pool in matrix_directories(directory):
        for shard in matrix_shards(pool):
            if (shard.toolchain, shard.catalogue) != stamps:
                continue
            for row in shard.programs:
                if row.baseline_seconds and (measures := list_measures(row, shard.lists)):
                    known.setdefault((row.uri, row.ir_sha256), KnownRow(row)).lists.update(measures)
    return known


@dataclass(frozen=True)
class BroadcastPlan:
    """What `broadcast` measures: a pool of lists, a label directory's searched units (those whose -Oz built) or
    a matrix's units, and units no search reached (`extra`, in this order after them)."""

    dataset: str
    lists: tuple[PassNames, ...]
    units: tuple[UnitKey, ...]
    extra: tuple[Benchmark, ...] = ()


def plan_broadcast(
    directory: Path,
    toolchain: Toolchain,
    catalogue: Catalogue,
    pool: int = DEFAULT_POOL,
    units: Sequence[str] = (),
    *,
    matrix: Path | None = None,
    add_groups: bool = False,
    functions: bool = True,
    unsearched: Sequence[Benchmark] = (),
    unsearched_limit: int | None = None,
) -> BroadcastPlan:
    """The pool of `directory`'s searches made with this toolchain and catalogue (the first `pool` of their
    bests, then the best of every group of train units), or the lists of an existing `matrix` (which grows
    with new units while the searches' pool moves on), and its units (those under `units` when given, see
    `is_under`, and with `functions` off only module units: the pool is the same, so a later broadcast without
    them resumes the matrix), then the first `unsearched_limit` of `unsearched` that no search reached with
    their IR now (`benchmark_key`: by file hash; a unit whose file changes on loading is checked by its module's
    in `label_matrix`); read before any evaluator starts. With `add_groups`, the `matrix`'s lists and then the
    groups' lists it lacks, on the matrix's own units: a new matrix whose old columns come from the old rows
    (`rows_measured_before`), so what the matrix measured is not measured again. An InputError says why there
    is nothing to broadcast."""
    if not directory.is_dir():
        raise InputError(f"{directory}: no such label directory (make one with `stitchopt labels search -o DIR`)")
    searched = load_searches(directory, toolchain.identity, catalogue.identity)
    if not searched:
        raise InputError(f"{directory}: no search shards for this LLVM: run `stitchopt labels search` first")
    stamps = (toolchain.identity, catalogue.identity)
    candidates: Sequence[UnitKey] = [u for u in searched if not u.failed]
    if add_groups and (matrix is None or unsearched):
        raise InputError(
            "--add-groups adds lists to the units of a matrix: name it with --matrix, without --unsearched"
        )
    if matrix is not None:
        shards = _matrix_shards(directory, matrix, stamps)
        lists = shards[0].lists
        if add_groups:
            lists = tuple(dict.fromkeys([*lists, *_group_lists(directory, stamps, searched)]))
            if len(lists) == len(shards[0].lists):
                raise InputError(f"--add-groups: {matrix} already measures every group's list; nothing to add")
            candidates = list({(p.uri, p.ir_sha256): p for s in shards for p in s.programs}.values())
    else:
        lists = tuple(dict.fromkeys([*broadcast_pool(searched, pool), *_group_lists(directory, stamps, searched)]))
    if not lists:
        raise InputError(
            f"{directory}: no search beat -Oz, so there is nothing to broadcast: search more units or with a larger"
            " --budget"
        )
    roots = tuple(units)
    measured = tuple(
        u
        for u in candidates
        if (not roots or is_under(u.uri, roots)) and (functions or FUNCTION_SEPARATOR not in u.uri)
    )
    reached = {u.key for u in searched}  # a unit rebuilt with other IR since its search is measured anew
    extra = [b for b in unsearched if benchmark_key(b) not in reached and (not roots or is_under(b.uri, roots))]
    if not measured and not extra:
        kind = "unit" if functions else "module unit"
        where = f"under {', '.join(roots)}" if roots else f"in {matrix}" if add_groups else "searched"
        raise InputError(f"{directory}: no {kind} {where} to broadcast on")
    return BroadcastPlan(searched_dataset(directory), lists, measured, tuple(extra[:unsearched_limit]))


def _group_lists(directory: Path, stamps: tuple[str, str], searched: Sequence[SearchedUnit]) -> tuple[PassNames, ...]:
    """The best lists of the directory's groups of train units (those that passed validation)."""
    return group_lists(train_groups(load_groups(directory, *stamps), searched))


def _matrix_shards(directory: Path, matrix: Path, stamps: tuple[str, str]) -> list[LabelSet]:
    """The shards of one of `directory`'s matrices (`matrix-<pool>`) measured with these stamps (toolchain,
    catalogue): rows of other stamps could not be merged with the new ones."""
    if not (
        matrix.is_dir() and matrix.name.startswith(MATRIX_PREFIX) and matrix.resolve().parent == directory.resolve()
    ):
        raise InputError(f"--matrix {matrix}: not a matrix directory of {directory} (its matrix-<pool>)")
    shards = [s for s in matrix_shards(matrix) if (s.toolchain, s.catalogue) == stamps]
    if not shards:
        raise InputError(f"--matrix {matrix}: no shards measured with this LLVM and catalogue, so no lists to grow")
    return shards


def broadcast(
    evaluator: Evaluator,
    catalogue: Catalogue,
    plan: BroadcastPlan,
    directory: Path,
    *,
    shard_units: int = DEFAULT_MATRIX_UNITS,
    on_unit: Callable[[int, int], None] | None = None,
    on_shard: Callable[[Path], None] | None = None,
) -> MatrixProgress:
    """`label_matrix` of the plan's pool on its units, their IR rebuilt from the dataset (`searched_programs`),
    then on its units no search reached that the matrix lacks."""
    return label_matrix(
        evaluator,
        catalogue,
        searched_programs(evaluator.toolchain, plan.units),
        plan.lists,
        directory,
        dataset=plan.dataset,
        extra=plan.extra,
        shard_units=shard_units,
        on_unit=on_unit,
        on_shard=on_shard,
    )
