"""Datasets without network: Csmith and llvm-stress seeds, local code, dedup, resume, repair, splits, index."""

from __future__ import annotations

import json
import multiprocessing
import time
from dataclasses import replace
from pathlib import Path

import pytest

from stitchopt.datasets.benchmarks import dataset_programs, open_source, program_path, select_benchmarks
from stitchopt.datasets.build import build_dataset, dataset_dir
from stitchopt.datasets.index import index_rows, standardization, write_parquet
from stitchopt.datasets.manifest import Manifest
from stitchopt.datasets.normalize import normalized_sha256, split_functions
from stitchopt.datasets.sources.base import BuiltIR
from stitchopt.datasets.sources.generated import CsmithSource, LlvmStressSource
from stitchopt.datasets.sources.local import LocalSource
from stitchopt.datasets.sources.pypi import PypiPackage, PypiSource
from stitchopt.datasets.splits import SPLITS, split_of
from stitchopt.errors import DatasetError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import compile_source
from stitchopt.toolchain.process import run_tool

DATA = Path(__file__).parents[1] / "data"
LOCAL = DATA / "localproj"


@pytest.mark.slow
def test_csmith_build_resumes_repairs_and_resolves_uris(toolchain: Toolchain, tmp_path: Path) -> None:
    source = CsmithSource(seeds=3)
    first = build_dataset(source, toolchain, root=tmp_path)
    assert first.built + first.failed == 3 and first.manifest.entries
    names = {e.name for e in first.manifest.entries}
    assert names <= {"1", "2", "3"}
    again = build_dataset(source, toolchain, root=tmp_path)
    assert (again.built, again.failed, again.repaired) == (0, 0, 0)
    directory = dataset_dir(source, tmp_path)
    victim = first.manifest.entries[0]
    (directory / victim.file).write_bytes(b"corrupt")
    repaired = build_dataset(source, toolchain, root=tmp_path)
    assert repaired.repaired == 1 and repaired.built == 1
    assert (directory / victim.file).read_bytes() != b"corrupt"
    path = program_path(f"bench://csmith-v1/{victim.name}", toolchain, root=tmp_path)
    assert path == directory / victim.file
    assert len(dataset_programs("bench://csmith-v1", root=tmp_path)) == len(first.manifest.entries)


def test_a_uri_builds_its_unit_lazily(toolchain: Toolchain, tmp_path: Path) -> None:
    """With the toolchain the command was given (its --llvm), which program_path takes; once per dataset a
    warning says that units are built as they are needed and how to build them all."""
    with pytest.warns(UserWarning, match="llvm-stress-v1 is not built here.*stitchopt datasets build llvm-stress"):
        path = program_path("bench://llvm-stress-v1/7", toolchain, root=tmp_path)
    assert path.is_file() and path.read_bytes()[:2] == b"BC"
    manifest = Manifest.load(dataset_dir(LlvmStressSource(), tmp_path))
    assert manifest is not None and manifest.units_done == ["7"]
    with pytest.raises(DatasetError, match="unknown dataset"):
        program_path("bench://nothing-v1/x", toolchain, root=tmp_path)


def test_local_directory_dedups_by_normalized_ir_and_splits_by_package(toolchain: Toolchain, tmp_path: Path) -> None:
    report = build_dataset(LocalSource(LOCAL), toolchain, root=tmp_path)
    names = sorted(e.name for e in report.manifest.entries)
    assert names in (["lib/scale.c", "main.c"], ["lib/scale.c", "renamed.c"])  # one of the twins is dropped
    for entry in report.manifest.entries:
        assert entry.split == split_of(entry.package)


def test_compile_commands_in_both_forms_carry_the_build_flags(toolchain: Toolchain, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "lib").mkdir(parents=True)
    for name in ("main.c", "lib/scale.c"):
        (project / name).write_text((LOCAL / name).read_text())
    database = [
        {"directory": str(project), "file": "lib/scale.c", "command": "cc -DSCALE_BY_THREE -O2 -c lib/scale.c -o s.o"},
        {"directory": str(project), "file": "main.c", "arguments": ["cc", "-O2", "-c", "main.c", "-o", "m.o"]},
    ]
    (project / "compile_commands.json").write_text(json.dumps(database))
    report = build_dataset(LocalSource(project / "compile_commands.json"), toolchain, root=tmp_path / "cache")
    assert sorted(e.name for e in report.manifest.entries) == ["lib/scale.c", "main.c"]
    scaled = report.manifest.entry("lib/scale.c")
    assert scaled is not None and "-DSCALE_BY_THREE" in scaled.command
    directory = dataset_dir(LocalSource(project / "compile_commands.json"), tmp_path / "cache")
    plain = compile_source(toolchain, LOCAL / "lib" / "scale.c")
    assert normalized_sha256(toolchain, (directory / scaled.file).read_bytes()) != normalized_sha256(toolchain, plain)


def test_normalization_and_per_function_split(toolchain: Toolchain) -> None:
    main = compile_source(toolchain, LOCAL / "main.c")
    twin = compile_source(toolchain, LOCAL / "renamed.c")
    assert main != twin and normalized_sha256(toolchain, main) == normalized_sha256(toolchain, twin)
    parts = split_functions(toolchain, compile_source(toolchain, DATA / "loop_sum.c"))
    assert {"checksum", "main"} <= set(parts) and all(p[:2] == b"BC" for p in parts.values())


