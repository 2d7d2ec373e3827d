"""The label factory's first stage: search every unit on its own (LLM Compiler's method), minimize the best, and
keep what every evaluated list did, in shards that are written as they fill.

A unit is a translation unit of a dataset or, with `functions`, one of its functions cut out with
`llvm-extract` (`<uri>#<function>`): more examples from the same code, and labels for hybrid mode's parts.
Shards already in the label directory (same toolchain, catalogue and search settings) are read first and
their units skipped, so a run killed at any point, or continued on another machine, redoes at most the units
of one unfinished shard; on the same machine the evaluation cache answers even those. A dataset's units are
recognized there by the hash of their IR file, before any is loaded, so a rerun costs little more than
reading the shards.
"""

from __future__ import annotations

import io
import json
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stitchopt.core import EvalStatus, IRModule, Objective
from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR, Benchmark
from stitchopt.errors import StitchoptError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.measure import Program, load_programs
from stitchopt.labels.shards import SearchedUnit, SearchSettings, SearchShard, benchmark_key, load_searches
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.split import extract_function, symbols
from stitchopt.tune.acceptance import program_guard
from stitchopt.tune.driver import Budget, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.strategies import make_strategy

DEFAULT_SHARD_UNITS = 20


def search_unit(evaluator: Evaluator, catalogue: Catalogue, program: Program, settings: SearchSettings) -> SearchedUnit:
    """One unit's search under its IR guards, its best minimized. A unit whose -Oz build fails is not searched
    (there is no reference to compare with) but recorded as failed, so a rerun does not try it again."""
    module = program.module
    oz_baseline = evaluator.baselines["Oz"]
    oz = evaluator.evaluate(module, oz_baseline.pipeline, oz_baseline.options)
    unit = SearchedUnit(program.uri, module.sha256, program.package, program.split, 0, None, None, (), (), 0.0)
    if not (oz.ok and oz.size_bytes):
        return unit
    guard = program_guard(evaluator, module)
    searcher = make_strategy(settings.strategy, catalogue, settings.seed, oz_baseline.pipeline)
    trials = io.StringIO()
    budget = Budget(evaluations=settings.budget)
    run = tune(evaluator, module, searcher, catalogue, Objective(), budget, trial_log=trials, guard=guard)
    evaluated = [json.loads(line) for line in trials.getvalue().splitlines()]
    seconds = [trial["compile_seconds"] for trial in evaluated]
    mean_seconds = sum(seconds) / len(seconds) if seconds else 0.0
    best, best_size, extra = _minimized_best(
        evaluator, catalogue, module, run.best_passes, settings, guard, oz.size_bytes
    )
    return replace(
        unit,
        oz_size=oz.size_bytes,
        best=best,
        best_size=best_size,
        bests=tuple((passes, round(score * oz.size_bytes)) for passes, score in run.bests),
        evaluated=tuple(_evaluated(evaluated)),
        # opt + llc seconds of every evaluation behind the unit (cached ones count what they cost when measured);
        # the minimizer's evaluations are counted at the search's mean.
        cpu_seconds=sum(seconds) + extra * mean_seconds,
    )


def _minimized_best(
    evaluator: Evaluator,
    catalogue: Catalogue,
    module: IRModule,
    found: PassNames | None,
    settings: SearchSettings,
    guard: Callable[[str], list[str]],
    oz_size: int,
) -> tuple[PassNames | None, int | None, int]:
    """The search's best, minimized (passes that change nothing dropped), with its object size ((None, None)
    when nothing beat -Oz), and the evaluations that took."""
    if found is None:
        return None, None, 0
    passes, evaluations = found, 0
    if settings.minimize:
        minimized = minimize(evaluator, module, found, catalogue, insertion=False, guard=guard)
        passes, evaluations = minimized.passes, minimized.evaluations
    result = evaluator.evaluate(module, tuned_pipeline(passes, catalogue), evaluator.baselines["Oz"].options)
    if not (result.ok and result.size_bytes and result.size_bytes < oz_size):
        return None, None, evaluations
    return passes, result.size_bytes, evaluations


def _evaluated(trials: list[dict[str, Any]]) -> Iterator[tuple[PassNames, int | None]]:
    """(list, object bytes) per trial; None where the list failed or the guards distrusted it."""
    for trial in trials:
        usable = trial["status"] == EvalStatus.OK.value and not trial["suspicious"]
        yield tuple(trial["passes"]), trial["size_bytes"] if usable else None


def function_units(toolchain: Toolchain, program: Program, limit: int) -> list[Program]:
    """Up to `limit` of the unit's defined functions, the largest (in IR lines) first, each cut out of the module alone
    (`<uri>#<function>`, the same package and split)."""
    if limit <= 0:
        return []
    found = symbols(toolchain, program.module.bitcode, program.uri)
    largest = sorted(zip(found.functions, found.lines, strict=True), key=lambda item: -item[1])[:limit]
    return [
        Program(
            f"{program.uri}{FUNCTION_SEPARATOR}{name}",
            program.package,
            program.split,
            IRModule(
                f"{program.module.name}{FUNCTION_SEPARATOR}{name}",
                extract_function(toolchain, program.module.bitcode, name),
                program.module.triple,
                program.module.source_filename,
                program.module.language,
            ),
        )
        for name, _ in largest
    ]


