"""`stitchopt datasets list | info | build | export`: build benchmark datasets into the cache and inspect them."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    DataDirOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    console,
    open_evaluator,
    output_option,
    print_table,
    progress_bar,
    refuse_ignored,
    status_console,
)
from stitchopt.datasets.benchmarks import DATASET_NAMES, open_source
from stitchopt.datasets.build import build_dataset, dataset_dir
from stitchopt.datasets.index import index_rows, standardization, write_parquet
from stitchopt.datasets.manifest import Manifest, locked_manifest
from stitchopt.diagnostics import exception_line
from stitchopt.errors import DatasetError, InputError
from stitchopt.toolchain.discovery import find_toolchain

datasets_app = typer.Typer(help="Build and inspect benchmark datasets.", no_args_is_help=True)
NameArgument = Annotated[str, typer.Argument(help=f"{', '.join(DATASET_NAMES)}, a directory or compile_commands.json")]


def _location(cache_dir: Path | None) -> Path | None:
    return cache_dir / "datasets" if cache_dir is not None else None


@datasets_app.command("list")
def list_command(
    json_output: JsonOption = False, cache_dir: CacheDirOption = None, data_dir: DataDirOption = None
) -> None:
    """Every known dataset, whether it is built, and how big."""
    summaries = [_summary(name, cache_dir, data_dir) for name in DATASET_NAMES]
    if json_output:
        print(json.dumps(summaries, indent=2))
        return
    table = Table(title="datasets")
    for column in ("dataset", "entries", "units built", "units failed", "MB", "source"):
        table.add_column(column)
    for found in summaries:
        if found["problem"] is not None:
            table.add_row(found["name"], "-", "-", "-", "-", found["problem"])
        elif not found["built"]:
            table.add_row(found["dataset"], "not built", "-", "-", "0.0", found["description"])
        else:
            counts = (found["entries"], found["units_built"], found["units_failed"])
            table.add_row(found["dataset"], *map(str, counts), f"{found['megabytes']:.1f}", found["description"])
    print_table(table)


def _summary(name: str, cache_dir: Path | None, data_dir: Path | None) -> dict[str, Any]:
    """One dataset as `datasets list` shows it: built or not and how big, or why its source cannot be read (a
    source whose data is absent is listed, not fatal)."""
    try:
        source = open_source(name, data_dir)
    except Exception as exc:
        return {"name": name, "problem": exception_line(exc)}
    directory = dataset_dir(source, _location(cache_dir))
    manifest = Manifest.load(directory)
    found: dict[str, Any] = {
        "name": name,
        "problem": None,
        "dataset": f"{source.name}-v{source.version}",
        "description": source.description,
        "built": manifest is not None,
    }
    if manifest is None:
        return found
    return found | {
        "directory": str(directory),
        "entries": len(manifest.entries),
        "units_built": len(manifest.units_done),
        "units_failed": len(manifest.failures),
        "megabytes": sum(p.stat().st_size for p in directory.rglob("*.bc")) / 1e6,
    }


@datasets_app.command("info")
def info_command(
    name: NameArgument,
    json_output: JsonOption = False,
    cache_dir: CacheDirOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Source, licence, entries by split and package, and units that failed."""
    source = open_source(name, data_dir)
    directory = dataset_dir(source, _location(cache_dir))
    manifest = Manifest.load(directory)
    if manifest is None:
        raise DatasetError(f"{source.name}-v{source.version} is not built: run `stitchopt datasets build {name}`")
    splits = Counter(e.split for e in manifest.entries)
    packages = Counter(e.package for e in manifest.entries)
    if json_output:
        print(json.dumps(_info(manifest, directory, splits, packages), indent=2))
        return
    console.print(f"[bold]{manifest.dataset}-v{manifest.version}[/bold] in {directory}", highlight=False)
    console.print(f"source: {manifest.source}\nlicence: {manifest.licence}", highlight=False)
    console.print(
        f"{len(manifest.entries)} entries from {len(packages)} packages: "
        + ", ".join(f"{n} {s}" for s, n in sorted(splits.items()))
    )
    for unit, reason in sorted(manifest.failures.items()):
        console.print(f"[dim]failed {unit}: {reason}[/dim]", highlight=False)


