"""`stitchopt security check | study`: each function's vulnerability risk and what a pass list would remove of the
security-relevant code -Oz keeps; the detection study on Juliet (needs the `stitch` extra: PyTorch and POT)."""

from __future__ import annotations

import json
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from stitchopt.cache.store import EvaluationStore
from stitchopt.cli.options import (
    CacheDirOption,
    JobsOption,
    JsonOption,
    LlvmOption,
    console,
    destination,
    open_store,
    output_option,
    passes_option,
    print_table,
    require_stitch_extra,
    status_console,
    target_paths,
    writable_directory_output,
)
from stitchopt.diagnostics import exception_line
from stitchopt.errors import InputError, StitchoptError
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import check_pipeline, pipeline_from_text
from stitchopt.reports.tables import Rows, to_rich
from stitchopt.toolchain.baselines import Baseline, load_baselines
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.validate.security_guard import HardeningError, compare_security, describe
from stitchopt.vulnerability.analyzers import ANALYZERS
from stitchopt.vulnerability.functions import program_functions
from stitchopt.vulnerability.shipped import DEFAULT_DETECTOR_DIR

if TYPE_CHECKING:  # PyTorch is imported only when a command runs the detector
    from stitchopt.vulnerability.model import DetectorModel

security_app = typer.Typer(
    help="Security: vulnerability risk per function, and what a pass list removes that -Oz keeps.",
    no_args_is_help=True,
)


@security_app.command("check")
def check_command(
    targets: Annotated[list[str], typer.Argument(help="C/C++/.ll/.bc files and directories of them.")],
    passes: Annotated[
        str, passes_option("A pass list (flat 'sroa,instcombine' or a pipeline): also say what it removes vs -Oz")
    ] = "",
    model: Annotated[Path, typer.Option(help="A detector model directory (`security study --save-model`).")] = (
        DEFAULT_DETECTOR_DIR
    ),
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the findings here as JSON."),
    ] = None,
    json_output: JsonOption = False,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Each function's risk of being vulnerable (how much it looks like Juliet's flawed functions, flagged at a
    threshold calibrated on ordinary code; what it means is printed under the table) and its likeliest CWE; with
    -p, the security-relevant code the list removes relative to -Oz (exit 1 when it removes any)."""
    require_stitch_extra()
    from stitchopt.vulnerability.model import DetectorModel

    shown = destination(output, None, ("json",), json_output)
    toolchain = find_toolchain(llvm)
    paths = target_paths(targets, toolchain)
    detector = DetectorModel.from_pretrained(model)
    pipeline = None
    if passes:
        pipeline = pipeline_from_text(passes, load_catalogue(toolchain))
        check_pipeline(toolchain, pipeline)
    oz = load_baselines(toolchain, ("Oz",))["Oz"]
    programs: list[dict[str, Any]] = []
    with open_store(cache_dir) as store:
        for path in paths:
            try:
                programs.append(_check(toolchain, store, detector, path, pipeline, oz))
            except StitchoptError as exc:  # one unreadable program costs the others nothing
                warnings.warn(f"{path}: skipped: {exception_line(exc)}", stacklevel=1)
    if not programs:
        raise InputError("no program could be read: see the warnings above")
    result = {
        "model": str(model),
        "threshold": detector.threshold,
        "meaning": detector.meaning(),
        "calibration": detector.calibration.to_dict() if detector.calibration else None,
        "caveat": detector.calibration.caveat() if detector.calibration else None,
        "pipeline": pipeline,
        "programs": programs,
    }
    if shown.tables:
        _print_findings(result)
    shown.write(lambda _: json.dumps(result, indent=2) + "\n")
    if any(p.get("security", {}).get("removed_vs_oz") for p in programs):
        raise typer.Exit(1)


def _check(
    toolchain: Toolchain,
    store: EvaluationStore,
    detector: DetectorModel,
    path: Path,
    pipeline: str | None,
    oz: Baseline,
) -> dict[str, Any]:
    """One program: each function's risk and CWE guess, and with a pipeline what it removes relative to -Oz."""
    module = load_module(toolchain, path)
    functions = program_functions(toolchain, module)
    findings = detector.predict(toolchain, [f.bitcode for f in functions])
    program: dict[str, Any] = {
        "program": str(path),
        "functions": [
            {"name": f.name, "risk": found.risk, "flagged": found.risk >= detector.threshold, "cwe": found.cwe}
            for f, found in zip(functions, findings, strict=True)
        ],
    }
    if pipeline is not None:
        try:
            security = compare_security(toolchain, store, module, oz.options, oz.pipeline, pipeline)
        except HardeningError as exc:
            raise InputError(f"{path}: cannot read the optimized module: {exc}") from exc
        program["security"] = security.to_dict()
    return program


