"""Datasets by name, and benchmark URIs resolved to files (building what is missing, lazily).

`bench://demo-v1/<name>` is a bundled C file; other datasets resolve to the IR file of a built entry in the
user cache, and a URI whose unit is not built yet is built on the spot (e.g. one Csmith seed).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from stitchopt.core import IRModule
from stitchopt.datasets import demo
from stitchopt.datasets.build import build_dataset, dataset_dir
from stitchopt.datasets.manifest import Manifest
from stitchopt.datasets.sources.base import Source
from stitchopt.datasets.sources.bundled import DemoSource, HumanEvalSource
from stitchopt.datasets.sources.debian import DebianSource
from stitchopt.datasets.sources.generated import CsmithSource, LlvmStressSource
from stitchopt.datasets.sources.ggml_cuda import GgmlCudaSource
from stitchopt.datasets.sources.local import LocalSource
from stitchopt.datasets.sources.pypi import PypiSource
from stitchopt.datasets.splits import SPLITS
from stitchopt.datasets.uri import SCHEME, BenchmarkUri, is_benchmark_uri
from stitchopt.errors import DatasetError
from stitchopt.toolchain.device import is_device_triple, kernel_unit
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module, source_language
from stitchopt.toolchain.split import extract_function
from stitchopt.validate.suites import humaneval_path

T = TypeVar("T")
FUNCTION_SEPARATOR = "#"  # `<entry>#<function>`: one function of an entry
_built_lazily: set[Path] = set()  # dataset directories this process builds unit by unit (said once each)
DATASET_NAMES = ("demo", "csmith", "llvm-stress", "humaneval-cpp", "pypi", "debian", "ggml-cuda")
DEVICE_DATASET_NAMES = ("ggml-cuda",)  # those whose units are GPU device IR


def open_source(name: str, data_dir: Path | None = None) -> Source:
    """A source by dataset name, or a directory / compile_commands.json of the user's own code."""
    if name == "demo":
        return DemoSource()
    if name == "csmith":
        return CsmithSource()
    if name == "llvm-stress":
        return LlvmStressSource()
    if name == "humaneval-cpp":
        return HumanEvalSource(humaneval_path(data_dir))
    if name == "pypi":
        return PypiSource()
    if name == "debian":
        return DebianSource()
    if name == "ggml-cuda":
        return GgmlCudaSource()
    path = Path(name)
    if path.is_dir() or path.name == "compile_commands.json":
        return LocalSource(path)
    raise DatasetError(
        f"unknown dataset {name!r}: use one of {', '.join(DATASET_NAMES)}, a directory or a compile_commands.json"
    )


def built_manifest(name: str, version: int, root: Path | None = None) -> Manifest | None:
    source = open_source(name)
    if source.version != version:
        raise DatasetError(f"unknown dataset {name}-v{version}: this stitchopt builds {name}-v{source.version}")
    return Manifest.load(dataset_dir(source, root))


def program_path(text: str, toolchain: Toolchain, root: Path | None = None) -> Path:
    """A program argument as a file: a `bench://` URI is resolved (and built with `toolchain` if needed: the one
    the command was given, never a default found behind its back), else it is a path."""
    if not is_benchmark_uri(text):
        return Path(text)
    uri = BenchmarkUri.parse(text)
    if uri.dataset == demo.DATASET:
        return demo.resolve(uri)
    source = open_source(uri.dataset)
    if source.version != uri.version:
        raise DatasetError(f"unknown dataset {uri.dataset}-v{uri.version}: this stitchopt builds v{source.version}")
    directory = dataset_dir(source, root)
    manifest = Manifest.load(directory)
    entry = manifest.entry(uri.name) if manifest is not None else None
    if entry is None:
        unit = source.unit_of(uri.name)
        if directory not in _built_lazily:  # a label file's units can be many: say once why the wait is long
            _built_lazily.add(directory)
            warnings.warn(
                f"{uri.dataset}-v{uri.version} is not built here: building its units as they are needed (`stitchopt "
                f"datasets build {uri.dataset}` builds them all, in parallel with --jobs)",
                stacklevel=2,
            )
        report = build_dataset(source, toolchain, root=root, only=[unit])
        entry = report.manifest.entry(uri.name)
        if entry is None:
            reason = report.manifest.failures.get(unit, "the unit does not produce it")
            raise DatasetError(f"no benchmark {uri}: {reason}")
    return directory / entry.file


