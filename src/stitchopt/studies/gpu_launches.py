"""How to run labelled kernels (the project's own, datasets/kernels_v1, and llama.cpp's simpler ones of
`bench://ggml-cuda-v1`): grid, block, shared memory and seeded inputs per kernel, for the GPU timing script
(benchmarks/gpu_timing.py). numpy only, so that the GPU machine needs no LLVM:
cubins are built beforehand, here they are only launched.

Inputs are sized for a few hundred microseconds to a few milliseconds per launch on a current data-centre GPU;
every output buffer starts at zero (or at its input's copy), so one launch's outputs are comparable between
two builds of the same kernel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

BLOCK = 256


@dataclass(frozen=True)
class Buffer:
    """A device array: copied in before the launch; read back after it when `output`."""

    data: np.ndarray
    output: bool = False


Argument = Buffer | np.generic


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    arguments: list[Argument]


def _grid(items: int, per_block: int = BLOCK) -> tuple[int, int, int]:
    return (-(-items // per_block), 1, 1)


def _csr(rng: np.random.Generator, rows: int, columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random sparse matrix in CSR form, 0 to 32 entries a row."""
    lengths = rng.integers(0, 33, rows)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    cols = rng.integers(0, columns, int(row_ptr[-1])).astype(np.int32)
    vals = rng.standard_normal(int(row_ptr[-1])).astype(np.float32)
    return row_ptr, cols, vals


def _histogram_bytes(rng: np.random.Generator) -> Launch:
    n = 1 << 24
    data = rng.integers(0, 256, n, dtype=np.uint8)
    return Launch((1024, 1, 1), (BLOCK, 1, 1), 0, [Buffer(data), np.int32(n), Buffer(np.zeros(256, np.uint32), True)])


def _histogram_float(rng: np.random.Generator) -> Launch:
    n, bins = 1 << 22, 1024
    values = rng.random(n, dtype=np.float32)
    arguments: list[Argument] = [Buffer(values), np.int32(n), np.float32(0), np.float32(1), np.int32(bins)]
    return Launch((1024, 1, 1), (BLOCK, 1, 1), 0, [*arguments, Buffer(np.zeros(bins, np.uint32), True)])


def _spmv_csr(per_row: int) -> Callable[[np.random.Generator], Launch]:
    def launch(rng: np.random.Generator) -> Launch:
        rows = 1 << 18
        row_ptr, cols, vals = _csr(rng, rows, rows)
        x = rng.standard_normal(rows).astype(np.float32)
        arguments: list[Argument] = [np.int32(rows), Buffer(row_ptr), Buffer(cols), Buffer(vals), Buffer(x)]
        return Launch(_grid(rows * per_row), (BLOCK, 1, 1), 0, [*arguments, Buffer(np.zeros(rows, np.float32), True)])

    return launch


def _spmv_ell(rng: np.random.Generator) -> Launch:
    rows, width = 1 << 18, 16
    cols = rng.integers(0, rows, (width, rows)).astype(np.int32)
    cols[rng.random((width, rows)) < 0.25] = -1  # padding entries
    vals = rng.standard_normal((width, rows))
    x = rng.standard_normal(rows)
    arguments: list[Argument] = [np.int32(rows), np.int32(width), Buffer(cols.ravel()), Buffer(vals.ravel())]
    return Launch(_grid(rows), (BLOCK, 1, 1), 0, [*arguments, Buffer(x), Buffer(np.zeros(rows), True)])


def _bodies(rng: np.random.Generator, n: int) -> np.ndarray:
    bodies = rng.standard_normal((n, 4)).astype(np.float32)
    bodies[:, 3] = rng.random(n, dtype=np.float32) + 0.5  # masses
    return bodies.ravel()


def _nbody_forces(rng: np.random.Generator) -> Launch:
    n = 16384
    arguments: list[Argument] = [Buffer(_bodies(rng, n)), Buffer(np.zeros(3 * n, np.float32), True), np.int32(n)]
    return Launch(_grid(n), (BLOCK, 1, 1), BLOCK * 16, [*arguments, np.float32(1e-3)])


