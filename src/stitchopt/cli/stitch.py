"""`stitchopt stitch train | predict | table | inspect`: model stitching from the command line (all but
`inspect`, which only reads a saved study, need the `stitch` extra: PyTorch and POT)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from stitchopt.cli.learn import print_ranking
from stitchopt.cli.options import (
    CacheDirOption,
    JsonOption,
    LlvmOption,
    TopOption,
    console,
    destination,
    format_option,
    open_store,
    output_option,
    print_table,
    refuse_ignored,
    require_stitch_extra,
    status_console,
)
from stitchopt.datasets.benchmarks import program_path
from stitchopt.features.base import FeatureCache
from stitchopt.labels.labelset import LabelSet
from stitchopt.labels.shards import load_matrix
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.ranker import geomean_change
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.document import generated_now, to_html
from stitchopt.reports.stitching import comparisons, curve_rows, expert_rows, load_report, pair_rows, study_json
from stitchopt.reports.stitching_html import stitching_report
from stitchopt.reports.tables import to_markdown, to_rich
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import load_module, module_language

TABLE_FORMATS = ("json", "md")
stitch_app = typer.Typer(
    help="Model stitching: experts per representation joined by stitching layers.", no_args_is_help=True
)


@stitch_app.command("table")
def table_command(
    ctx: typer.Context,
    labels: Annotated[
        Path,
        typer.Argument(help="Labels of the train and validation splits: a file (`labels pool`) or a label directory."),
    ],
    held_out: Annotated[Path, typer.Argument(help="Labels of held-out programs, same list pool: scores only.")],
    epochs: Annotated[int, typer.Option(min=1, help="Most training epochs per expert or layer.")] = 300,
    hidden: Annotated[int, typer.Option(min=1, help="Hidden units per expert.")] = 256,
    model: Annotated[Path, typer.Option(help="Flag-tuning model whose coreset lists the experts rank.")] = (
        DEFAULT_MODEL_DIR
    ),
    seed: Annotated[int, typer.Option(min=0, help="Seed of every initialization and batch order.")] = 0,
    pairs: Annotated[bool, typer.Option(help="Stitch every ordered pair (the slowest part).")] = True,
    exclude_package: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Also score the held-out programs without this package."),
    ] = None,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option(
            "Write the study here: json (read by `stitch inspect` and `report model --study`) or md (the tables)."
        ),
    ] = None,
    fmt: Annotated[Optional[str], format_option(TABLE_FORMATS)] = None,  # noqa: UP045
    json_output: JsonOption = False,
    llm_compiler: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="A local LLM Compiler model directory: its hidden states become one more expert."),
    ] = None,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Train one expert per representation, stitch every pair, grow stitched ensembles; print the tables."""
    shown = destination(output, fmt, TABLE_FORMATS, json_output)
    if not shown.tables and shown.fmt != "md":
        refuse_ignored(ctx, ("exclude_package",), "to the tables (not to the JSON study)")
    require_stitch_extra()
    from stitchopt.stitching.experts import TrainConfig
    from stitchopt.stitching.study import run_study

    toolchain = find_toolchain(llvm)
    lists = FlagModel.from_pretrained(model, load_catalogue(toolchain)).labelled_lists()  # the labels' columns
    extra = []
    if llm_compiler is not None:
        from stitchopt.lifting.llm_compiler import LLMCompiler
        from stitchopt.lifting.llm_expert import LLMCompilerRepresentation

        extra.append(LLMCompilerRepresentation(LLMCompiler(llm_compiler)))
    with open_store(cache_dir) as store:
        report = run_study(
            toolchain,
            load_matrix(labels),
            LabelSet.load(held_out),
            lists,
            TrainConfig(epochs=epochs, seed=seed),
            hidden=hidden,
            cache=FeatureCache(store),
            pairs=pairs,
            extra=extra,
        )
    tables = [
        rows
        for rows in (
            expert_rows(report, exclude_package),
            pair_rows(report, exclude_package),
            curve_rows(report, exclude_package),
        )
        if rows.rows
    ]
    shown.write(
        lambda chosen: study_json(report) if chosen == "json" else "".join(to_markdown(rows) + "\n" for rows in tables)
    )
    if not shown.tables:
        return
    for rows in tables:
        print_table(to_rich(rows))
    for line in comparisons(report):
        console.print(line)


@stitch_app.command("train")
def train_command(
    labels: Annotated[
        Path,
        typer.Argument(help="Labels of the train and validation splits: a file (`labels pool`) or a label directory."),
    ],
    output: Annotated[Path, output_option("Model directory to write.", directory=True)],
    model: Annotated[Path, typer.Option(help="Flag-tuning model whose coreset lists the experts rank.")] = (
        DEFAULT_MODEL_DIR
    ),
    epochs: Annotated[int, typer.Option(min=1, help="Most training epochs per expert or layer.")] = 300,
    hidden: Annotated[int, typer.Option(min=1, help="Hidden units per expert.")] = 256,
    seed: Annotated[int, typer.Option(min=0, help="Seed of every initialization and batch order.")] = 0,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Train one expert per representation and keep the stitched ensemble that is best on the validation split."""
    require_stitch_extra()
    from stitchopt.stitching.experts import TrainConfig
    from stitchopt.stitching.model import train_stitched

    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    flag = FlagModel.from_pretrained(model, catalogue)
    with open_store(cache_dir) as store:
        trained, grown = train_stitched(
            toolchain,
            catalogue,
            load_matrix(labels),
            flag.labelled_lists(),  # the labels' columns
            TrainConfig(epochs=epochs, seed=seed),
            hidden=hidden,
            cache=FeatureCache(store),
        )
    trained = replace(trained, lists=flag.lists)  # built as the flag model builds them: its finish included
    trained.save_pretrained(output)
    for ensemble in grown:
        change = 100 * geomean_change(np.array(ensemble.validation))
        status_console.print(f"k={len(ensemble.members)}  validation {change:+.2f}%  {' + '.join(ensemble.members)}")
    status_console.print(f"model -> {output}: {' + '.join(trained.members)}, {len(trained.lists)} lists")


@stitch_app.command("predict")
def predict_command(
    program: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    model: Annotated[Path, typer.Option(help="A stitched model directory (`stitchopt stitch train`).")],
    top: TopOption = 10,
    json_output: JsonOption = False,
    llvm: LlvmOption = None,
) -> None:
    """Rank a stitched model's lists for one program (what `stitchopt predict` does for the shipped model)."""
    require_stitch_extra()
    from stitchopt.stitching.model import StitchedModel

    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    loaded = StitchedModel.from_pretrained(model, catalogue)
    module = load_module(toolchain, program_path(program, toolchain))
    start = time.perf_counter()
    ranked = loaded.rank(toolchain, module)
    elapsed_ms = 1000 * (time.perf_counter() - start)
    language = module_language(module)
    print_ranking(program, ranked[:top], catalogue, elapsed_ms, json_output, language=language)


@stitch_app.command("inspect")
def inspect_command(
    study: Annotated[Path, typer.Argument(help="A study written by `stitchopt stitch table -o study.json`.")],
    output: Annotated[Path, output_option("HTML page to write.")] = Path("stitching.html"),
    exclude_package: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Also score the held-out programs without this package."),
    ] = None,
) -> None:
    """Write one self-contained HTML page: penalties, transport plans, ensemble curve, experts (no extra needed)."""
    output.write_text(to_html(stitching_report(study, load_report(study), exclude_package), generated_now()))
    status_console.print(f"wrote {output}")
