"""(assembly, IR) pairs as LLM Compiler's disassembly evaluation made them: the IR optimized with -Oz, lowered
by `llc` to x86-64 assembly; the assembly is the input, the optimized IR the reference. Modules whose pair
would not fit a backend's context are split per function with `llvm-extract` (LLM Compiler's evaluation did
the same); parts that still do not fit are counted, not dropped silently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stitchopt.core import CompileOptions, IRModule
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.features.ir_blocks import parse_functions
from stitchopt.toolchain.baselines import Baseline, load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import FRONTEND_TIMEOUT_S, disassemble
from stitchopt.toolchain.llvm import llc_command, opt_command
from stitchopt.toolchain.process import run_tool
from stitchopt.toolchain.split import extract_function

TRIPLE = "x86_64-unknown-linux-gnu"


@dataclass(frozen=True)
class LiftPair:
    name: str  # program, or program:function for a split module
    asm: str  # the input
    ir: str  # the reference: -Oz optimized IR text


@dataclass(frozen=True)
class PairSet:
    pairs: tuple[LiftPair, ...]
    split_modules: int  # modules cut per function because they did not fit
    too_long: tuple[str, ...]  # parts that still do not fit the context


def lower(toolchain: Toolchain, ir: bytes, options: CompileOptions) -> str:
    """x86-64 assembly of IR (text or bitcode) with the evaluator's `llc` flags."""
    done = run_tool(
        llc_command(toolchain.tool("llc"), flags=[*options.llc_flags(), f"-mtriple={TRIPLE}"], filetype="asm"),
        stdin=ir,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if done.returncode != 0 or done.timed_out:
        raise InputError(f"llc failed: {first_error(done.stderr_text) or 'timed out'}")
    return done.stdout.decode(errors="replace")


def optimize(toolchain: Toolchain, bitcode: bytes, name: str, oz: Baseline) -> str:
    """The module after clang's -Oz pipeline, as IR text."""
    done = run_tool(
        opt_command(toolchain.tool("opt"), oz.pipeline, flags=oz.options.opt_args()),
        stdin=bitcode,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if done.returncode != 0 or done.timed_out:
        raise InputError(f"{name}: opt -Oz failed: {first_error(done.stderr_text) or 'timed out'}")
    return disassemble(toolchain, done.stdout, name)


def _pair(toolchain: Toolchain, name: str, bitcode: bytes, oz: Baseline) -> LiftPair:
    ir = optimize(toolchain, bitcode, name, oz)
    return LiftPair(name, lower(toolchain, ir.encode(), oz.options), ir)


def make_pairs(
    toolchain: Toolchain, modules: Sequence[IRModule], fits: Callable[[LiftPair], bool] = lambda _: True
) -> PairSet:
    """One pair per module, or one per defined function when the whole module does not `fit`."""
    oz = load_baselines(toolchain, ("Oz",))["Oz"]
    pairs: list[LiftPair] = []
    too_long: list[str] = []
    split = 0
    for module in modules:
        whole = _pair(toolchain, module.name, module.bitcode, oz)
        if fits(whole):
            pairs.append(whole)
            continue
        split += 1
        text = disassemble(toolchain, module.bitcode, module.name)
        for function in parse_functions(text):
            part = _pair(
                toolchain,
                f"{module.name}:{function.name}",
                extract_function(toolchain, module.bitcode, function.name),
                oz,
            )
            if fits(part):
                pairs.append(part)
            else:
                too_long.append(part.name)
    return PairSet(tuple(pairs), split, tuple(too_long))
