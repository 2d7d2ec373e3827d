"""Outputs of the flag-tuning evaluation: the method table and the unverified wins apart (terminal/Markdown),
and per-program CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError
from stitchopt.learning.heldout import Evaluation, MethodSummary, ProgramOutcome, judged, summarize
from stitchopt.learning.verification import LARGE_WIN, RunEvidence
from stitchopt.reports.tables import Rows, to_markdown


def method_rows(evaluation: Evaluation, title: str) -> Rows:
    """One row per method: geomean change vs -Oz, improved/unchanged/regressed, compilations, % of autotuner."""
    rows = [
        [
            m.method,
            f"{100 * m.geomean_change:+.2f}%",
            f"{100 * m.improved:.0f}% / {100 * m.unchanged:.0f}% / {100 * m.regressed:.0f}%",
            "-" if m.compilations is None else f"{m.compilations:.1f}",
            "-" if m.of_autotuner is None else f"{100 * m.of_autotuner:.0f}%",
        ]
        for m in evaluation.methods
    ]
    headers = ["method", "geomean vs -Oz", "improved / unchanged / regressed", "compilations", "of autotuner"]
    return Rows(title, headers, rows)


def unverified_rows(evaluation: Evaluation, title: str) -> Rows:
    """Per method with unverified wins: how many programs, and the geomean had they been counted."""
    rows = [
        [
            m.method,
            str(m.unverified),
            f"{100 * m.geomean_change:+.2f}%",
            "-" if m.geomean_if_counted is None else f"{100 * m.geomean_if_counted:+.2f}%",
        ]
        for m in evaluation.methods
        if m.unverified
    ]
    headers = ["method", "unverified wins", "geomean vs -Oz (counted as -Oz)", "geomean if counted"]
    return Rows(f"{title}: wins {LARGE_WIN} without run evidence, counted as -Oz", headers, rows)


def method_tables(evaluation: Evaluation, title: str) -> list[Rows]:
    """The method table, then the unverified wins apart when there are any."""
    if not any(m.unverified for m in evaluation.methods):
        return [method_rows(evaluation, title)]
    return [method_rows(evaluation, title), unverified_rows(evaluation, title)]


def tables_markdown(tables: Sequence[Rows]) -> str:
    """Markdown tables, each under its title (a page of several tables needs them told apart)."""
    return "".join(f"{table.title}\n\n{to_markdown(table)}\n\n" for table in tables)


def evaluation_csv(evaluation: Evaluation) -> str:
    """One row per program: its package, -Oz size, inference time, each method's size ratio to -Oz as measured,
    and the methods whose ratio is an unverified win (`;`-separated)."""
    methods = [m.method for m in evaluation.methods]
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["uri", "package", "oz_size_bytes", "inference_ms", *methods, "unverified"])
    for program in evaluation.programs:
        ratios = [program.ratios.get(m) for m in methods]
        writer.writerow(
            [
                program.uri,
                program.package,
                program.oz_size,
                f"{program.inference_ms:.2f}",
                *("" if r is None else f"{r:.6f}" for r in ratios),
                ";".join(program.unverified),
            ]
        )
    return stream.getvalue()


def write_csv(evaluation: Evaluation, path: Path) -> None:
    path.write_text(evaluation_csv(evaluation))


def evaluation_json(evaluation: Evaluation) -> str:
    return json.dumps(asdict(evaluation), indent=1, default=lambda value: None) + "\n"


def write_json(evaluation: Evaluation, path: Path) -> None:
    path.write_text(evaluation_json(evaluation))


def _outcome(data: dict[str, Any]) -> ProgramOutcome:
    """A program's outcome; one written before the verification rule had no run evidence, so its large wins are
    judged unverified now."""
    if "unverified" not in data:
        return judged(ProgramOutcome(**data), RunEvidence(), ())
    return ProgramOutcome(**{**data, "unverified": tuple(data["unverified"])})


def load_evaluation(path: Path) -> Evaluation:
    """What `write_json` wrote (`stitchopt evaluate -o FILE.json`). The method table of a file written before
    the verification rule is computed again under it."""
    try:
        data = json.loads(path.read_text())
        programs = tuple(_outcome(p) for p in data["programs"])
        judged_now = any("unverified" not in p for p in data["programs"])
        return Evaluation(
            programs=programs,
            methods=summarize(programs) if judged_now else tuple(MethodSummary(**m) for m in data["methods"]),
            size_mape=data["size_mape"],
            inference_ms_median=data["inference_ms_median"],
            inference_ms_max=data["inference_ms_max"],
            skipped=data.get("skipped", {}),
            sources=data.get("sources", {}),
        )
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such evaluation (write one with `stitchopt evaluate ... -o FILE.json`)") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a stitchopt evaluation ({exc})") from exc
