"""`stitchopt plugin path|export`: the clang plugin that runs the model inside the compiler, and its model file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from stitchopt.cli.options import CacheDirOption, JsonOption, LlvmOption, open_store, output_option, status_console
from stitchopt.errors import InputError
from stitchopt.labels.shards import load_matrix
from stitchopt.learning.kinds import load_model
from stitchopt.learning.train import fast_policy_for_model
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.plugin_file import PLUGIN_MODEL_NAME, write_plugin_model
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.plugin_library import plugin_path

plugin_app = typer.Typer(
    help="The clang pass plugin: `clang -Oz -fpass-plugin=$(stitchopt plugin path)` runs the model in any build.",
    no_args_is_help=True,
)


@plugin_app.command("path")
def path_command(json_output: JsonOption = False) -> None:
    """Print the plugin's path, for -fpass-plugin= (and opt's -load-pass-plugin=)."""
    found = plugin_path()
    if json_output:
        print(json.dumps({"plugin": str(found), "model": str(DEFAULT_MODEL_DIR / PLUGIN_MODEL_NAME)}))
    else:
        print(found)


@plugin_app.command("export")
def export_command(
    model_dir: Annotated[
        Path,
        typer.Argument(help="A flag-tuning model directory (`stitchopt train -o`), or `default` (the shipped one)."),
    ],
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option(f"File to write (default: MODEL_DIR/{PLUGIN_MODEL_NAME}, where STITCHOPT_MODEL finds it)."),
    ] = None,
    labels: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="For a model trained before fast margins were learned: the labels it was trained on (a label "
            "directory or file), on which the margin is cross-validated (the dataset must be built)."
        ),
    ] = None,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Write the model as the plugin reads it, its lists spelled for this LLVM."""
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    if model_dir == Path("default") and not model_dir.exists():
        model_dir = DEFAULT_MODEL_DIR
    model = load_model(model_dir, catalogue)
    if not isinstance(model, FlagModel):
        raise InputError(f"{model_dir} is a stitched model: the plugin runs flag-tuning models (`stitchopt train`)")
    fast = None
    if labels is not None:
        with open_store(cache_dir) as store:
            fast, skipped = fast_policy_for_model(model, toolchain, load_matrix(labels), store)
        status_console.print(
            f"fast margin cross-validated on {model.trained_on.get('programs', '?')} training programs less "
            f"{len(skipped)} whose IR this machine does not reproduce",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    target = output or model_dir / PLUGIN_MODEL_NAME
    write_plugin_model(model, catalogue, target, fast)
    fast = fast or model.fast
    said = (
        "no fast margin (trained before margins were learned: give --labels, or retrain it)"
        if fast is None
        else f"fast margin {fast.margin:.3g} (held out: {fast.built:.0%} of units built with a list, "
        f"{fast.grown:.0%} grown, {fast.change:+.2%} geomean vs -Oz)"
    )
    status_console.print(
        f"wrote {target}: {len(model.lists)} lists; {said}", highlight=False, markup=False, soft_wrap=True
    )
