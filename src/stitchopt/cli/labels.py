"""`stitchopt labels search | groups | broadcast | validate | info | pool`: the label factory from the command line.

`search`, `groups` and `broadcast` write shards into a label directory as they fill (with `--commit`, each shard is also
committed to the git repository holding the directory, so a session that ends at any moment keeps its work);
`validate` validates every list of the directory's pools once and keeps the verdicts beside the shards;
`info` says what a directory holds and the CPU hours behind it; `pool` is the older single-file labels (a pool of
lists around -Oz measured on every program).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn, TimeRemainingColumn

from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    DataDirOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    NoValidateOption,
    ValidateLimitOption,
    ValidateOption,
    console,
    open_evaluator,
    output_option,
    print_table,
    progress_bar,
    refuse_ignored,
    status_console,
    time_left,
    validation_choice,
)
from stitchopt.datasets.benchmarks import select_benchmarks
from stitchopt.datasets.uri import is_under
from stitchopt.errors import InputError
from stitchopt.labels.commit import shard_committer
from stitchopt.labels.groups import (
    GROUPS_DIR,
    GroupSettings,
    built_as_searched,
    form_groups,
    group_lists,
    load_groups,
    search_groups,
    train_groups,
)
from stitchopt.labels.labelset import LabelSet
from stitchopt.labels.matrix import DEFAULT_MATRIX_UNITS, DEFAULT_POOL, broadcast, plan_broadcast
from stitchopt.labels.pool import build_labels
from stitchopt.labels.search import DEFAULT_SHARD_UNITS, search_benchmarks
from stitchopt.labels.shards import SearchSettings, benchmark_key, load_matrix, load_searches, summarize_directory
from stitchopt.labels.verdicts import VERDICTS_DIR, judged_lists, pool_lists, validate_lists
from stitchopt.models.coreset import select_coreset
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.tables import Rows, to_rich
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.tune.strategies import STRATEGIES

labels_app = typer.Typer(
    help="Make labels for learned flag tuning: per-program searches, broadcast, info.", no_args_is_help=True
)

DatasetArgument = Annotated[
    str, typer.Argument(help="A built dataset, e.g. bench://pypi-v1, or several: bench://pypi-v1,bench://debian-v1.")
]
DirectoryArgument = Annotated[Path, typer.Argument(help="Label directory (shards accumulate here).")]
CommitOption = Annotated[
    bool, typer.Option("--commit", help="Commit each shard to the git repository holding the directory.")
]
SplitOption = Annotated[str, typer.Option(help="Splits to label, comma-separated.")]
ProgramsOption = Annotated[int, typer.Option(min=0, help="At most this many units (round-robin by package).")]
MaxIrOption = Annotated[float, typer.Option(min=1, help="Skip units whose IR file is larger (KB).")]
PerPackageOption = Annotated[int, typer.Option(min=0, help="At most this many units of one package (0: all).")]
UnitsOption = Annotated[
    Optional[str],  # noqa: UP045 (typer needs Optional on Python 3.10)
    typer.Option(
        help="Only these datasets, packages or units, comma-separated (e.g. bench://pypi-v1,bench://debian-v1/lzo2)."
    ),
]


@labels_app.command("search")
def search_command(
    dataset: DatasetArgument,
    output: Annotated[Path, output_option("Label directory to add search shards to.", directory=True)],
    split: SplitOption = "train,validation",
    programs: ProgramsOption = 0,
    max_ir_kb: MaxIrOption = 100.0,
    per_package: PerPackageOption = 0,
    functions: Annotated[
        int, typer.Option(min=0, help="Also search up to N functions of each unit on their own (llvm-extract).")
    ] = 0,
    strategy: Annotated[str, typer.Option(help=f"Search strategy: {', '.join(STRATEGIES)}.")] = "local",
    budget: Annotated[int, typer.Option(min=1, help="Evaluations per unit.")] = 200,
    seed: Annotated[int, typer.Option(min=0, help="Search seed.")] = 0,
    minimize: Annotated[bool, typer.Option(help="Minimize each best list (drop passes that change nothing).")] = True,
    part: Annotated[str, typer.Option(help="I/N: only the I-th of N parts of the units (one per machine).")] = "1/1",
    shard_units: Annotated[int, typer.Option(min=1, help="Units per shard file.")] = DEFAULT_SHARD_UNITS,
    commit: CommitOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Search every unit on its own, minimize its best, and keep every evaluated list's size, in shards; units
    already in the directory's shards (same LLVM, catalogue and settings) are skipped."""
    if strategy not in STRATEGIES:
        raise InputError(f"--strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    index, count = _part(part)
    committer = shard_committer(output) if commit else None
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    chosen = select_benchmarks(
        dataset, split.split(","), max_ir_kb=max_ir_kb, per_package=per_package or None, limit=programs or None
    )
    units = [b for position, b in enumerate(chosen) if position % count == index]
    settings = SearchSettings(strategy, budget, seed, minimize)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator, _progress() as advance:
        done = search_benchmarks(
            evaluator,
            catalogue,
            units,
            output,
            dataset=dataset,
            settings=settings,
            functions=functions,
            shard_units=shard_units,
            on_unit=lambda finished, total, _unit: advance("search", finished, total),
            on_shard=committer,
        )
    status_console.print(
        f"{done.searched} units searched ({done.skipped} already in shards, {done.failed} without -Oz) -> "
        f"{len(done.shards)} shards in {output / 'searches'}, {done.cpu_seconds / 3600:.2f} CPU hours",
        highlight=False,
    )


@labels_app.command("broadcast")
def broadcast_command(
    ctx: typer.Context,
    directory: DirectoryArgument,
    pool: Annotated[
        int, typer.Option(min=1, help="The searches' most common bests in the pool (the groups' lists come on top).")
    ] = DEFAULT_POOL,
    shard_units: Annotated[int, typer.Option(min=1, help="Units per shard file.")] = DEFAULT_MATRIX_UNITS,
    units: UnitsOption = None,
    matrix: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="Measure this matrix's lists (grow it with new units) instead of the searches' pool now; with "
            "--add-groups, its units and lists are the start of a new matrix."
        ),
    ] = None,
    add_groups: Annotated[
        bool,
        typer.Option(
            "--add-groups",
            help="With --matrix: that matrix's lists and the groups' lists it lacks, on its units (those whose IR "
            "rebuilds here), in a new matrix; what the matrix measured is read back, not measured again.",
        ),
    ] = False,
    functions: Annotated[
        bool,
        typer.Option(
            help="Measure function units (`<uri>#<function>`) too; --no-functions keeps to module units (what "
            "`train --no-functions` reads), and a later run without it adds the functions."
        ),
    ] = True,
    unsearched: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            help="Also measure the units of these datasets that no search reached at their IR now (comma-separated)."
        ),
    ] = None,
    split: SplitOption = "train",
    programs: Annotated[
        int, typer.Option(min=0, help="With --unsearched: the first N of those units (round-robin by package; 0: all).")
    ] = 0,
    max_ir_kb: MaxIrOption = 100.0,
    commit: CommitOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Measure the searches' best lists on every searched unit (the matrix models learn from), and with
    --unsearched on units no search reached too, then print the coreset's coverage curve against K. --matrix M
    --add-groups gives M's units the groups' lists M lacks."""
    if unsearched is not None and not unsearched.strip(", "):
        raise InputError("--unsearched '': name a dataset, e.g. --unsearched bench://pypi-v1")
    if not unsearched:
        refuse_ignored(ctx, ("split", "programs", "max_ir_kb"), "with --unsearched")
    if matrix is not None:
        refuse_ignored(ctx, ("pool",), "without --matrix (the matrix's lists are measured)")
    else:
        refuse_ignored(ctx, ("add_groups",), "with --matrix (it adds the groups' lists to that matrix)")
    if add_groups:
        refuse_ignored(ctx, ("unsearched",), "without --add-groups (which keeps to the matrix's units)")
    splits = [s.strip() for s in split.split(",") if s.strip()]
    if "test" in splits:
        raise InputError("--split test: models train on the matrix, so test units stay out; use train or validation")
    if not splits or any(s not in ("train", "validation") for s in splits):
        raise InputError(f"--split {split!r}: use train, validation or both (comma-separated)")
    committer = shard_committer(directory) if commit else None
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    more = select_benchmarks(unsearched, splits, max_ir_kb=max_ir_kb) if unsearched else []
    plan = plan_broadcast(
        directory,
        toolchain,
        catalogue,
        pool,
        _roots(units),
        matrix=matrix,
        add_groups=add_groups,
        functions=functions,
        unsearched=more,
        unsearched_limit=programs or None,
    )
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator, _progress() as advance:
        done = broadcast(
            evaluator,
            catalogue,
            plan,
            directory,
            shard_units=shard_units,
            on_unit=lambda finished, total: advance("broadcast", finished, total),
            on_shard=committer,
        )
    labels = load_matrix(done.directory)
    status_console.print(
        f"{len(plan.lists)} lists x {len(labels.programs)} units -> {done.directory} ({done.labeled} measured now, "
        f"{done.skipped} already in it, {done.failed} without -Oz, {done.cpu_seconds / 3600:.2f} CPU hours)\n"
        f"coverage (geomean vs -Oz with backup): {_coverage(labels)}",
        highlight=False,
    )


@labels_app.command("groups")
def groups_command(
    ctx: typer.Context,
    directory: DirectoryArgument,
    groups: Annotated[
        int,
        typer.Option(
            min=1, help="Groups of these settings in all, those in shards included (fewer when units run out)."
        ),
    ] = 20,
    size: Annotated[int, typer.Option(min=2, help="Module units per group.")] = 6,
    per_package: Annotated[int, typer.Option(min=1, help="At most this many units of one package in a group.")] = 2,
    budget: Annotated[int, typer.Option(min=1, help="Lists evaluated per group (each on every member).")] = 150,
    seed: Annotated[int, typer.Option(min=0, help="Grouping and search seed.")] = 0,
    split: Annotated[
        str, typer.Option(help="Splits whose units are grouped, comma-separated (only train groups join the pool).")
    ] = "train",
    units: UnitsOption = None,
    matrix: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="The broadcast matrix that groups units (default: the directory's only one)."),
    ] = None,
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    no_validate: NoValidateOption = False,
    data_dir: DataDirOption = None,
    commit: CommitOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Search one list for each group of units that the broadcast matrix says respond alike, for the pool
    (`broadcast` adds the lists of groups of train units). Only units whose IR is built here are grouped; groups
    of these settings already in the directory's shards count toward --groups, and their units join no new one.
    Each group's best is validated in full (unless --no-validate): one that fails stays out of the pool."""
    validation = validation_choice(ctx, validate, validate_limit, data_dir, no_validate)
    committer = shard_committer(directory) if commit else None
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    labels = load_matrix(matrix or directory)
    searched = load_searches(directory, toolchain.identity, catalogue.identity)
    roots = _roots(units)
    settings = GroupSettings(size, per_package, budget, seed)
    found = load_groups(directory, toolchain.identity, catalogue.identity)
    earlier = [g for g in found if g.settings == settings]
    taken = {(m.uri, m.ir_sha256) for g in earlier for m in g.members}
    splits = [s.strip() for s in split.split(",")]
    built = built_as_searched((p.uri, p.ir_sha256) for p in labels.programs if not roots or is_under(p.uri, roots))
    left = built - taken
    formed = form_groups(
        labels, searched, settings, groups - len(earlier), keep=lambda *key: key in left, splits=splits
    )
    if not formed and not earlier:
        raise InputError(
            f"{directory}: no group of {size} {split} module units whose own search beat -Oz"
            + (f" under {units}" if units else "")
            + " and whose IR is built here: build their datasets (`stitchopt datasets build`), search more units "
            "(`stitchopt labels search`) or give a smaller --size"
        )
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator, _progress() as advance:
        done = search_groups(
            evaluator,
            catalogue,
            formed,
            searched,
            directory,
            settings,
            on_group=lambda finished, total, _group: advance("groups", finished, total),
            on_shard=committer,
            validation=validation.open(evaluator),
        )
    found = load_groups(directory, toolchain.identity, catalogue.identity)
    lists = group_lists(train_groups(found, searched))
    status_console.print(
        f"{done.searched} groups searched ({len(earlier)} of these settings already in shards, {done.lost} left "
        f"out: a member's IR differs or -Oz fails on it) -> {directory / GROUPS_DIR}, {done.cpu_seconds / 3600:.2f} "
        f"CPU hours; {len(lists)} distinct lists of groups of train units beat -Oz on their group ({len(found)} "
        "groups in the directory)",
        highlight=False,
    )


