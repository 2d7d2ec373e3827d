"""Build a dataset into the user cache: units in parallel, deduplicated, resumable, failures logged.

Each finished unit is written (IR files, then the manifest) before the next is recorded, so a killed build
loses at most the units in flight; running it again skips finished units and retries nothing that failed
unless asked. Files whose checksum does not match are rebuilt with their unit. Builds of one dataset may run at
once: each records its units in the manifest as saved at that moment, under its lock.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from stitchopt.cache.store import default_cache_dir
from stitchopt.datasets.manifest import Entry, Manifest, locked_manifest
from stitchopt.datasets.normalize import normalized_sha256, split_functions
from stitchopt.datasets.sources.base import BuiltIR, Source
from stitchopt.datasets.splits import split_of
from stitchopt.diagnostics import exception_line
from stitchopt.errors import DatasetError
from stitchopt.toolchain.commands import is_probe_source
from stitchopt.toolchain.discovery import Toolchain

UnitCallback = Callable[[str, str | None], None]  # (unit, failure reason or None)


def dataset_dir(source: Source, root: Path | None = None) -> Path:
    return (root or default_cache_dir() / "datasets") / f"{source.name}-v{source.version}"


@dataclass(frozen=True)
class BuildReport:
    manifest: Manifest
    built: int  # units built by this call
    failed: int
    repaired: int  # units rebuilt because a file was missing or corrupt
    seconds: float
    bytes: int  # IR on disk


def build_dataset(
    source: Source,
    toolchain: Toolchain,
    *,
    limit: int | None = None,
    jobs: int = 2,
    root: Path | None = None,
    retry_failed: bool = False,
    only: list[str] | None = None,
    split_above_bytes: int | None = None,
    on_unit: UnitCallback | None = None,
) -> BuildReport:
    """Build the first `limit` units (all when None), or just the units in `only`. Modules larger than
    `split_above_bytes` are also split into one module per function (`name#function`); the whole module is
    kept too."""
    start = time.perf_counter()
    directory = dataset_dir(source, root)

    def new() -> Manifest:
        return Manifest(
            source.name, source.version, source.description, source.licence, f"stitchopt datasets build {source.name}"
        )

    with locked_manifest(directory, new) as manifest:
        manifest.source = source.description  # the unit list may have grown since the last build
        # Configure probes that older stitchopt versions recorded (meson's testfile.c, conftest-N.c) are dropped.
        manifest.entries = [e for e in manifest.entries if not is_probe_source(f"/{e.name}")]
        corrupt = manifest.corrupt_units(directory)
        manifest.forget(corrupt)
        if retry_failed:
            manifest.failures.clear()
    wanted = only if only is not None else source.units()[:limit]
    todo = [u for u in wanted if u not in manifest.units_done and u not in manifest.failures]
    built = failed = 0

    def run(unit: str) -> list[tuple[BuiltIR, str]]:
        with tempfile.TemporaryDirectory(prefix="stitchopt-dataset-") as scratch:
            modules = source.build(unit, toolchain, Path(scratch))
        if split_above_bytes is not None:
            large = [m for m in modules if len(m.bitcode) > split_above_bytes]
            modules = modules + [part for m in large for part in _per_function(toolchain, m)]
        return [(module, normalized_sha256(toolchain, module.bitcode)) for module in modules]

    def record(unit: str, future: Future[list[tuple[BuiltIR, str]]]) -> None:
        nonlocal manifest, built, failed
        try:
            keyed = future.result()
        except DatasetError as exc:
            reason: str | None = exception_line(exc)
            with locked_manifest(directory, new) as manifest:
                manifest.failures[unit] = reason or "failed"
            failed += 1
        else:
            reason = None
            with locked_manifest(directory, new) as manifest:
                _add(manifest, directory, unit, keyed)
            built += 1
        if on_unit is not None:
            on_unit(unit, reason)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pending = {pool.submit(run, unit): unit for unit in todo}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    record(pending.pop(future), future)
        finally:
            for future in pending:
                future.cancel()
    size = sum((directory / e.file).stat().st_size for e in manifest.entries if (directory / e.file).is_file())
    return BuildReport(manifest, built, failed, len(corrupt), time.perf_counter() - start, size)


def _per_function(toolchain: Toolchain, module: BuiltIR) -> list[BuiltIR]:
    return [
        BuiltIR(f"{module.name}#{function}", module.package, bitcode, module.command, module.language, module.split)
        for function, bitcode in split_functions(toolchain, module.bitcode).items()
    ]


def _add(manifest: Manifest, directory: Path, unit: str, keyed: list[tuple[BuiltIR, str]]) -> None:
    """Store a unit's modules (each with its normalized hash), skipping any whose normalized IR the dataset
    already has; the unit is then done (another build may have done it too)."""
    known = {e.normalized_sha256 for e in manifest.entries}
    fresh: list[tuple[BuiltIR, str]] = []
    for module, key in keyed:
        if key not in known:
            known.add(key)
            fresh.append((module, key))
    for module, key, name in _unique_names(fresh):
        digest = hashlib.sha256(module.bitcode).hexdigest()
        relative = f"ir/{_safe(name)}.bc"  # readable: module names in results come from file names
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_bytes(module.bitcode)
        manifest.entries.append(
            Entry(
                name=name,
                unit=unit,
                package=module.package,
                file=relative,
                sha256=digest,
                normalized_sha256=key,
                split=module.split or split_of(module.package),
                command=module.command,
                language=module.language,
            )
        )
    manifest.entries.sort(key=lambda e: e.name)
    if unit not in manifest.units_done:
        manifest.units_done.append(unit)


def _unique_names(fresh: list[tuple[BuiltIR, str]]) -> list[tuple[BuiltIR, str, str]]:
    """One source compiled several ways (per-CPU kernels, SIMD dispatch) gives several modules of one name:
    each then gets `@<first 8 hex of its normalized hash>`, so names, URIs and files stay distinct and do not
    depend on the order the build compiled them in."""
    counts: dict[str, int] = {}
    for module, _ in fresh:
        counts[module.name] = counts.get(module.name, 0) + 1
    return [(m, key, m.name if counts[m.name] == 1 else f"{m.name}@{key[:8]}") for m, key in fresh]


def _safe(name: str) -> str:
    """A benchmark name as a relative path inside the dataset directory."""
    parts = [part for part in name.split("/") if part not in ("", ".", "..")]
    return "/".join(parts) or "unnamed"
