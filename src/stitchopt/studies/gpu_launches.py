"""How to run labelled kernels (the project's own, datasets/kernels_v1, and llama.cpp's simpler ones of
`bench://ggml-cuda-v1`): grid, block, shared memory and seeded inputs per kernel, for the GPU timing script
(benchmarks/gpu_timing.py). numpy only, so that the GPU machine needs no LLVM:
cubins are built beforehand, here they are only launched.

Inputs are sized for tens of microseconds to a few milliseconds per launch on an H200 (most under 0.1 ms: the
kernels are mostly memory-bound); every output buffer starts at zero (or at its input's copy), so one launch's
outputs are comparable between two builds of the same kernel.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

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


GRID2D = 4096  # the 2D kernels' images and grids: 4096 x 4096, 16 x 16 threads a block
TILE2D = (16, 16, 1)


def _two_d(arguments: list[Argument], columns: int = GRID2D, rows: int = GRID2D) -> Launch:
    return Launch((columns // 16, rows // 16, 1), TILE2D, 0, arguments)


def _image_to_image(rng: np.random.Generator) -> Launch:
    """jacobi2d, jacobi2d_tiled, blur_rows and blur_columns: a float image in, one out, its width and height."""
    image = Buffer(rng.standard_normal(GRID2D * GRID2D).astype(np.float32))
    out = Buffer(np.zeros(GRID2D * GRID2D, np.float32), True)
    return _two_d([image, out, np.int32(GRID2D), np.int32(GRID2D)])


def _laplace(rng: np.random.Generator) -> Launch:
    n = 256
    u = Buffer(rng.standard_normal(n**3))
    return _two_d([u, Buffer(np.zeros(n**3), True), np.int32(n), np.float64(0.5)], n, n)


def _sum_tree(rng: np.random.Generator) -> Launch:
    n, blocks = 1 << 24, 1024
    arguments: list[Argument] = [Buffer(rng.random(n, dtype=np.float32)), Buffer(np.zeros(blocks, np.float32), True)]
    return Launch((blocks, 1, 1), (BLOCK, 1, 1), BLOCK * 4, [*arguments, np.int32(n)])


def _argmax(rng: np.random.Generator) -> Launch:
    n, blocks = 1 << 24, 1024
    values, indices = Buffer(np.zeros(blocks, np.float32), True), Buffer(np.zeros(blocks, np.int32), True)
    return Launch(
        (blocks, 1, 1), (BLOCK, 1, 1), 0, [Buffer(rng.random(n, dtype=np.float32)), np.int32(n), values, indices]
    )


def _block_scan(rng: np.random.Generator) -> Launch:
    n = 1 << 22  # each block of 256 threads scans 512 values
    data = Buffer(rng.integers(-100, 100, n, dtype=np.int32))
    out, sums = Buffer(np.zeros(n, np.int32), True), Buffer(np.zeros(n // 512, np.int32), True)
    return Launch((n // 512, 1, 1), (BLOCK, 1, 1), 2 * BLOCK * 4, [data, out, sums, np.int32(n)])


def _add_block_sums(rng: np.random.Generator) -> Launch:
    n = 1 << 22
    data = Buffer(rng.integers(-100, 100, n, dtype=np.int32), True)
    sums = Buffer(rng.integers(-1000, 1000, n // 512, dtype=np.int32))
    return Launch((n // 512, 1, 1), (BLOCK, 1, 1), 0, [data, sums, np.int32(n)])


MATRIX = 1024  # the matrix products: 1024 x 1024 x 1024


def _gemm_naive(rng: np.random.Generator) -> Launch:
    a, b = (Buffer(rng.standard_normal(MATRIX * MATRIX).astype(np.float32)) for _ in range(2))
    c = Buffer(rng.standard_normal(MATRIX * MATRIX).astype(np.float32), True)
    sizes = [np.int32(MATRIX)] * 3
    return _two_d([*sizes, np.float32(1.5), a, b, np.float32(0.5), c], MATRIX, MATRIX)


def _gemm_tiled(rng: np.random.Generator) -> Launch:
    a, b = (Buffer(rng.standard_normal(MATRIX * MATRIX).astype(np.float32)) for _ in range(2))
    c = Buffer(np.zeros(MATRIX * MATRIX, np.float32), True)
    return _two_d([*[np.int32(MATRIX)] * 3, a, b, c], MATRIX, MATRIX)


def _gemm_register4(rng: np.random.Generator) -> Launch:
    a, b = (Buffer(rng.standard_normal(MATRIX * MATRIX)) for _ in range(2))
    c = Buffer(np.zeros(MATRIX * MATRIX), True)
    return _two_d([*[np.int32(MATRIX)] * 3, a, b, c], MATRIX // 4, MATRIX)  # four columns a thread


def _bfs_bottom_up(rng: np.random.Generator) -> Launch:
    vertices = 1 << 20
    row_ptr, cols, _ = _csr(rng, vertices, vertices)
    levels = np.where(rng.random(vertices) < 0.1, 3, -1).astype(np.int32)  # a tenth reached at level 3
    arguments: list[Argument] = [Buffer(row_ptr), Buffer(cols), np.int32(vertices), Buffer(levels, True)]
    return Launch(_grid(vertices), (BLOCK, 1, 1), 0, [*arguments, np.int32(3), Buffer(np.zeros(1, np.int32), True)])


def _sobel(rng: np.random.Generator) -> Launch:
    image = Buffer(rng.integers(0, 256, GRID2D * GRID2D, dtype=np.uint8))
    out = Buffer(np.zeros(GRID2D * GRID2D, np.uint8), True)
    return _two_d([image, out, np.int32(GRID2D), np.int32(GRID2D)])


def _rgb_to_grey(rng: np.random.Generator) -> Launch:
    pixels = GRID2D * GRID2D
    rgb = Buffer(rng.integers(0, 256, 3 * pixels, dtype=np.uint8))
    return Launch(_grid(pixels), (BLOCK, 1, 1), 0, [rgb, Buffer(np.zeros(pixels, np.uint8), True), np.int32(pixels)])


def _transpose_naive(rng: np.random.Generator) -> Launch:
    matrix = Buffer(rng.standard_normal(GRID2D * GRID2D).astype(np.float32))
    out = Buffer(np.zeros(GRID2D * GRID2D, np.float32), True)
    return _two_d([matrix, out, np.int32(GRID2D), np.int32(GRID2D)])


def _transpose_tiled(rng: np.random.Generator) -> Launch:
    """32 x 32 tiles, 32 x 8 threads a block (each thread copies four rows of its tile)."""
    launched = _transpose_naive(rng)
    return replace(launched, grid=(GRID2D // 32, GRID2D // 32, 1), block=(32, 8, 1))


def _transpose_batched(rng: np.random.Generator) -> Launch:
    n, batches = 32, 4096  # one 32 x 32 matrix of doubles a block, staged in 8 KiB of shared memory
    matrices = Buffer(rng.standard_normal(batches * n * n))
    out = Buffer(np.zeros(batches * n * n), True)
    return Launch((batches, 1, 1), (BLOCK, 1, 1), n * n * 8, [matrices, out, np.int32(n)])


GEMV_ROWS, GEMV_COLUMNS = 8192, 2048  # 64 MiB of floats


def _gemv(threads_per_row: int) -> Callable[[np.random.Generator], Launch]:
    def launch(rng: np.random.Generator) -> Launch:
        a = Buffer(rng.standard_normal(GEMV_ROWS * GEMV_COLUMNS).astype(np.float32))
        x = Buffer(rng.standard_normal(GEMV_COLUMNS).astype(np.float32))
        y = Buffer(np.zeros(GEMV_ROWS, np.float32), True)
        arguments: list[Argument] = [np.int32(GEMV_ROWS), np.int32(GEMV_COLUMNS), a, x, y]
        return Launch(_grid(GEMV_ROWS * threads_per_row), (BLOCK, 1, 1), 0, arguments)

    return launch


def _gemv_transposed(rng: np.random.Generator) -> Launch:
    rows, columns = 2048, 4096  # doubles, a thread per column
    a, x = Buffer(rng.standard_normal(rows * columns)), Buffer(rng.standard_normal(rows))
    y = Buffer(np.zeros(columns), True)
    return Launch(_grid(columns), (BLOCK, 1, 1), 0, [np.int32(rows), np.int32(columns), a, x, y])


def _axpy(rng: np.random.Generator) -> Launch:
    x = Buffer(rng.standard_normal(1 << 24).astype(np.float32))
    y = Buffer(rng.standard_normal(1 << 24).astype(np.float32), True)
    return Launch((1024, 1, 1), (BLOCK, 1, 1), 0, [np.int32(1 << 24), np.float32(0.75), x, y])


FFT_LOG2 = 22  # 4 Mi complex floats


def _complex_signal(rng: np.random.Generator, output: bool) -> Buffer:
    return Buffer(rng.standard_normal(2 << FFT_LOG2).astype(np.float32), output)


def _bit_reverse(rng: np.random.Generator) -> Launch:
    out = Buffer(np.zeros(2 << FFT_LOG2, np.float32), True)
    arguments: list[Argument] = [_complex_signal(rng, False), out, np.int32(FFT_LOG2)]
    return Launch(_grid(1 << FFT_LOG2), (BLOCK, 1, 1), 0, arguments)


def _butterfly_stage(rng: np.random.Generator) -> Launch:
    n = 1 << FFT_LOG2
    arguments: list[Argument] = [_complex_signal(rng, True), np.int32(n), np.int32(1 << 10)]
    return Launch(_grid(n // 2), (BLOCK, 1, 1), 0, arguments)


def _fft1024(rng: np.random.Generator) -> Launch:
    return Launch(((1 << FFT_LOG2) // 1024, 1, 1), (BLOCK, 1, 1), 0, [_complex_signal(rng, True)])


SIGNAL = 1 << 24


def _conv1d(rng: np.random.Generator) -> Launch:
    signal = Buffer(rng.standard_normal(SIGNAL).astype(np.float32))
    width = 33
    filter_taps = Buffer((rng.random(width, dtype=np.float32) / width).astype(np.float32))
    out = Buffer(np.zeros(SIGNAL, np.float32), True)
    return Launch(_grid(SIGNAL), (BLOCK, 1, 1), 0, [signal, filter_taps, out, np.int32(SIGNAL), np.int32(width)])


def _conv1d_tiled(rng: np.random.Generator) -> Launch:
    signal = Buffer(rng.standard_normal(SIGNAL).astype(np.float32))
    out = Buffer(np.zeros(SIGNAL, np.float32), True)
    return Launch(_grid(SIGNAL), (BLOCK, 1, 1), (BLOCK + 16) * 4, [signal, out, np.int32(SIGNAL)])


def _conv2d(rng: np.random.Generator) -> Launch:
    image = Buffer(rng.standard_normal(GRID2D * GRID2D).astype(np.float32))
    filter_taps = Buffer((rng.random(25, dtype=np.float32) / 25).astype(np.float32))
    out = Buffer(np.zeros(GRID2D * GRID2D, np.float32), True)
    return _two_d([image, filter_taps, out, np.int32(GRID2D), np.int32(GRID2D)])


SOFTMAX_ROWS, SOFTMAX_COLUMNS = 1 << 14, 1024


def _logits(rng: np.random.Generator) -> Buffer:
    return Buffer((4 * rng.standard_normal(SOFTMAX_ROWS * SOFTMAX_COLUMNS)).astype(np.float32))


def _softmax_block(rng: np.random.Generator) -> Launch:
    out = Buffer(np.zeros(SOFTMAX_ROWS * SOFTMAX_COLUMNS, np.float32), True)
    return Launch((SOFTMAX_ROWS, 1, 1), (BLOCK, 1, 1), BLOCK * 4, [_logits(rng), out, np.int32(SOFTMAX_COLUMNS)])


def _log_softmax_warp(rng: np.random.Generator) -> Launch:
    out = Buffer(np.zeros(SOFTMAX_ROWS * SOFTMAX_COLUMNS, np.float32), True)
    arguments: list[Argument] = [_logits(rng), out, np.int32(SOFTMAX_ROWS), np.int32(SOFTMAX_COLUMNS)]
    return Launch(_grid(SOFTMAX_ROWS * 32), (BLOCK, 1, 1), 0, arguments)


def _cross_entropy(rng: np.random.Generator) -> Launch:
    labels = Buffer(rng.integers(0, SOFTMAX_COLUMNS, SOFTMAX_ROWS, dtype=np.int32))
    loss = Buffer(np.zeros(SOFTMAX_ROWS, np.float32), True)
    arguments: list[Argument] = [_logits(rng), labels, loss, np.int32(SOFTMAX_ROWS), np.int32(SOFTMAX_COLUMNS)]
    return Launch(_grid(SOFTMAX_ROWS), (BLOCK, 1, 1), 0, arguments)


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


SEQUENCES, SEQUENCE_TOKENS, CHANNELS = 4, 256, 2048  # llama.cpp's recurrent kernels: a batch of 4 x 256 tokens
TOKENS = SEQUENCES * SEQUENCE_TOKENS


def _per_token(rng: np.random.Generator, low: float, high: float) -> Buffer:
    return Buffer(rng.uniform(low, high, TOKENS * CHANNELS).astype(np.float32))


def _heads(rng: np.random.Generator, head: int, parameters: list[Argument], arrays: list[Argument]) -> Launch:
    """rwkv_wkv_f32, rwkv_wkv7_f32 and gated_linear_attn_f32 as ggml launches them: one block a (sequence, head)
    of `head` threads; B, T, C and H, the kernel's own parameters, its arrays, the state in, and the output
    (every token's value, then the state out)."""
    heads = CHANNELS // head
    state = Buffer(rng.uniform(-0.5, 0.5, SEQUENCES * CHANNELS * head).astype(np.float32))
    dst = Buffer(np.zeros(TOKENS * CHANNELS + SEQUENCES * CHANNELS * head, np.float32), True)
    sizes = [np.int32(SEQUENCES), np.int32(TOKENS), np.int32(CHANNELS), np.int32(heads)]
    return Launch((SEQUENCES * heads, 1, 1), (head, 1, 1), 0, [*sizes, *parameters, *arrays, state, dst])


def _rwkv6(head: int) -> Callable[[np.random.Generator], Launch]:
    """k, v, r, the first-token bonus tf (one a channel) and the decay td (in (0.5, 1), so that the state stays
    bounded over the tokens)."""

    def build(rng: np.random.Generator) -> Launch:
        k, v, r = (_per_token(rng, -1, 1) for _ in range(3))
        tf = Buffer(rng.uniform(-1, 1, CHANNELS).astype(np.float32))
        return _heads(rng, head, [], [k, v, r, tf, _per_token(rng, 0.5, 1)])

    return build


def _rwkv7(head: int) -> Callable[[np.random.Generator], Launch]:
    """r, the decay w, k, v, and the small a and b of the state's rank-one update."""

    def build(rng: np.random.Generator) -> Launch:
        r, w, k, v = _per_token(rng, -1, 1), _per_token(rng, 0.5, 1), _per_token(rng, -1, 1), _per_token(rng, -1, 1)
        a, b = _per_token(rng, -0.1, 0.1), _per_token(rng, -0.1, 0.1)
        return _heads(rng, head, [], [r, w, k, v, a, b])

    return build


def _gated_linear_attention(head: int) -> Callable[[np.random.Generator], Launch]:
    """The scale, then k, v, r and the decay td."""

    def build(rng: np.random.Generator) -> Launch:
        k, v, r = (_per_token(rng, -1, 1) for _ in range(3))
        return _heads(rng, head, [np.float32(0.125)], [k, v, r, _per_token(rng, 0.5, 1)])

    return build


def _ssm_scan(tokens: int) -> Callable[[np.random.Generator], Launch]:
    """Mamba-1's selective scan (ssm_scan_f32<128, 16, L>, L the tokens a sequence or 0 for any) over contiguous
    ggml tensors: the state s [16, 1, inner, sequences], x and dt [inner, tokens, sequences], A [16, inner], B and
    C [16, 1, tokens, sequences], the sequences' state slots, and dst (y, then the state out); byte strides as
    ggml passes them."""
    return lambda rng: _ssm_scan_launch(rng, tokens)


def _ssm_scan_launch(rng: np.random.Generator, tokens: int) -> Launch:
    inner, state, f = 1024, 16, 4
    elements = inner * tokens * SEQUENCES

    def floats(count: int, low: float, high: float) -> Buffer:
        return Buffer(rng.uniform(low, high, count).astype(np.float32))

    arrays: list[Argument] = [
        floats(SEQUENCES * inner * state, -0.5, 0.5),
        floats(elements, -1, 1),
        floats(elements, -4, 1),  # dt before its softplus
        floats(inner * state, -4, -0.5),
        floats(SEQUENCES * tokens * state, -1, 1),
        floats(SEQUENCES * tokens * state, -1, 1),
        Buffer(rng.permutation(SEQUENCES).astype(np.int32)),
        Buffer(np.zeros(elements + SEQUENCES * inner * state, np.float32), True),
    ]
    row, token_row, cell = state * f, inner * f, inner * tokens * f
    strides = [row, row * inner, token_row, cell, token_row, cell, row, row, row * tokens, row, row * tokens]
    sizes = [np.int64(elements * f), np.int64(inner), np.int64(tokens)]
    shared = 128 * (state + 1) * 2 * f  # asked for by ggml's launch, unused by the kernel
    return Launch((SEQUENCES, inner // 128, 1), (128, 1, 1), shared, [*arrays, *map(np.int32, strides), *sizes])


# Kernel (mangled name, as in the cubin) -> its launch with seeded inputs: every kernel of the project's but
# two whose outputs depend on the order of atomics (bfs_top_down's queue, sum_shuffle's float sum),
# llama.cpp's arange, scale, softcap, norm and ssm_scan kernels (test families) and its wkv and gla kernels
# (validation).
LAUNCHES: dict[str, Callable[[np.random.Generator], Launch]] = {
    "_Z8jacobi2dPKfPfii": _image_to_image,
    "_Z14jacobi2d_tiledPKfPfii": _image_to_image,
    "_Z9laplace3dPKdPdid": _laplace,
    "_Z8sum_treePKfPfi": _sum_tree,
    "_Z6argmaxPKfiPfPi": _argmax,
    "_Z10block_scanPKiPiS1_i": _block_scan,
    "_Z14add_block_sumsPiPKii": _add_block_sums,
    "_Z10gemm_naiveiiifPKfS0_fPf": _gemm_naive,
    "_Z10gemm_tilediiiPKfS0_Pf": _gemm_tiled,
    "_Z14gemm_register4iiiPKdS0_Pd": _gemm_register4,
    "_Z13bfs_bottom_upPKiS0_iPiiS1_": _bfs_bottom_up,
    "_Z9blur_rowsPKfPfii": _image_to_image,
    "_Z12blur_columnsPKfPfii": _image_to_image,
    "_Z5sobelPKhPhii": _sobel,
    "_Z11rgb_to_greyPK6uchar3Phi": _rgb_to_grey,
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
    "_Z15transpose_naivePKfPfii": _transpose_naive,
    "_Z15transpose_tiledPKfPfii": _transpose_tiled,
    "_Z17transpose_batchedPKdPdi": _transpose_batched,
    "_Z9gemv_rowsiiPKfS0_Pf": _gemv(1),
    "_Z9gemv_warpiiPKfS0_Pf": _gemv(32),
    "_Z15gemv_transposediiPKdS0_Pd": _gemv_transposed,
    "_Z4axpyifPKfPf": _axpy,
    "_Z11bit_reversePK6float2PS_i": _bit_reverse,
    "_Z15butterfly_stageP6float2ii": _butterfly_stage,
    "_Z14fft1024_sharedP6float2": _fft1024,
    "_Z6conv1dPKfS0_Pfii": _conv1d,
    "_Z12conv1d_tiledPKfPfi": _conv1d_tiled,
    "_Z10conv2d_5x5PKfS0_Pfii": _conv2d,
    "_Z13softmax_blockPKfPfi": _softmax_block,
    "_Z16log_softmax_warpPKfPfii": _log_softmax_warp,
    "_Z13cross_entropyPKfPKiPfii": _cross_entropy,
    "_ZL10arange_f32Pfiff": _arange,
    "_ZL9scale_f32PKfPfffi": _elementwise,
    "_ZL11softcap_f32PKfPfffi": _elementwise,
    "_ZL8norm_f32ILi1024EEvPKfPfilllf": lambda rng: _rows(rng, 4096, 1024, False),
    "_ZL11l2_norm_f32ILi1024EEvPKfPfilllf": lambda rng: _rows(rng, 4096, 1024, False),
    "_ZL12rms_norm_f32ILi1024ELb0EEvPKfPfilllfS1_llliiii": lambda rng: _rows(rng, 4096, 1024, True),
    "_ZL12rms_norm_f32ILi32ELb0EEvPKfPfilllfS1_llliiii": lambda rng: _rows(rng, 512, 32, True),
    "_ZL14group_norm_f32ILi1024EEvPKfPfiif": _group_norm,
    "_ZL17rms_norm_back_f32ILi1024EEvPKfS1_Pfif": _rms_norm_back,
    "_ZL12rwkv_wkv_f32ILi64EEviiiiPKfS1_S1_S1_S1_S1_Pf": _rwkv6(64),
    "_ZL12rwkv_wkv_f32ILi128EEviiiiPKfS1_S1_S1_S1_S1_Pf": _rwkv6(128),
    "_ZL13rwkv_wkv7_f32ILi64EEviiiiPKfS1_S1_S1_S1_S1_S1_Pf": _rwkv7(64),
    "_ZL13rwkv_wkv7_f32ILi128EEviiiiPKfS1_S1_S1_S1_S1_S1_Pf": _rwkv7(128),
    "_ZL21gated_linear_attn_f32ILi64EEviiiifPKfS1_S1_S1_S1_Pf": _gated_linear_attention(64),
    "_ZL21gated_linear_attn_f32ILi128EEviiiifPKfS1_S1_S1_S1_Pf": _gated_linear_attention(128),
    **{
        f"_Z12ssm_scan_f32ILm128ELm16ELm{length}EEvPKfS1_S1_S1_S1_S1_PKiPfiiiiiiiiiiilll": _ssm_scan(length or 64)
        for length in (0, 2, 4, 6, 8)
    },
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


def _graph(rng: np.random.Generator, nodes: int, degree: int) -> tuple[np.ndarray, np.ndarray]:
    """row_ptr and cols of a graph of `degree` edges a node, as omp/bfs.c builds it."""
    return np.arange(0, nodes * degree + 1, degree, dtype=np.int32), rng.integers(0, nodes, nodes * degree, np.int32)


def _omp_bfs(rng: np.random.Generator) -> dict[str, Argument]:
    nodes = 1 << 14
    row_ptr, cols = _graph(rng, nodes, 8)
    level = np.where(rng.random(nodes) < 0.05, 0, -1).astype(np.int32)  # the frontier: a twentieth of the nodes
    arrays = {"level": Buffer(level), "changed": Buffer(np.zeros(1, np.int32))}
    return {**arrays, "depth": np.int32(0), "row_ptr": Buffer(row_ptr), "cols": Buffer(cols)}


def _omp_spmv(rng: np.random.Generator) -> dict[str, Argument]:
    rows, per_row = 1 << 14, 16
    row_ptr, cols = _graph(rng, rows, per_row)
    vals = rng.random(rows * per_row, dtype=np.float32)
    x, y = rng.standard_normal(rows).astype(np.float32), np.zeros(rows, np.float32)
    arrays = {"row_ptr[0:rows + 1]": Buffer(row_ptr), "cols[0:nnz]": Buffer(cols), "vals[0:nnz]": Buffer(vals)}
    return {"rows": np.int32(rows), **arrays, "x[0:rows]": Buffer(x), "y[0:rows]": Buffer(y)}


def _omp_scan(rng: np.random.Generator) -> dict[str, Argument]:
    even = rng.integers(-3, 4, 1 << 18, np.int32)
    odd = np.zeros(1 << 18, np.int32)
    return {"from_even": np.int32(1), "offset": np.int32(4), "even": Buffer(even), "odd": Buffer(odd)}


def _omp_sort(rng: np.random.Generator) -> dict[str, Argument]:
    return {"first": np.int32(1), "keys": Buffer(rng.integers(0, 100000, 1024, np.uint32))}


def _omp_nbody_forces(rng: np.random.Generator) -> dict[str, Argument]:
    acc = np.zeros(3 * 2048, np.float32)
    return {"pos": Buffer(_bodies(rng, 2048)), "soft2": np.float32(1e-3), "acc": Buffer(acc)}


def _omp_nbody_update(rng: np.random.Generator) -> dict[str, Argument]:
    vel, acc = (rng.standard_normal(3 * 2048).astype(np.float32) for _ in range(2))
    pos = Buffer(_bodies(rng, 2048))
    return {"vel": Buffer(vel), "acc": Buffer(acc), "dt": np.float32(1e-3), "pos": pos}


def _omp_transpose(rng: np.random.Generator) -> dict[str, Argument]:
    rows, columns = 768, 1000
    matrix = rng.standard_normal(rows * columns).astype(np.float32)
    out = Buffer(np.zeros(rows * columns, np.float32))
    return {
        "rows": np.int32(rows),
        "columns": np.int32(columns),
        "in[0:rows * columns]": Buffer(matrix),
        "out[0:rows * columns]": out,
    }


def _omp_fft_stage(rng: np.random.Generator) -> dict[str, Argument]:
    re, im = (Buffer(rng.standard_normal(1 << 14).astype(np.float32)) for _ in range(2))
    return {"half": np.int32(16), "out_re": re, "out_im": im}


def _omp_cross_entropy(rng: np.random.Generator) -> dict[str, Argument]:
    rows, columns = 2048, 500
    probabilities = Buffer(rng.random(rows * columns, dtype=np.float32))
    labels = Buffer(((np.arange(rows) * 31) % columns).astype(np.int32))
    return {"loss": Buffer(np.zeros(rows, np.float32)), "probabilities": probabilities, "labels": labels}


def _omp_samples(rng: np.random.Generator) -> Buffer:
    return Buffer(rng.integers(0, 4096, 1 << 20, np.int32))


def _omp_sum(rng: np.random.Generator) -> dict[str, Argument]:
    return {"samples": _omp_samples(rng), "sum": Buffer(np.zeros(1, np.int64))}


def _omp_shift(rng: np.random.Generator) -> dict[str, Argument]:
    return {"samples": _omp_samples(rng), "mean": np.int32(2047)}


# The arguments of OpenMP target regions whose parameters the device IR cannot size or fill by itself (scalars,
# array sections, index arrays), by `<family>#<region>` (the unit's name in bench://kernels-v1/omp/) and then by
# the names the region's map items have in the host IR (`toolchain.offload.region_parameters`): values as each
# program's main gives them, a loop's scalar at one of its iterations; every array is compared after the run
# (`openmp_launch`: a list that writes an array the region only reads is caught too).
OPENMP_ARGUMENTS: dict[str, Callable[[np.random.Generator], dict[str, Argument]]] = {
    "bfs#__omp_offloading_bfs_l17": _omp_bfs,
    "spmv#__omp_offloading_spmv_l8": _omp_spmv,
    "scan#__omp_offloading_prefix_sum_l12": _omp_scan,
    "sort#__omp_offloading_sort_l11": _omp_sort,
    "nbody#__omp_offloading_step_l10": _omp_nbody_forces,
    "nbody#__omp_offloading_step_l25": _omp_nbody_update,
    "transpose#__omp_offloading_transpose_l11": _omp_transpose,
    "fft#__omp_offloading_stage_l21": _omp_fft_stage,
    "softmax#__omp_offloading_cross_entropy_l22": _omp_cross_entropy,
    "reduction#__omp_offloading_center_l13": _omp_sum,
    "reduction#__omp_offloading_center_l16": _omp_shift,
}
