"""`stitchopt cache stats | warm | clear`: the evaluation cache every evaluating command shares."""

from __future__ import annotations

from typing import Annotated

import typer

from stitchopt.cache.store import remove_store, store_path
from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    JobsOption,
    KOption,
    LlvmOption,
    ModelOption,
    console,
    open_evaluator,
    open_store,
    progress_bar,
    status_console,
    target_paths,
)
from stitchopt.learning.kinds import load_model
from stitchopt.learning.warm import warm_caches
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module

cache_app = typer.Typer(help="Inspect or clear the evaluation cache.", no_args_is_help=True)


@cache_app.command("stats")
def stats_command(cache_dir: CacheDirOption = None) -> None:
    """Entries, size on disk and results by status."""
    with open_store(cache_dir) as store:
        stats = store.stats()
    console.print(
        f"{stats.path}: {stats.entries:,} entries, {stats.file_bytes / 1e6:.1f} MB "
        f"(bound {stats.max_bytes / 1e6:.0f} MB)",
        highlight=False,
    )
    for status, count in sorted(stats.by_status.items()):
        console.print(f"  {status:<14} {count:,}")
    for kind, count in sorted(stats.artifacts_by_kind.items()):
        console.print(f"  {kind:<14} {count:,} (validation)")


@cache_app.command("warm")
def warm_command(
    targets: Annotated[list[str], typer.Argument(help="Files, directories or bench:// URIs.")],
    model_dir: ModelOption = None,
    k: KOption = 5,
    common: Annotated[
        int, typer.Option(min=0, help="Also measure the N lists most often in the top k on every unit.")
    ] = 5,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Rank every unit and measure what static and jit builds of it will ask for, ahead of the build."""
    toolchain = find_toolchain(llvm)
    paths = target_paths(targets, toolchain)
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir or DEFAULT_MODEL_DIR, catalogue)
    with (
        open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator,
        progress_bar() as progress,
    ):
        modules = [load_module(toolchain, path) for path in paths]
        task = progress.add_task("ranking", total=len(modules))
        report = warm_caches(
            evaluator,
            catalogue,
            model,
            modules,
            k=k,
            common=common,
            on_unit=lambda done, _: progress.update(task, completed=done),
        )
    status_console.print(
        f"{report.units} unit(s) ranked, {report.requests:,} compilations asked for, {report.compiled:,} not "
        f"cached before, {report.seconds:.1f} s; common lists: {len(report.common_lists)}",
        highlight=False,
    )


@cache_app.command("clear")
def clear_command(cache_dir: CacheDirOption = None) -> None:
    """Delete the evaluation cache (also one written by an incompatible stitchopt)."""
    removed = remove_store(store_path(cache_dir))
    status_console.print(
        f"removed {len(removed)} file(s)" + (f" from {removed[0].parent}" if removed else ""), highlight=False
    )
