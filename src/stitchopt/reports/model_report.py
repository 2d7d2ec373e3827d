"""The report of a model directory: what kind of model it is, what it was trained on, its pass lists, and,
when given, its evaluations (static / jit / baselines / autotuner tables) and the stitching study behind it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError
from stitchopt.learning.heldout import Evaluation
from stitchopt.models.directory import CONFIG_NAME
from stitchopt.reports.document import Report, Section
from stitchopt.reports.evaluation_report import evaluation_sections
from stitchopt.reports.figures import list_figures
from stitchopt.reports.sources import directory_identity, file_identity
from stitchopt.reports.stitching_html import stitching_sections
from stitchopt.reports.tables import Rows
from stitchopt.stitching.results import StudyReport


def read_config(directory: Path) -> dict[str, Any]:
    try:
        config = json.loads((directory / CONFIG_NAME).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{directory}: not a stitchopt model directory ({exc})") from exc
    if not isinstance(config, dict) or "lists" not in config:
        raise InputError(f"{directory}: not a stitchopt model directory (its {CONFIG_NAME} has no lists)")
    return config


def _facts(directory: Path, config: dict[str, Any]) -> Rows:
    stitched = config.get("kind") == "stitched"
    rows = [["kind", "stitched ensemble" if stitched else "closed-form ranker (kNN + ridge) and size model"]]
    if stitched:
        rows += [
            ["experts (receiver first)", " + ".join(config.get("members", []))],
            ["hidden units", str(config.get("hidden", "-"))],
        ]
    else:
        rows.append(["representations", ", ".join(r["name"] for r in config.get("representations", []))])
        rows += [[f"ranker {k}", str(v)] for k, v in sorted(config.get("ranker", {}).items())]
    rows += [
        ["pass lists", str(len(config["lists"]))],
        ["LLVM", str(config.get("llvm", "-"))],
        ["stitchopt", str(config.get("stitchopt", "-"))],
    ]
    rows += [[f"trained on: {k}", str(v)] for k, v in sorted(config.get("trained_on", {}).items())]
    rows += [[f"file {p.name}", f"{p.stat().st_size:,} B"] for p in sorted(directory.iterdir()) if p.is_file()]
    return Rows("Model", ["", ""], rows)


def model_report(
    directory: Path,
    identity: str,
    evaluations: Sequence[tuple[Path, Evaluation]] = (),
    study: tuple[Path, StudyReport] | None = None,
) -> Report:
    """`identity`: the model's prediction-cache identity (or why it could not be computed here)."""
    config = read_config(directory)
    lists = [list(passes) for passes in config["lists"]]
    sources: list[tuple[str, str]] = [
        ("model", identity),
        ("model files", directory_identity(directory)),
        ("catalogue", str(config.get("catalogue", "-"))),
    ]
    lists_table = Rows(
        "The model's pass lists, in training order",
        ["#", "passes", "list"],
        [[str(i + 1), str(len(p)), ",".join(p)] for i, p in enumerate(lists)],
    )
    sections = [
        Section("Model", tables=(_facts(directory, config),)),
        Section(
            "Pass lists",
            (f"{len(lists)} lists; the first is the best single list on the training set.",),
            list_figures("model's lists", lists),
            (lists_table,),
        ),
    ]
    for path, evaluation in evaluations:
        more_sources, more_sections = evaluation_sections(path, evaluation)
        sources += more_sources
        sections += more_sections
    if study is not None:
        sources.append(("stitching study", file_identity(study[0])))
        sections += stitching_sections(study[1])
    return Report("model", f"Model: {directory.name}", tuple(sources), tuple(sections))