def _info(manifest: Manifest, directory: Path, splits: Counter[str], packages: Counter[str]) -> dict[str, Any]:
    """`datasets info --json`: what the text view says, with the entries counted per split and per package."""
    return {
        "dataset": f"{manifest.dataset}-v{manifest.version}",
        "directory": str(directory),
        "source": manifest.source,
        "licence": manifest.licence,
        "entries": len(manifest.entries),
        "splits": dict(sorted(splits.items())),
        "packages": dict(sorted(packages.items())),
        "failures": dict(sorted(manifest.failures.items())),
    }


@datasets_app.command("build")
def build_command(
    ctx: typer.Context,
    name: NameArgument,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Build only the first N units (packages, seeds).")] = None,  # noqa: UP045
    only: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Build only these units (packages), comma-separated, e.g. brotli,xxhash."),
    ] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Try failed units again.")] = False,
    split_above: Annotated[
        Optional[int], typer.Option(min=1, help="Also split modules above this many bytes into one per function.")  # noqa: UP045
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=0, help="Units built at once (default: 2; 0: all cores).")] = 2,
    cache_dir: CacheDirOption = None,
    data_dir: DataDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Build (or resume, or repair) a dataset in the cache; failures are logged and skipped."""
    if only is not None:
        refuse_ignored(ctx, ("limit",), "without --only")
    source = open_source(name, data_dir)
    chosen = _only_units(source.units(), only, name) if only is not None else None
    toolchain = find_toolchain(llvm)
    total = len(chosen) if chosen is not None else len(source.units()[:limit])
    with progress_bar() as progress:
        task = progress.add_task(f"building {source.name}", total=total)

        def advance(unit: str, failure: str | None) -> None:
            progress.advance(task)
            if failure is not None:
                progress.console.print(f"[yellow]skipped {unit}: {failure}[/yellow]", highlight=False)

        report = build_dataset(
            source,
            toolchain,
            limit=limit,
            only=chosen,
            jobs=jobs or os.cpu_count() or 1,
            root=_location(cache_dir),
            retry_failed=retry_failed,
            split_above_bytes=split_above,
            on_unit=advance,
        )
    manifest = report.manifest
    status_console.print(
        f"{source.name}-v{source.version}: {report.built} unit(s) built, {report.failed} failed, {report.repaired} "
        f"repaired in {report.seconds:.0f} s; {len(manifest.entries)} entries, {report.bytes / 1e6:.1f} MB",
        highlight=False,
    )


def _only_units(units: list[str], only: str, name: str) -> list[str]:
    """`--only`'s units, each checked against the source's (an unknown name is a typo, not an empty build)."""
    chosen = [unit.strip() for unit in only.split(",") if unit.strip()]
    unknown = [unit for unit in chosen if unit not in units]
    if unknown or not chosen:
        shown = ", ".join(units[:8]) + (", ..." if len(units) > 8 else "")
        raise InputError(
            f"--only {only!r}: {name} has no unit {', '.join(unknown) or '(none given)'}; its units: {shown}"
        )
    return chosen


@datasets_app.command("export")
def export_command(
    name: NameArgument,
    output: Annotated[Path, output_option("Parquet file to write the index (URI, package, split, sizes) to.")],
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    data_dir: DataDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """The dataset index as Parquet; standardization statistics go into the manifest."""
    source = open_source(name, data_dir)
    directory = dataset_dir(source, _location(cache_dir))
    manifest = Manifest.load(directory)
    if manifest is None or not manifest.entries:
        raise DatasetError(f"{source.name}-v{source.version} is not built: run `stitchopt datasets build {name}`")
    with open_evaluator(find_toolchain(llvm), cache_dir, jobs, backend, address) as evaluator:
        rows = index_rows(manifest, directory, evaluator)
    write_parquet(rows, output)
    statistics = standardization(rows)
    with locked_manifest(directory, lambda: manifest) as current:  # a build may have saved meanwhile
        current.statistics = statistics
    status_console.print(f"{len(rows)} rows written to {output}", highlight=False)