def test_failed_units_are_logged_and_the_build_goes_on(
    toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens: fails at once
    source = PypiSource((PypiPackage("lz4", "4.4.5", "compression"), PypiPackage("xxhash", "4.1.0", "hashing")))
    report = build_dataset(source, toolchain, root=tmp_path)
    assert report.failed == 2 and report.built == 0
    assert all("cannot download" in reason for reason in report.manifest.failures.values())
    assert build_dataset(source, toolchain, root=tmp_path).failed == 0  # failures are not retried by default
    with pytest.raises(DatasetError, match="unknown dataset"):
        open_source("no-such-dataset")


def test_index_and_standardization(toolchain: Toolchain, tmp_path: Path, store) -> None:  # type: ignore[no-untyped-def]
    report = build_dataset(LocalSource(LOCAL), toolchain, root=tmp_path)
    directory = dataset_dir(LocalSource(LOCAL), tmp_path)
    with Evaluator(toolchain, store) as evaluator:
        rows = index_rows(report.manifest, directory, evaluator)
    assert {r["uri"] for r in rows} == {f"bench://local-localproj-v1/{e.name}" for e in report.manifest.entries}
    assert all(r["size_oz"] <= r["size_o0"] for r in rows)
    stats = standardization(rows)
    train = [r for r in rows if r["split"] == "train"]
    assert stats["size_oz"]["count"] == len(train or rows)
    pyarrow = pytest.importorskip("pyarrow.parquet")
    write_parquet(rows, tmp_path / "index.parquet")
    assert pyarrow.read_table(tmp_path / "index.parquet").num_rows == len(rows)


class _OneSourceTwoBuilds:
    """A unit that compiles one file twice with different flags, as BLIS does per CPU and numpy per SIMD level."""

    name, version, licence, description = "twice", 1, "test", "scale.c with and without -DSCALE_BY_THREE"

    def __init__(self, toolchain: Toolchain) -> None:
        self.toolchain = toolchain

    def units(self) -> list[str]:
        return ["lib"]

    def unit_of(self, name: str) -> str:
        return "lib"

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        source = LOCAL / "lib" / "scale.c"
        builds = [compile_source(toolchain, source, extra_args=flags) for flags in ([], ["-DSCALE_BY_THREE"])]
        return [BuiltIR("lib/scale.c", "lib", bitcode) for bitcode in builds]


def test_one_source_built_twice_gives_two_entries_that_stay_intact(toolchain: Toolchain, tmp_path: Path) -> None:
    source = _OneSourceTwoBuilds(toolchain)
    report = build_dataset(source, toolchain, root=tmp_path)
    names = sorted(e.name for e in report.manifest.entries)
    assert len(names) == 2 and all(n.startswith("lib/scale.c@") for n in names)
    again = build_dataset(source, toolchain, root=tmp_path)
    assert again.repaired == 0 and len(again.manifest.entries) == 2  # no file overwrote the other
    manifest = again.manifest
    probe = replace(manifest.entries[0], name="lib/meson-private/tmp1/testfile.c", unit="lib")
    manifest.entries.append(probe)
    manifest.save(dataset_dir(source, tmp_path))
    assert probe.name not in {e.name for e in build_dataset(source, toolchain, root=tmp_path).manifest.entries}


class _OneFunctionPerUnit:
    """Units `a0`.. and `b0`.., each a module with one empty function of the unit's name."""

    name, version, licence, description = "functions", 1, "test", "one function per unit"

    def units(self) -> list[str]:
        return [f"{group}{n}" for group in "ab" for n in range(5)]

    def unit_of(self, name: str) -> str:
        return name

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        text = f"define void @{unit}() {{\n  ret void\n}}\n".encode()
        return [BuiltIR(unit, unit, run_tool([toolchain.tool("llvm-as"), "-", "-o", "-"], stdin=text).stdout)]


def test_two_builds_at_once_lose_no_entries(
    toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As when a training run builds a missing unit while `datasets build` runs: two processes build halves of
    one dataset, and the manifest ends with both halves. A slow disk (each save waits a little) makes sure the
    two overlap between loading the manifest and saving it."""
    save = Manifest.save

    def slow_save(manifest: Manifest, directory: Path) -> None:
        time.sleep(0.05)
        save(manifest, directory)

    monkeypatch.setattr(Manifest, "save", slow_save)
    source = _OneFunctionPerUnit()
    fork = multiprocessing.get_context("fork")
    builds = [
        fork.Process(
            target=build_dataset,
            args=(source, toolchain),
            kwargs={"root": tmp_path, "jobs": 1, "only": [u for u in source.units() if u.startswith(group)]},
        )
        for group in "ab"
    ]
    for build in builds:
        build.start()
    for build in builds:
        build.join(60)
    assert [build.exitcode for build in builds] == [0, 0]
    manifest = Manifest.load(dataset_dir(source, tmp_path))
    assert manifest is not None
    assert sorted(e.name for e in manifest.entries) == sorted(manifest.units_done) == source.units()


def test_several_datasets_are_selected_together_round_robin(
    toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STITCHOPT_CACHE_DIR", str(tmp_path))
    build_dataset(CsmithSource(seeds=2), toolchain)
    build_dataset(LlvmStressSource(seeds=2), toolchain)
    splits = [name for name, _ in SPLITS]
    both = select_benchmarks("bench://csmith-v1, bench://llvm-stress-v1", splits)
    one = select_benchmarks("bench://csmith-v1", splits)
    other = select_benchmarks("bench://llvm-stress-v1", splits)
    assert sorted(b.uri for b in both) == sorted(b.uri for b in one + other) and one and other
    datasets = [b.uri.split("/")[2] for b in both]
    assert datasets[:2] in (["csmith-v1", "llvm-stress-v1"], ["llvm-stress-v1", "csmith-v1"])  # interleaved
    assert select_benchmarks("bench://csmith-v1,bench://csmith-v1", splits) == one  # named twice: its units once