def _print_findings(result: dict[str, Any]) -> None:
    rows = [
        [Path(p["program"]).name, f["name"], f"{f['risk']:.3f}", "flagged" if f["flagged"] else "", f["cwe"]]
        for p in result["programs"]
        for f in p["functions"]
    ]
    title = f"vulnerability risk (flagged at >= {result['threshold']:.3f})"
    print_table(to_rich(Rows(title, ["program", "function", "risk", "verdict", "likeliest CWE"], rows)))
    console.print(result["meaning"], highlight=False)
    if result["caveat"]:
        console.print(f"[yellow]{result['caveat']}[/yellow]", highlight=False)
    for program in result["programs"]:
        security = program.get("security")
        if security is None:
            continue
        name = Path(program["program"]).name
        if security["removed_vs_oz"]:
            console.print(
                f"[red]{name}: the list removes security-relevant code that -Oz keeps: "
                f"{describe(security['removed_vs_oz'])}[/red]"
            )
        else:
            console.print(f"{name}: the list keeps every security-relevant item -Oz keeps")
        if security["removed_by_oz"]:
            console.print(f"[yellow]{name}: -Oz itself removes: {describe(security['removed_by_oz'])}[/yellow]")


@security_app.command("study")
def study_command(
    output: Annotated[Path, output_option("Write the study here (JSON: `stitchopt report detection FILE`).")],
    experts: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="A stitched flag-tuning model (`stitch train`) whose experts are stitched in."),
    ] = None,
    per_family: Annotated[int, typer.Option(min=1, help="Juliet cases per test-case family.")] = 2,
    cwe: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(help="Only these CWEs (e.g. CWE476); repeatable. Default: all 15."),
    ] = None,
    anchors: Annotated[
        bool, typer.Option(help=f"Score the static analyzers ({', '.join(ANALYZERS)}) on the same functions.")
    ] = True,
    save_model: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            help="Also save the row chosen on validation as a detector model directory.",
            callback=writable_directory_output,
        ),
    ] = None,
    epochs: Annotated[int, typer.Option(min=1, help="Most training epochs per detector.")] = 60,
    data_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(help="Directory holding juliet_c.jsonl.gz and juliet_support.tar.gz ($STITCHOPT_DATA)."),
    ] = None,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Detectors per representation on a family split of Juliet, the best one with the optimization experts
    stitched in, a control, and the static analyzers, all scored on the held-out families."""
    require_stitch_extra()
    import torch

    from stitchopt.reports.security import comparisons, overall_rows
    from stitchopt.vulnerability.study import DetectionConfig, juliet_detection_study

    torch.set_num_threads(1)  # repeatable results (and faster than two threads on a busy machine)
    toolchain = find_toolchain(llvm)
    defaults = DetectionConfig()
    config = replace(defaults, experts=replace(defaults.experts, epochs=epochs), jobs=jobs or defaults.jobs)
    with open_store(cache_dir) as store, tempfile.TemporaryDirectory(prefix="stitchopt-juliet-") as scratch:
        status_console.print(f"detection study: {per_family} case(s) per Juliet family", highlight=False)
        outcome, _ = juliet_detection_study(
            toolchain,
            data_dir,
            per_family,
            experts,
            config,
            store=store,
            cwes=cwe or None,
            anchors=ANALYZERS if anchors else (),
            scratch=Path(scratch),
        )
    outcome.report.write_json(output)
    if save_model is not None:
        outcome.winner.save_pretrained(save_model)
    for table in overall_rows(outcome.report):
        print_table(to_rich(table))
    for line in comparisons(outcome.report):
        console.print(line, highlight=False)
    status_console.print(f"study -> {output}; winner on validation: {outcome.report.winner}", highlight=False)
