"""The project's own GPU kernels (`kernels_v1/`, CUDA): ten families written here, split by family so that no
kernel of a held-out family is ever seen by a search or a model that is judged on it. Never Rodinia,
PolyBench or HeCBench (held out for evaluation)."""

from __future__ import annotations

from pathlib import Path

from stitchopt.errors import InputError

KERNEL_DIR = Path(__file__).with_name("kernels_v1")
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
}


def kernel_sources(split: str | None = None) -> list[Path]:
    """The CUDA file of every family (of `split` only, when given), in family order."""
    if split is not None and split not in set(FAMILY_SPLITS.values()):
        raise InputError(f"no kernel split {split!r}: use one of train, validation, test")
    return [KERNEL_DIR / f"{family}.cu" for family, where in FAMILY_SPLITS.items() if split in (None, where)]