def benchmark_module(toolchain: Toolchain, text: str, root: Path | None = None) -> IRModule:
    """A program argument's IR. `bench://.../<entry>#<function>` that is not an entry of its own (a function
    unit of the label factory) is cut out of `<entry>` with `llvm-extract`; in GPU device code it names a
    kernel, which keeps the code it calls (`toolchain.device.kernel_unit`)."""
    entry, separator, function = text.rpartition(FUNCTION_SEPARATOR)
    if separator and is_benchmark_uri(text) and not _is_entry(text, root):
        whole = load_module(toolchain, program_path(entry, toolchain, root))
        if is_device_triple(whole.triple):
            bitcode = kernel_unit(toolchain, whole.bitcode, function)
        else:
            bitcode = extract_function(toolchain, whole.bitcode, function)
        return IRModule(
            f"{whole.name}{FUNCTION_SEPARATOR}{function}", bitcode, whole.triple, whole.source_filename, whole.language
        )
    return load_module(toolchain, program_path(text, toolchain, root))


def _is_entry(text: str, root: Path | None) -> bool:
    uri = BenchmarkUri.parse(text)
    if uri.dataset == demo.DATASET:
        return False
    manifest = built_manifest(uri.dataset, uri.version, root)
    return manifest is not None and manifest.entry(uri.name) is not None


def is_dataset_uri(text: str) -> bool:
    """`bench://<dataset>-v<N>` with no program name: a whole dataset."""
    return is_benchmark_uri(text) and "/" not in text.removeprefix(SCHEME).split("?")[0].rstrip("/")


def unit_language(uri: str) -> str | None:
    """The language a dataset unit (or one of its functions) was compiled from, by its source's suffix
    (`source_language`): a variant's name ends in `@<hash>` after it (`datasets.build`)."""
    return source_language(uri.partition(FUNCTION_SEPARATOR)[0].split("@")[0])


@dataclass(frozen=True)
class Benchmark:
    """One built program of a dataset: its URI, where its IR is, and what it is grouped by."""

    uri: str
    path: Path
    package: str
    split: str


def dataset_benchmarks(text: str, root: Path | None = None, split: str | None = None) -> list[Benchmark]:
    """Every built program of `bench://<dataset>-v<N>` (optionally one split), for commands that take many."""
    name, _, version = text.removeprefix(SCHEME).rstrip("/").rpartition("-v")
    if not name or not version.isdigit():
        raise DatasetError(f"malformed dataset URI {text!r}: expected bench://<dataset>-v<N>")
    splits = [known for known, _ in SPLITS]
    if split is not None and split not in splits:
        raise DatasetError(f"unknown split {split!r} in {text}?split={split}: use one of {', '.join(splits)}")
    manifest = built_manifest(name, int(version), root)
    if manifest is None or not manifest.entries:
        raise DatasetError(f"dataset {name}-v{version} is not built: run `stitchopt datasets build {name}`")
    directory = dataset_dir(open_source(name), root)
    return [
        Benchmark(f"{SCHEME}{name}-v{version}/{e.name}", directory / e.file, e.package, e.split)
        for e in manifest.entries
        if split is None or e.split == split
    ]


def dataset_programs(text: str, root: Path | None = None, split: str | None = None) -> list[Path]:
    return [b.path for b in dataset_benchmarks(text, root, split)]


def round_robin(benchmarks: list[Benchmark], per_package: int | None = None) -> list[Benchmark]:
    """Interleave packages (first of each, then second of each...), so that any prefix spans many packages;
    at most `per_package` of each, so that a few big packages cannot dominate."""
    return interleaved(benchmarks, lambda benchmark: benchmark.package, per_package)


def interleaved(items: Sequence[T], group: Callable[[T], str], per_group: int | None = None) -> list[T]:
    """The first item of each group (in order of first appearance), then the second of each..., at most
    `per_group` of a group."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(group(item), []).append(item)
    rounds = max(map(len, groups.values()), default=0)
    rounds = rounds if per_group is None else min(rounds, per_group)
    return [members[i] for i in range(rounds) for members in groups.values() if i < len(members)]


def select_benchmarks(
    dataset: str,
    splits: Sequence[str],
    *,
    max_ir_kb: float | None = None,
    per_package: int | None = None,
    limit: int | None = None,
) -> list[Benchmark]:
    """Programs of some splits of a built dataset (or of several, comma-separated: `bench://pypi-v1,bench://
    debian-v1`), IR files up to `max_ir_kb`, round-robin over packages with at most `per_package` of each, the
    first `limit`: how labels and evaluations pick their programs."""
    chosen = [
        b
        for name in dict.fromkeys(n.strip() for n in dataset.split(","))  # a dataset named twice: its units once
        for b in dataset_benchmarks(name)
        if b.split in splits and (max_ir_kb is None or b.path.stat().st_size <= max_ir_kb * 1024)
    ]
    ordered = round_robin(chosen, per_package)
    return ordered[:limit] if limit else ordered