def _leapfrog(rng: np.random.Generator) -> Launch:
    n = 1 << 22
    bodies = Buffer(_bodies(rng, n), True)
    velocities = Buffer(rng.standard_normal(3 * n).astype(np.float32), True)
    accelerations = Buffer(rng.standard_normal(3 * n).astype(np.float32))
    return Launch(_grid(n), (BLOCK, 1, 1), 0, [bodies, velocities, accelerations, np.int32(n), np.float32(1e-3)])


def _sort_step(rng: np.random.Generator) -> Launch:
    n = 1 << 22
    keys = Buffer(rng.integers(0, 1 << 32, n, dtype=np.uint32), True)
    return Launch(_grid(n), (BLOCK, 1, 1), 0, [keys, np.int32(512), np.int32(1024)])


def _sort_block(rng: np.random.Generator) -> Launch:
    n = 1 << 22  # each block of 256 threads sorts 512 keys
    return Launch((n // 512, 1, 1), (BLOCK, 1, 1), 0, [Buffer(rng.standard_normal(n).astype(np.float32), True)])


def _radix_count(rng: np.random.Generator) -> Launch:
    n, blocks = 1 << 24, 1024
    keys = Buffer(rng.integers(0, 1 << 32, n, dtype=np.uint32))
    counts = Buffer(np.zeros(blocks * 16, np.uint32), True)
    return Launch((blocks, 1, 1), (BLOCK, 1, 1), 0, [keys, np.int32(n), np.int32(8), counts])


ELEMENTS = 1 << 24  # llama.cpp's element-wise and row kernels: 64 MiB of floats


def _arange(rng: np.random.Generator) -> Launch:
    dst = Buffer(np.zeros(ELEMENTS, np.float32), True)
    return Launch(_grid(ELEMENTS), (BLOCK, 1, 1), 0, [dst, np.int32(ELEMENTS), np.float32(-3.5), np.float32(0.25)])


def _elementwise(rng: np.random.Generator) -> Launch:
    """scale_f32 and softcap_f32: x, dst, two float parameters, the count (256 threads a block, as llama.cpp)."""
    x = Buffer(rng.standard_normal(ELEMENTS).astype(np.float32))
    dst = Buffer(np.zeros(ELEMENTS, np.float32), True)
    return Launch(_grid(ELEMENTS), (BLOCK, 1, 1), 0, [x, dst, np.float32(0.7), np.float32(1.5), np.int32(ELEMENTS)])


def _rows(rng: np.random.Generator, columns: int, block: int, multiply_arguments: bool) -> Launch:
    """norm_f32, l2_norm_f32 and rms_norm_f32 over contiguous rows: one block a row, as llama.cpp launches them
    (1024 threads for rows of 1024 columns or more, a warp otherwise); rms_norm's multiplier absent."""
    rows = ELEMENTS // columns
    strides = [np.int64(columns), np.int64(ELEMENTS), np.int64(ELEMENTS)]
    arguments: list[Argument] = [
        Buffer(rng.standard_normal(ELEMENTS).astype(np.float32)),
        Buffer(np.zeros(ELEMENTS, np.float32), True),
        np.int32(columns),
        *strides,
        np.float32(1e-6),
    ]
    if multiply_arguments:  # mul (unread without do_multiply), its three strides and four extents
        arguments += [Buffer(np.zeros(1, np.float32)), *[np.int64(0)] * 3, *[np.int32(1)] * 4]
    return Launch((rows, 1, 1), (block, 1, 1), 0, arguments)


def _group_norm(rng: np.random.Generator) -> Launch:
    group = 1 << 16
    x = Buffer(rng.standard_normal(ELEMENTS).astype(np.float32))
    dst = Buffer(np.zeros(ELEMENTS, np.float32), True)
    arguments: list[Argument] = [x, dst, np.int32(group), np.int32(ELEMENTS), np.float32(1e-6)]
    return Launch((ELEMENTS // group, 1, 1), (1024, 1, 1), 0, arguments)


def _rms_norm_back(rng: np.random.Generator) -> Launch:
    columns = 4096
    grad = Buffer(rng.standard_normal(ELEMENTS).astype(np.float32))
    xf = Buffer(rng.standard_normal(ELEMENTS).astype(np.float32))
    dst = Buffer(np.zeros(ELEMENTS, np.float32), True)
    arguments: list[Argument] = [grad, xf, dst, np.int32(columns), np.float32(1e-6)]
    return Launch((ELEMENTS // columns, 1, 1), (1024, 1, 1), 0, arguments)


# Kernel (mangled name, as in the cubin) -> its launch with seeded inputs: the held-out families (histogram,
# SpMV, n-body; llama.cpp's arange, scale, softcap and norm) and the validation family sort.
LAUNCHES: dict[str, Callable[[np.random.Generator], Launch]] = {
    "_Z16histogram_globalPKhiPj": _histogram_bytes,
    "_Z16histogram_sharedPKhiPj": _histogram_bytes,
    "_Z15histogram_floatPKfiffiPj": _histogram_float,
    "_Z15spmv_csr_scalariPKiS0_PKfS2_Pf": _spmv_csr(1),
    "_Z15spmv_csr_vectoriPKiS0_PKfS2_Pf": _spmv_csr(32),
    "_Z8spmv_elliiPKiPKdS2_Pd": _spmv_ell,
    "_Z12nbody_forcesPK6float4P6float3if": _nbody_forces,
    "_Z8leapfrogP6float4P6float3PKS1_if": _leapfrog,
    "_Z12bitonic_stepPjii": _sort_step,
    "_Z13bitonic_blockPf": _sort_block,
    "_Z11radix_countPKjiiPj": _radix_count,
    "_ZL10arange_f32Pfiff": _arange,
    "_ZL9scale_f32PKfPfffi": _elementwise,
    "_ZL11softcap_f32PKfPfffi": _elementwise,
    "_ZL8norm_f32ILi1024EEvPKfPfilllf": lambda rng: _rows(rng, 4096, 1024, False),
    "_ZL11l2_norm_f32ILi1024EEvPKfPfilllf": lambda rng: _rows(rng, 4096, 1024, False),
    "_ZL12rms_norm_f32ILi1024ELb0EEvPKfPfilllfS1_llliiii": lambda rng: _rows(rng, 4096, 1024, True),
    "_ZL12rms_norm_f32ILi32ELb0EEvPKfPfilllfS1_llliiii": lambda rng: _rows(rng, 512, 32, True),
    "_ZL14group_norm_f32ILi1024EEvPKfPfiif": _group_norm,
    "_ZL17rms_norm_back_f32ILi1024EEvPKfS1_Pfif": _rms_norm_back,
}


def launch(kernel: str, seed: int = 0) -> Launch:
    """The launch of `kernel` with inputs drawn from `seed` (the same for every build of it)."""
    return LAUNCHES[kernel](np.random.default_rng(seed))


def argument_types(launch: Launch) -> list[str]:
    """The PTX parameter type each argument is passed as: pointers are .u64, scalars their own width."""
    kinds = {"int32": "u32", "uint32": "u32", "float32": "f32", "float64": "f64", "int64": "u64"}
    return ["u64" if isinstance(a, Buffer) else kinds[a.dtype.name] for a in launch.arguments]


def ptx_parameter_types(ptx: str, kernel: str) -> list[str]:
    """The `.param` types of `kernel`'s `.entry` in PTX (signed and bit types read as their unsigned width)."""
    start = ptx.index(f".entry {kernel}(")
    header = ptx[start : ptx.index(")", start)]
    types = re.findall(r"\.param \.(\w+) ", header)
    return [{"s32": "u32", "b32": "u32", "s64": "u64", "b64": "u64"}.get(t, t) for t in types]
