"""A program's blocks as numbers: per block a feature vector, LLVM's static frequency scaled to the whole
program, loop depth, successors and, when profiled, the measured execution count."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from stitchopt.features.ir_blocks import Function, parse_functions
from stitchopt.hotpath.analysis import FunctionAnalysis, analyse, without_profile
from stitchopt.toolchain.discovery import Toolchain

OPCODE_GROUPS = {
    "load": {"load"},
    "store": {"store"},
    "call": {"call", "invoke", "callbr"},
    "branch": {"br", "switch", "indirectbr"},
    "return": {"ret"},
    "compare": {"icmp", "fcmp"},
    "arithmetic": {
        "add",
        "sub",
        "mul",
        "udiv",
        "sdiv",
        "urem",
        "srem",
        "shl",
        "lshr",
        "ashr",
        "and",
        "or",
        "xor",
        "fadd",
        "fsub",
        "fmul",
        "fdiv",
        "frem",
        "fneg",
    },
    "address": {"getelementptr"},
    "phi": {"phi"},
    "alloca": {"alloca"},
    "cast": {
        "trunc",
        "zext",
        "sext",
        "fptrunc",
        "fpext",
        "fptoui",
        "fptosi",
        "uitofp",
        "sitofp",
        "ptrtoint",
        "inttoptr",
        "bitcast",
        "addrspacecast",
    },
    "select": {"select"},
}
FEATURES = (
    "log instructions",
    *(f"share {group}" for group in OPCODE_GROUPS),
    "log calls (not intrinsics)",
    "successors",
    "predecessors",
    "is entry",
    "returns",
    "unreachable",
    "loop depth",
    "loop header",
    "log static frequency in function",
    "log static frequency in program",
    "position in function",
    "log blocks in function",
    "is main",
    "log static call sites of function",
    "log static calls of function",
    "inline or template code (linkonce_odr)",
    "static frequency percentile in program",
    "log share of program static frequency",
)
MAX_ESTIMATE = 1e12
PROPAGATION_ROUNDS = 8


@dataclass(frozen=True)
class FunctionBlocks:
    name: str
    labels: tuple[str, ...]
    features: np.ndarray  # blocks x len(FEATURES)
    static: np.ndarray  # LLVM's static frequency times the function's estimated calls: a program-wide estimate
    loop_depth: np.ndarray
    successors: tuple[tuple[int, ...], ...]
    counts: np.ndarray | None  # measured executions per block; None when not profiled


@dataclass(frozen=True)
class ProgramBlocks:
    name: str
    functions: tuple[FunctionBlocks, ...]

    @property
    def profiled(self) -> bool:
        return bool(self.functions) and all(f.counts is not None for f in self.functions)


def call_estimates(functions: list[Function], analyses: Mapping[str, FunctionAnalysis]) -> dict[str, float]:
    """How often each function runs, from static block frequencies along the call graph: functions nobody
    calls directly (main, callbacks) run once; a call site adds its block's frequency times its caller's
    (self-recursive calls are left out: their depth is unknown statically)."""
    sites: dict[str, list[tuple[str, float]]] = defaultdict(list)  # callee -> (caller, block frequency)
    defined = {f.name for f in functions}
    for function in functions:
        freqs = analyses[function.name].frequencies
        for block, freq in zip(function.blocks, freqs, strict=False):
            sites_here = [c for c in block.callees if c in defined and c != function.name]  # recursion: unknown depth
            for callee in sites_here:
                sites[callee].append((function.name, freq))
    estimate = {f.name: 1.0 for f in functions}
    for _ in range(PROPAGATION_ROUNDS):
        estimate = {
            f.name: min(
                MAX_ESTIMATE,
                (0.0 if sites[f.name] else 1.0) + sum(estimate[caller] * freq for caller, freq in sites[f.name]),
            )
            for f in functions
        }
    return estimate


def _block_features(
    function: Function, analysis: FunctionAnalysis, estimate: float, call_sites: int, calls: float
) -> np.ndarray:
    index = function.index()
    predecessors = [0] * len(function.blocks)
    for block in function.blocks:
        for successor in block.successors:
            if successor in index:
                predecessors[index[successor]] += 1
    rows = []
    last = max(len(function.blocks) - 1, 1)
    for i, block in enumerate(function.blocks):
        count = len(block.opcodes)
        shares = [sum(op in group for op in block.opcodes) / count for group in OPCODE_GROUPS.values()]
        intrinsics = sum(c.startswith("llvm.") for c in block.callees)
        freq = analysis.frequencies[i] if i < len(analysis.frequencies) else 0.0
        rows.append(
            [
                math.log1p(count),
                *shares,
                math.log1p(max(len(block.callees) - intrinsics, 0)),
                len(block.successors),
                predecessors[i],
                float(i == 0),
                float("ret" in block.opcodes),
                float("unreachable" in block.opcodes),
                analysis.loop_depth.get(block.label, 0),
                float(block.label in analysis.loop_headers),
                math.log(freq + 1e-9),
                math.log(freq * estimate + 1e-9),
                i / last,
                math.log1p(len(function.blocks)),
                float(function.name == "main"),
                math.log1p(call_sites),
                math.log1p(calls),
                float(function.linkage.startswith("linkonce")),
            ]
        )
    return np.array(rows, dtype=np.float64).reshape(len(function.blocks), len(FEATURES) - 2)


def program_blocks(toolchain: Toolchain, name: str, plain_ir: str, annotated_ir: str | None = None) -> ProgramBlocks:
    """Features from the plain IR; counts from the annotated one when given (same blocks, same order)."""
    plain = without_profile(plain_ir)
    functions = [f for f in parse_functions(plain) if f.blocks]
    analyses = analyse(toolchain, plain)
    counted = analyse(toolchain, annotated_ir) if annotated_ir is not None else {}
    functions = [f for f in functions if f.name in analyses and len(analyses[f.name].frequencies) == len(f.blocks)]
    estimates = call_estimates(functions, analyses)
    site_counts: dict[str, int] = defaultdict(int)
    call_weights: dict[str, float] = defaultdict(float)
    for function in functions:
        for block, freq in zip(function.blocks, analyses[function.name].frequencies, strict=True):
            for callee in block.callees:
                site_counts[callee] += 1
                call_weights[callee] += freq * estimates[function.name]
    result = []
    for function in functions:
        analysis = analyses[function.name]
        features = _block_features(
            function, analysis, estimates[function.name], site_counts[function.name], call_weights[function.name]
        )
        index = function.index()
        measured = counted.get(function.name)
        counts = None
        if annotated_ir is not None:
            # functions the run never entered carry no counts: zero executions
            values = measured.counts if measured is not None else None
            counts = np.array(
                values if values and len(values) == len(function.blocks) else [0] * len(function.blocks),
                dtype=np.float64,
            )
        result.append(
            FunctionBlocks(
                function.name,
                tuple(b.label for b in function.blocks),
                features,
                np.array(analysis.frequencies, dtype=np.float64) * estimates[function.name],
                np.array([analysis.loop_depth.get(b.label, 0) for b in function.blocks], dtype=np.float64),
                tuple(tuple(index[s] for s in b.successors if s in index) for b in function.blocks),
                counts,
            )
        )
    return ProgramBlocks(name, tuple(_with_program_columns(result)))


def _with_program_columns(functions: list[FunctionBlocks]) -> list[FunctionBlocks]:
    """Scale-free views of the static estimate (its percentile among the program's blocks, its share of the
    program's total), so that programs of very different sizes look alike to a model."""
    if not functions:
        return functions
    estimate = np.concatenate([f.static for f in functions])
    ranks = np.argsort(np.argsort(estimate, kind="stable"), kind="stable") / max(len(estimate) - 1, 1)
    share = np.log(estimate / max(estimate.sum(), 1e-300) + 1e-12)
    sizes = np.cumsum([len(f.labels) for f in functions])[:-1]
    return [
        replace(f, features=np.column_stack([f.features, r, s]))
        for f, r, s in zip(functions, np.split(ranks, sizes), np.split(share, sizes), strict=True)
    ]
