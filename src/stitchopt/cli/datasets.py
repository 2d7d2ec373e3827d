"""`stitchopt datasets list | info | build | export`: build benchmark datasets into the cache and inspect them."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import Progress
from rich.table import Table

from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    DataDirOption,
    JobsOption,
    LlvmOption,
    console,
    open_evaluator,
    output_option,
    print_table,
    status_console,
)
from stitchopt.datasets.benchmarks import DATASET_NAMES, open_source
from stitchopt.datasets.build import build_dataset, dataset_dir
from stitchopt.datasets.index import index_rows, standardization, write_parquet
from stitchopt.datasets.manifest import Manifest
from stitchopt.diagnostics import exception_line
from stitchopt.errors import DatasetError
from stitchopt.toolchain.discovery import find_toolchain

datasets_app = typer.Typer(help="Build and inspect benchmark datasets.", no_args_is_help=True)
NameArgument = Annotated[str, typer.Argument(help=f"{', '.join(DATASET_NAMES)}, a directory or compile_commands.json")]


def _location(cache_dir: Path | None) -> Path | None:
    return cache_dir / "datasets" if cache_dir is not None else None


@datasets_app.command("list")
def list_command(cache_dir: CacheDirOption = None, data_dir: DataDirOption = None) -> None:
    """Every known dataset, whether it is built, and how big."""
    table = Table(title="datasets")
    for column in ("dataset", "entries", "units built", "units failed", "MB", "source"):
        table.add_column(column)
    for name in DATASET_NAMES:
        try:
            source = open_source(name, data_dir)
        except Exception as exc:  # a source whose data is absent is listed, not fatal
            table.add_row(name, "-", "-", "-", "-", exception_line(exc))
            continue
        directory = dataset_dir(source, _location(cache_dir))
        manifest = Manifest.load(directory)
        size = sum(p.stat().st_size for p in directory.rglob("*.bc")) / 1e6 if manifest else 0.0
        table.add_row(
            f"{source.name}-v{source.version}",
            str(len(manifest.entries)) if manifest else "not built",
            str(len(manifest.units_done)) if manifest else "-",
            str(len(manifest.failures)) if manifest else "-",
            f"{size:.1f}",
            source.description[:70],
        )
    print_table(table)


@datasets_app.command("info")
def info_command(name: NameArgument, cache_dir: CacheDirOption = None, data_dir: DataDirOption = None) -> None:
    """Source, licence, entries by split and package, and units that failed."""
    source = open_source(name, data_dir)
    directory = dataset_dir(source, _location(cache_dir))
    manifest = Manifest.load(directory)
    if manifest is None:
        raise DatasetError(f"{source.name}-v{source.version} is not built: run `stitchopt datasets build {name}`")
    console.print(f"[bold]{manifest.dataset}-v{manifest.version}[/bold] in {directory}", highlight=False)
    console.print(f"source: {manifest.source}\nlicence: {manifest.licence}", highlight=False)
    splits = Counter(e.split for e in manifest.entries)
    packages = Counter(e.package for e in manifest.entries)
    console.print(
        f"{len(manifest.entries)} entries from {len(packages)} packages: "
        + ", ".join(f"{n} {s}" for s, n in sorted(splits.items()))
    )
    for unit, reason in sorted(manifest.failures.items()):
        console.print(f"[dim]failed {unit}: {reason}[/dim]", highlight=False)


@datasets_app.command("build")
def build_command(
    name: NameArgument,
    limit: Annotated[Optional[int], typer.Option(help="Build only the first N units (packages, seeds).")] = None,  # noqa: UP045
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Try failed units again.")] = False,
    split_above: Annotated[
        Optional[int], typer.Option(help="Also split modules above this many bytes into one per function.")  # noqa: UP045
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", help="Units built at once (default: 2; 0: all cores).")] = 2,
    cache_dir: CacheDirOption = None,
    data_dir: DataDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Build (or resume, or repair) a dataset in the cache; failures are logged and skipped."""
    source = open_source(name, data_dir)
    toolchain = find_toolchain(llvm)
    total = len(source.units()[:limit])
    with Progress(console=status_console, transient=True) as progress:
        task = progress.add_task(f"building {source.name}", total=total)

        def advance(unit: str, failure: str | None) -> None:
            progress.advance(task)
            if failure is not None:
                progress.console.print(f"[yellow]skipped {unit}: {failure}[/yellow]", highlight=False)

        report = build_dataset(
            source,
            toolchain,
            limit=limit,
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
    manifest.statistics = standardization(rows)
    manifest.save(directory)
    status_console.print(f"{len(rows)} rows written to {output}", highlight=False)
