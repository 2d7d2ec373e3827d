"""Predicted hotness of a module for people and for hybrid mode: functions ranked by their expected number
of hot blocks, each with its predicted hot blocks and hot path; and the comparison with a measured profile."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stitchopt.core import IRModule
from stitchopt.errors import InputError
from stitchopt.hotpath.blocks import FunctionBlocks, ProgramBlocks, program_blocks
from stitchopt.hotpath.labels import DEFAULT_SHARE, covering, function_totals, hot_path
from stitchopt.hotpath.model import HotPathModel
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble

HYBRID_LIMIT = 8  # hot functions hybrid mode tunes one by one, at most
HOTNESS_SOURCES = ("model", "static")
DEFAULT_HOTNESS_SOURCE = "static"  # chosen on validation (docs/hot-paths.md, "Which estimate hybrid mode uses")


@dataclass(frozen=True)
class FunctionHotness:
    name: str
    score: float  # expected number of hot blocks (sum of P(hot))
    hot_blocks: tuple[str, ...]  # labels (%N) of the blocks predicted hot
    hot_path: tuple[str, ...]  # entry to exit along the likeliest successors
    blocks: int


def _path(function: FunctionBlocks, probabilities: np.ndarray) -> tuple[str, ...]:
    return tuple(function.labels[i] for i in hot_path(function, probabilities.tolist()))


def hotness(model: HotPathModel, program: ProgramBlocks) -> list[FunctionHotness]:
    """Every function, hottest first (ties by name)."""
    rows = []
    for function, probabilities in zip(program.functions, model.predict(program), strict=True):
        hot = tuple(label for label, p in zip(function.labels, probabilities, strict=True) if p >= model.threshold)
        rows.append(
            FunctionHotness(
                function.name, float(probabilities.sum()), hot, _path(function, probabilities), len(function.labels)
            )
        )
    return sorted(rows, key=lambda row: (-len(row.hot_blocks), -row.score, row.name))


def module_blocks(toolchain: Toolchain, module: IRModule) -> ProgramBlocks:
    return program_blocks(toolchain, module.name, disassemble(toolchain, module.bitcode, module.name))


def static_hot_functions(program: ProgramBlocks, share: float = DEFAULT_SHARE) -> list[str]:
    """The fewest functions covering `share` of LLVM's static estimate of the program's block executions."""
    if not program.functions:  # a file without code (an empty C file): nothing is hot
        return []
    totals = function_totals(program, np.concatenate([f.static for f in program.functions]))
    mask = covering(totals, share)
    return [program.functions[i].name for i in np.argsort(-totals, kind="stable") if mask[i]]


def predicted_hot_functions(
    toolchain: Toolchain, module: IRModule, source: str = "model", model: HotPathModel | None = None
) -> list[str]:
    """For hybrid mode without a profile, hottest first: the functions with blocks the model predicts hot
    (`source="model"`), or those LLVM's static frequencies say cover 90% of executions (`"static"`)."""
    if source not in HOTNESS_SOURCES:
        raise InputError(f"unknown hotness source {source!r}: use {' or '.join(HOTNESS_SOURCES)}")
    program = module_blocks(toolchain, module)
    if source == "static":
        return static_hot_functions(program)[:HYBRID_LIMIT]
    ranked = hotness(model or HotPathModel.from_pretrained(), program)
    return [row.name for row in ranked if row.hot_blocks][:HYBRID_LIMIT]
