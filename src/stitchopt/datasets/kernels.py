"""The project's own GPU kernels (`kernels_v1/`, CUDA): fifteen families written here, split by family so that no
kernel of a held-out family is ever seen by a search or a model that is judged on it. Never Rodinia,
PolyBench or HeCBench (held out for evaluation). `bench://kernels-v1/<family>` names a family's file and
`bench://kernels-v1/<family>#<kernel>` one kernel of it (the kernel alone: `toolchain.device.kernel_unit`).
`kernels_v1/omp/<family>.c` are OpenMP target versions of every family (whole programs that map data, each
with a main that makes its inputs and prints a checksum of its results; `omp/expected.json` holds what each
prints), in their family's split: `bench://kernels-v1/omp/<family>[#<region>]` (a region named without the
file IDs clang puts in it, `__omp_offloading_<function>_l<line>`)."""

from __future__ import annotations

import json
from pathlib import Path

from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR
from stitchopt.datasets.uri import BenchmarkUri
from stitchopt.errors import DatasetError, InputError

KERNEL_DIR = Path(__file__).with_name("kernels_v1")
KERNELS_DATASET, KERNELS_VERSION = "kernels", 1
KERNELS_URI = f"bench://{KERNELS_DATASET}-v{KERNELS_VERSION}/"
OPENMP_PREFIX = "omp/"  # bench://kernels-v1/omp/<family>: the family's OpenMP program
FAMILY_SPLITS = {
    "stencil": "train",
    "reduction": "train",
    "scan": "train",
    "gemm": "train",
    "bfs": "train",
    "image": "train",
    "sort": "validation",
    "histogram": "test",
    "spmv": "test",
    "nbody": "test",
    # the thirteenth session's families, so that the device model is judged on families no earlier choice saw
    "transpose": "train",
    "gemv": "train",
    "fft": "validation",
    "convolution": "test",
    "softmax": "test",
}


def kernel_sources(split: str | None = None) -> list[Path]:
    """The CUDA file of every family (of `split` only, when given), in family order."""
    if split is not None and split not in set(FAMILY_SPLITS.values()):
        raise InputError(f"no kernel split {split!r}: use one of train, validation, test")
    return [KERNEL_DIR / f"{family}.cu" for family, where in FAMILY_SPLITS.items() if split in (None, where)]


def offload_sources(split: str | None = None) -> list[Path]:
    """The OpenMP target program of every family that has one (of `split` only, when given), in family order."""
    if split is not None and split not in set(FAMILY_SPLITS.values()):
        raise InputError(f"no kernel split {split!r}: use one of train, validation, test")
    found = [KERNEL_DIR / "omp" / f"{family}.c" for family, where in FAMILY_SPLITS.items() if split in (None, where)]
    return [path for path in found if path.is_file()]


def offload_expected_output(source: Path) -> str:
    """What the OpenMP program `source` (one of `offload_sources()`) prints when it runs correctly."""
    expected: dict[str, str] = json.loads((KERNEL_DIR / "omp" / "expected.json").read_text())
    return expected[source.stem]


def kernel_uri_source(text: str) -> tuple[Path, str | None]:
    """The file a `bench://kernels-v1/[omp/]<family>[#<kernel>]` URI names (CUDA, or with `omp/` the OpenMP
    program), and the kernel (None: all)."""
    uri = BenchmarkUri.parse(text)
    form = f"bench://{KERNELS_DATASET}-v{KERNELS_VERSION}/[{OPENMP_PREFIX}]<family>[#<kernel>]"
    if (uri.dataset, uri.version) != (KERNELS_DATASET, KERNELS_VERSION):
        raise DatasetError(f"{text}: GPU kernels are {form}")
    name, separator, kernel = uri.name.partition(FUNCTION_SEPARATOR)
    if separator and not kernel:
        raise DatasetError(f"{text}: no kernel after {FUNCTION_SEPARATOR!r}; name one, or drop it for the whole file")
    family = name.removeprefix(OPENMP_PREFIX)
    if family not in FAMILY_SPLITS:
        raise DatasetError(f"{text}: no kernel family {family!r}; the families are {', '.join(FAMILY_SPLITS)}")
    source = KERNEL_DIR / "omp" / f"{family}.c" if name.startswith(OPENMP_PREFIX) else KERNEL_DIR / f"{family}.cu"
    return source, kernel or None
