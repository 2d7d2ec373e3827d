"""`stitchopt hot FILE [--run CMD]`: the functions and blocks the hot-path model predicts hot, and, with a
run command, how that compares with a measured profile."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Optional

import typer

from stitchopt.cli.options import (
    CacheDirOption,
    JsonOption,
    LlvmOption,
    console,
    open_store,
    print_table,
    refuse_ignored,
    run_arguments,
    run_option,
)
from stitchopt.datasets.benchmarks import program_path
from stitchopt.errors import InputError
from stitchopt.hotpath.blocks import ProgramBlocks, program_blocks
from stitchopt.hotpath.evaluate import lstm, score, static_frequency
from stitchopt.hotpath.labels import function_totals, hot_functions, measured_counts
from stitchopt.hotpath.model import DEFAULT_HOT_MODEL_DIR, HotPathModel
from stitchopt.hotpath.predict import hotness, module_blocks
from stitchopt.hotpath.profile import cached_profile, front_end_ir
from stitchopt.reports.tables import Rows, to_rich
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import is_source, load_module
from stitchopt.validate.suites import source_program


def _blocks(toolchain: Toolchain, path: Path, run: str, cache_dir: Path | None) -> ProgramBlocks:
    if not is_source(path):
        if run:
            raise InputError(f"{path}: --run profiles a C/C++ source; IR files get predictions only")
        return module_blocks(toolchain, load_module(toolchain, path))  # malformed IR: one-line error here
    program = source_program(path, run_args=run_arguments(run) if run else ())
    if not run:
        return program_blocks(toolchain, path.name, front_end_ir(toolchain, program, path))
    with open_store(cache_dir) as store:
        profiled = cached_profile(toolchain, program, store)
    if profiled.annotated_ir is None:
        raise InputError(f"{path}: the profiling run wrote no profile (did it crash or time out?)")
    return program_blocks(toolchain, path.name, profiled.plain_ir, profiled.annotated_ir)


def hot_command(
    ctx: typer.Context,
    program: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    run: Annotated[str, run_option("Profile this run and compare the measured hot functions with the predicted")] = "",
    model_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--model", help="Hot-path model directory (default: the one shipped with stitchopt)."),
    ] = None,
    top: Annotated[int, typer.Option(min=1, help="Show this many functions.")] = 10,
    json_output: JsonOption = False,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Predicted hot functions and blocks (90% of executions), and the measured ones with --run."""
    if not run:
        refuse_ignored(ctx, ("cache_dir",), "with --run (it caches the profiles)")
    toolchain = find_toolchain(llvm)
    model = HotPathModel.from_pretrained(model_dir or DEFAULT_HOT_MODEL_DIR)
    blocks = _blocks(toolchain, program_path(program, toolchain), run, cache_dir)
    ranked = hotness(model, blocks)
    measured: dict[str, float] = {}
    if blocks.profiled:
        totals = function_totals(blocks, measured_counts(blocks))
        measured = {f.name: float(t / max(totals.sum(), 1)) for f, t in zip(blocks.functions, totals, strict=True)}
    if json_output:
        rows = [{**asdict(row), **({"measured_share": measured[row.name]} if measured else {})} for row in ranked]
        print(json.dumps({"program": program, "functions": rows[:top]}, indent=1))
        return
    headers = ["function", "predicted hot blocks", "P(hot) sum", "hot path", *(["measured share"] if measured else [])]
    table = [
        [
            row.name,
            f"{len(row.hot_blocks)} of {row.blocks}",
            f"{row.score:.1f}",
            " -> ".join(f"%{label}" for label in row.hot_path[:8]) + (" ..." if len(row.hot_path) > 8 else ""),
            *([f"{100 * measured[row.name]:.1f}%"] if measured else []),
        ]
        for row in ranked[:top]
    ]
    print_table(to_rich(Rows(f"{program}: predicted hotness", headers, table)))
    if blocks.profiled:
        for name, predictor in (("hot-path model", lstm(model)), ("LLVM static frequency", static_frequency)):
            s = score(name, predictor, [blocks])
            console.print(
                f"{name}: accuracy {100 * s.accuracy:.1f}%, precision {100 * s.precision:.1f}%, recall "
                f"{100 * s.recall:.1f}%, F1 {100 * s.f1:.1f}, top-5 functions {100 * s.top_functions:.0f}%",
                highlight=False,
            )
        console.print(f"measured hot functions: {', '.join(hot_functions(blocks))}", highlight=False)
