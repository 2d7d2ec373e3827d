"""`stitchopt report KIND ...`: which files each kind of report reads, and the one call that builds it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from stitchopt.diagnostics import exception_line
from stitchopt.errors import InputError, StitchoptError
from stitchopt.learning.kinds import load_model
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.reports.build_log_report import build_log_report
from stitchopt.reports.document import Report
from stitchopt.reports.evaluation_report import evaluation_report
from stitchopt.reports.flag_tuning import load_evaluation
from stitchopt.reports.model_report import model_report
from stitchopt.reports.run_report import run_report
from stitchopt.reports.security import detection_report
from stitchopt.reports.stitching import load_report
from stitchopt.reports.validation_report import validation_report
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.tune.record import RunRecord
from stitchopt.vulnerability.results import DetectionReport

KINDS = {
    "run": "run records of `stitchopt tune -o run.json` (one per strategy; trial logs with --log)",
    "evaluation": "evaluations written by `stitchopt evaluate -o FILE.json`",
    "model": "one model directory (with --evaluation and --study to add their sections)",
    "validation": "verdicts written by `stitchopt validate -o FILE`",
    "build": "build logs of `stitchopt-cc` (STITCHOPT_BUILD_LOG=FILE during a model build)",
    "detection": (
        "one vulnerability detection study (DetectionReport JSON: vulnerability.study, benchmarks/security.py)"
    ),
}


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InputError(f"unknown report kind {kind!r}: use one of {', '.join(KINDS)}")


def model_identity(directory: Path, llvm: Path | None = None) -> str:
    """The identity predictions are cached under, or why it cannot be computed here (no LLVM, no torch)."""
    try:
        return load_model(directory, load_catalogue(find_toolchain(llvm))).identity
    except StitchoptError as exc:
        return f"unknown here ({exception_line(exc)})"


def build_report(
    kind: str,
    inputs: Sequence[Path],
    *,
    output_dir: Path,
    trial_logs: Sequence[Path] = (),
    evaluations: Sequence[Path] = (),
    study: Path | None = None,
    llvm: Path | None = None,
) -> Report:
    """`output_dir`: where the report goes (links to reproducers are made relative to it)."""
    check_kind(kind)
    if not inputs:
        raise InputError(f"a {kind} report needs {KINDS[kind]}")
    if kind == "run":
        return run_report([(path, RunRecord.load(path)) for path in inputs], trial_logs)
    if kind == "evaluation":
        return evaluation_report([(path, load_evaluation(path)) for path in inputs])
    if kind == "validation":
        return validation_report(inputs, output_dir)
    if kind == "build":
        return build_log_report(inputs)
    if kind == "detection":
        if len(inputs) != 1:
            raise InputError("a detection report reads one study file")
        return detection_report(inputs[0], DetectionReport.load(inputs[0]))
    if len(inputs) != 1:
        raise InputError("a model report reads one model directory")
    return model_report(
        inputs[0],
        model_identity(inputs[0], llvm),
        [(path, load_evaluation(path)) for path in evaluations],
        (study, load_report(study)) if study is not None else None,
    )