@labels_app.command("validate")
def validate_command(
    ctx: typer.Context,
    directory: DirectoryArgument,
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    data_dir: DataDirOption = None,
    commit: CommitOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Validate in full every list of the directory's pools (each matrix's and the groups'), each once: the
    verdicts go to validation/SUITES.json.gz, which studies read to leave failed lists out (object sizes cannot
    see a list that does not link or that miscompiles). A rerun validates only lists without a verdict."""
    choice = validation_choice(ctx, validate, validate_limit, data_dir, no_validate=False)
    lists = pool_lists(directory)
    if not lists:
        raise InputError(
            f"{directory}: no pool to validate yet: run `stitchopt labels broadcast {directory}` or `labels groups`"
        )
    committer = shard_committer(directory) if commit else None
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator, _progress() as advance:
        validation = choice.open(evaluator)
        assert validation is not None  # validation is on here: --no-validate is not an option of this command
        run = validate_lists(
            directory,
            lists,
            validation,
            catalogue,
            toolchain.identity,
            on_list=lambda done, total: advance("validate", done, total),
            on_save=committer,
        )
    verdict = {v.passes: v for v in run.verdicts}
    failed = sum(not verdict[passes].passed for passes in lists)
    status_console.print(
        f"{len(lists)} pool lists ({run.validated} validated now): {len(lists) - failed} passed, {failed} failed "
        f"{validation.describe()} -> {run.path}",
        highlight=False,
    )


@labels_app.command("info")
def info_command(
    directory: DirectoryArgument,
    dataset: Annotated[
        Optional[str],  # noqa: UP045 (typer needs Optional on Python 3.10)
        typer.Argument(help="Also count, per package, the units of this dataset (or datasets) still to search."),
    ] = None,
    split: SplitOption = "train,validation",
    max_ir_kb: MaxIrOption = 100.0,
    per_package: PerPackageOption = 0,
    functions: Annotated[int, typer.Option(min=0, help="Functions per unit the search covers (its --functions).")] = 0,
    json_output: JsonOption = False,
) -> None:
    """What a label directory holds: searched units per package, matrices, the CPU hours behind each, and with
    a dataset what is still queued (give the --split, --max-ir-kb, --per-package and --functions the search had)."""
    queue = []
    if dataset is not None:
        chosen = select_benchmarks(dataset, split.split(","), max_ir_kb=max_ir_kb, per_package=per_package or None)
        queue = [(*benchmark_key(b), b.package, b.split, functions) for b in chosen]
    summary = summarize_directory(directory, queue)
    groups = load_groups(directory)
    grouped = {
        "groups": len(groups),
        "lists": len(group_lists(groups)),
        "cpu_hours": sum(g.cpu_seconds for g in groups) / 3600,
    }
    pools = pool_lists(directory)
    judged = judged_lists(directory)
    validated = {
        "lists": len(pools),
        "judged": sum(passes in judged for passes in pools),
        "failed": sum(judged.get(passes) is False for passes in pools),
    }
    if json_output:
        print(json.dumps({**asdict(summary), "groups": grouped, "validation": validated}, indent=1))
        return
    rows = [
        [p.package, p.split, str(p.modules), str(p.functions), str(p.queued), f"{p.cpu_hours:.2f}"]
        + [f"{100 * p.geomean_change:+.2f}%" if p.modules + p.functions else "-"]
        for p in summary.packages_detail
    ]
    header = ["package", "split", "modules", "functions", "queued", "CPU h", "best vs -Oz"]
    print_table(to_rich(Rows(f"{directory}: searched units per package", header, rows)))
    queued = f", {summary.queued_units} queued" if dataset is not None else ""
    console.print(
        f"{summary.searched_units} units searched ({summary.function_units} functions, {summary.packages} packages, "
        f"{summary.failed_units} without -Oz{queued}), {summary.evaluations:,} evaluations, "
        f"{summary.search_cpu_hours:.2f} CPU hours; {summary.units_beating_oz} beat -Oz, geomean "
        f"{100 * summary.search_geomean_change:+.2f}% vs -Oz (minimized bests)",
        highlight=False,
    )
    for matrix in summary.matrices:
        console.print(
            f"{matrix.name}: {matrix.programs} units ({matrix.searched} searched, "
            f"{matrix.programs - matrix.searched} only broadcast; {matrix.functions} functions) x {matrix.lists} "
            f"lists, {matrix.cpu_hours:.2f} CPU hours",
            highlight=False,
        )
    if groups:
        console.print(
            f"{GROUPS_DIR}: {len(groups)} groups searched, {grouped['lists']} distinct lists beat -Oz on their group, "
            f"{grouped['cpu_hours']:.2f} CPU hours",
            highlight=False,
        )
    if (directory / VERDICTS_DIR).is_dir():
        console.print(
            f"{VERDICTS_DIR}: {validated['judged']} of the pools' {validated['lists']} lists validated, "
            f"{validated['failed']} failed (`stitchopt labels validate` judges the rest)",
            highlight=False,
        )


@labels_app.command("pool")
def pool_command(
    ctx: typer.Context,
    dataset: DatasetArgument,
    output: Annotated[Path, output_option("Labels file to write (.json.gz).")],
    split: SplitOption = "train,validation",
    programs: ProgramsOption = 0,
    max_ir_kb: MaxIrOption = 100.0,
    per_package: PerPackageOption = 40,
    pool_programs: Annotated[int, typer.Option(min=1, help="Programs searched to propose the list pool.")] = 40,
    pool_budget: Annotated[int, typer.Option(min=1, help="Evaluations per searched program.")] = 300,
    seed: Annotated[int, typer.Option(min=0, help="Search seed.")] = 0,
    lists_from: Annotated[
        Optional[Path],  # noqa: UP045 (typer needs Optional on Python 3.10)
        typer.Option(help="Reuse the list pool of this labels file or label directory instead of searching for one."),
    ] = None,
    broad: Annotated[bool, typer.Option(help="Add lists built around -Oz (see `broad_lists`).")] = True,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """One labels file: search a sample of programs for a pool of lists (plus lists around -Oz), then measure
    every list on every program."""
    if lists_from is not None:
        refuse_ignored(ctx, ("pool_programs", "pool_budget", "seed"), "to the pool search (without --lists-from)")
    chosen = select_benchmarks(
        dataset, split.split(","), max_ir_kb=max_ir_kb, per_package=per_package or None, limit=programs or None
    )
    reused = load_matrix(lists_from).lists if lists_from is not None else ()
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator, _progress() as advance:
        labels = build_labels(
            evaluator,
            catalogue,
            chosen,
            dataset=dataset,
            pool_programs=0 if reused else pool_programs,
            pool_budget=pool_budget,
            seed=seed,
            extra_lists=reused,
            broad=broad,
            on_stage=advance,
        )
    labels.save(output)
    status_console.print(
        f"{len(labels.programs)} programs x {len(labels.lists)} lists -> {output} "
        f"({labels.cpu_seconds / 3600:.2f} CPU hours of opt and llc)",
        highlight=False,
    )


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """Progress on stderr as `advance(stage, done, total)`: a bar with counts and the time left on a terminal,
    else one line per step with the same (a log of a long run says where it is). The time left is the run's
    mean time per step so far times the steps left: units take seconds to minutes, too few for a short window."""
    tasks: dict[str, TaskID] = {}
    started: dict[str, float] = {}  # a stage starts when the one before it last moved (or the display opened)
    last = [time.monotonic()]
    columns = (*Progress.get_default_columns()[:-1], MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with progress_bar(*columns, speed_estimate_period=86400) as progress:

        def advance(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
                started[stage] = last[0]
            last[0] = time.monotonic()
            progress.update(tasks[stage], completed=done, total=total)
            if not status_console.is_terminal:
                elapsed = time.monotonic() - started[stage]
                eta = f", {time_left(elapsed, done, total)}" if done else ""
                status_console.print(f"{stage}: {done}/{total}{eta}", highlight=False)

        yield advance


def _roots(units: str | None) -> tuple[str, ...]:
    """`--units`' datasets, packages or units (see `is_under`)."""
    return tuple(u.strip() for u in units.split(",") if u.strip()) if units else ()


def _part(text: str) -> tuple[int, int]:
    """`I/N` -> (I - 1, N)."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise InputError(f"--part {text!r}: give I/N with 1 <= I <= N, e.g. 2/4")
    return int(index) - 1, int(count)


def _coverage(labels: LabelSet) -> str:
    curve = select_coreset(labels.ratios(), k=len(labels.lists)).curve
    shown = [f"K={k}: {100 * curve[k - 1]:+.2f}%" for k in (1, 2, 5, 10, 20, 50) if k <= len(curve)]
    return ", ".join(shown)