@dataclass(frozen=True)
class SearchProgress:
    searched: int  # units searched by this call
    skipped: int  # units found in existing shards
    failed: int  # units whose -Oz failed (recorded, never searched again)
    shards: tuple[Path, ...]  # written by this call
    cpu_seconds: float  # of this call's searches


def search_units(
    evaluator: Evaluator,
    catalogue: Catalogue,
    programs: Iterable[Program],
    directory: Path,
    *,
    dataset: str,
    settings: SearchSettings,
    shard_units: int = DEFAULT_SHARD_UNITS,
    on_unit: Callable[[int, int, SearchedUnit], None] | None = None,
    on_shard: Callable[[Path], None] | None = None,
    done: Set[tuple[str, str]] | None = None,
    total: int | None = None,
) -> SearchProgress:
    """Search every program not yet in `directory`'s shards (`done`: their keys, when the caller has read them);
    every `shard_units` searched units become a shard (the last one whatever its size, also when the run is
    interrupted or fails). Programs are taken as
    they come (a lazy iterable is loaded one unit at a time). `on_unit(done, total, unit)` reports progress
    against `total` (the programs' count when not given), `on_shard(path)` each shard as it is written (e.g. to
    commit it)."""
    stamps = (evaluator.toolchain.identity, catalogue.identity)
    if done is None:
        done = _searched_keys(directory, evaluator.toolchain, catalogue, settings)
    if total is None:
        programs = list(programs)
        total = sum((p.uri, p.module.sha256) not in done for p in programs)
    batch: list[SearchedUnit] = []
    written: list[Path] = []
    searched = skipped = failed = 0
    cpu = 0.0

    def flush() -> None:
        if batch:
            path = SearchShard(*stamps, dataset, settings, tuple(batch)).save(directory)
            written.append(path)
            batch.clear()
            if on_shard is not None:
                on_shard(path)

    try:
        for program in programs:
            if (program.uri, program.module.sha256) in done:
                skipped += 1
                continue
            unit = search_unit(evaluator, catalogue, program, settings)
            searched += 1
            failed += unit.failed
            batch.append(unit)
            cpu += unit.cpu_seconds
            if on_unit is not None:
                on_unit(searched, max(total, searched), unit)
            if len(batch) >= shard_units:
                flush()
    finally:  # an interrupted run (Ctrl-C, a kill) keeps the units it finished
        flush()
    return SearchProgress(searched - failed, skipped, failed, tuple(written), cpu)


def search_benchmarks(
    evaluator: Evaluator,
    catalogue: Catalogue,
    benchmarks: Sequence[Benchmark],
    directory: Path,
    *,
    dataset: str,
    settings: SearchSettings,
    functions: int = 0,
    shard_units: int = DEFAULT_SHARD_UNITS,
    on_unit: Callable[[int, int, SearchedUnit], None] | None = None,
    on_shard: Callable[[Path], None] | None = None,
) -> SearchProgress:
    """`search_units` on a dataset's units, each followed by up to `functions` of its functions
    (`function_units`), in the benchmarks' order (round-robin over packages), so that a run stopped early has
    labelled whole units of many packages. Only units the shards do not already hold with their functions are
    loaded, one at a time: a unit is recognized without loading it, since a dataset's bitcode file is loaded as
    it is and its bytes' hash is the searched module's. A unit whose file changes on loading (.ll, IR without a
    target) never matches here and is loaded to be checked by its module's hash, as is one with fewer functions
    than asked for (only its IR says how many it has)."""
    toolchain = evaluator.toolchain
    done = _searched_keys(directory, toolchain, catalogue, settings)
    parts = Counter(uri.partition(FUNCTION_SEPARATOR)[0] for uri, _ in done if FUNCTION_SEPARATOR in uri)
    module_done = {b.uri: benchmark_key(b) in done for b in benchmarks}
    pending = [b for b in benchmarks if not (module_done[b.uri] and parts[b.uri] >= functions)]

    def loaded() -> Iterator[Program]:
        for program in load_programs(toolchain, pending):
            yield program
            try:
                cut = function_units(toolchain, program, functions)
            except StitchoptError as error:
                warnings.warn(f"{program.uri}: its functions skipped: {error}", stacklevel=2)
                continue
            yield from cut

    progress = search_units(
        evaluator,
        catalogue,
        loaded(),
        directory,
        dataset=dataset,
        settings=settings,
        shard_units=shard_units,
        on_unit=on_unit,
        on_shard=on_shard,
        done=done,
        # at most: a unit may have fewer functions than asked for
        total=sum((not module_done[b.uri]) + max(0, functions - parts[b.uri]) for b in pending),
    )
    finished = len(benchmarks) - len(pending)
    return replace(progress, skipped=progress.skipped + finished * (1 + functions))


def _searched_keys(
    directory: Path, toolchain: Toolchain, catalogue: Catalogue, settings: SearchSettings
) -> set[tuple[str, str]]:
    """(URI, IR hash) of every unit the directory's shards of this toolchain, catalogue and settings hold."""
    return {unit.key for unit in load_searches(directory, toolchain.identity, catalogue.identity, settings)}
