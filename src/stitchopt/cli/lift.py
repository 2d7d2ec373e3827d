"""`stitchopt lift-eval`: lifting assembly back to IR, judged by round trip, per lifter."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer

from stitchopt.cli.options import (
    JsonOption,
    LlvmOption,
    console,
    destination,
    format_option,
    output_option,
    print_table,
    progress_bar,
    refuse_ignored,
    target_paths,
)
from stitchopt.core import IRModule
from stitchopt.errors import InputError
from stitchopt.lifting.backends import Lifter, RetrievalLifter
from stitchopt.lifting.harness import lift_eval
from stitchopt.lifting.llm_compiler import LLMCompiler
from stitchopt.lifting.pairs import make_pairs
from stitchopt.lifting.roundtrip import require_metrics
from stitchopt.reports.lifting import lift_rows
from stitchopt.reports.tables import to_markdown, to_rich
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import IR_SUFFIXES, load_module

LIFTERS = ("retrieval", "llm-compiler")
FORMATS = ("json", "md")


def _modules(toolchain: Toolchain, target: str, limit: int, max_ir_kb: float) -> list[IRModule]:
    paths = [
        p
        for p in target_paths([target], toolchain)
        if p.suffix not in IR_SUFFIXES or p.stat().st_size <= max_ir_kb * 1024
    ]
    return [load_module(toolchain, path) for path in paths[: limit or None]]


def lift_eval_command(
    ctx: typer.Context,
    inputs: Annotated[str, typer.Argument(help="A file, a directory or a bench:// URI (`?split=test`).")],
    lifter_name: Annotated[str, typer.Option("--lifter", help=f"One of {', '.join(LIFTERS)}.")] = "retrieval",
    reference: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="retrieval: the programs whose (assembly, IR) pairs are searched (never the inputs)."),
    ] = None,
    weights: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="llm-compiler: a local directory with the model and tokenizer (never downloaded)."),
    ] = None,
    limit: Annotated[int, typer.Option(min=0, help="At most this many input programs (0: all).")] = 0,
    reference_limit: Annotated[int, typer.Option(min=0, help="At most this many reference programs (0: all).")] = 0,
    max_ir_kb: Annotated[float, typer.Option(min=1, help="Skip IR files larger than this.")] = 60.0,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="llm-compiler: longest answer.")] = 4096,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the evaluation here: json (every pair's scores) or md (the table)."),
    ] = None,
    fmt: Annotated[Optional[str], format_option(FORMATS)] = None,  # noqa: UP045
    json_output: JsonOption = False,
    llvm: LlvmOption = None,
) -> None:
    """Lift each input's -Oz assembly back to IR and judge it by round trip (parse, exact match, BLEU)."""
    if lifter_name not in LIFTERS:
        raise InputError(f"unknown lifter {lifter_name!r}: use one of {', '.join(LIFTERS)}")
    if lifter_name == "llm-compiler":
        refuse_ignored(ctx, ("reference", "reference_limit"), "to the retrieval lifter")
    else:
        refuse_ignored(ctx, ("weights", "max_new_tokens"), "to the llm-compiler lifter")
    shown = destination(output, fmt, FORMATS, json_output)
    require_metrics()
    toolchain = find_toolchain(llvm)
    lifter: Lifter
    if lifter_name == "llm-compiler":
        if weights is None:
            raise InputError("the llm-compiler lifter needs --weights DIR (a local copy of the model)")
        lifter = LLMCompiler(weights, max_new_tokens=max_new_tokens)
    else:
        if reference is None:
            raise InputError("the retrieval lifter needs --reference: programs to search (not the inputs)")
        references = make_pairs(toolchain, _modules(toolchain, reference, reference_limit, max_ir_kb))
        lifter = RetrievalLifter(references.pairs)
    pairs = make_pairs(toolchain, _modules(toolchain, inputs, limit, max_ir_kb), lifter.fits)
    with progress_bar() as progress:
        task = progress.add_task(f"lifting with {lifter_name}", total=len(pairs.pairs))
        evaluation = lift_eval(toolchain, pairs, lifter, on_pair=lambda _: progress.advance(task))
    table = lift_rows([evaluation], f"{inputs}: lifting -Oz x86-64 assembly to IR")
    shown.write(
        lambda chosen: (
            json.dumps(asdict(evaluation), indent=1) + "\n" if chosen == "json" else to_markdown(table) + "\n"
        )
    )
    if not shown.tables:
        return
    print_table(to_rich(table))
    console.print(
        f"BLEU signature: {evaluation.bleu_signature or '-'}; {evaluation.split_modules} module(s) split "
        f"per function; {evaluation.seconds:.1f} s",
        highlight=False,
    )
