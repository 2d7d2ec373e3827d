"""Outputs of the flag-tuning evaluation: the method table (terminal/Markdown), per-program CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from pathlib import Path

from stitchopt.errors import InputError
from stitchopt.learning.evaluation import Evaluation, MethodSummary, ProgramOutcome
from stitchopt.reports.tables import Rows


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


def evaluation_csv(evaluation: Evaluation) -> str:
    """One row per program: its -Oz size, inference time and each method's size ratio to -Oz."""
    methods = [m.method for m in evaluation.methods]
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["uri", "oz_size_bytes", "inference_ms", *methods])
    for program in evaluation.programs:
        ratios = [program.ratios.get(m) for m in methods]
        writer.writerow(
            [
                program.uri,
                program.oz_size,
                f"{program.inference_ms:.2f}",
                *("" if r is None else f"{r:.6f}" for r in ratios),
            ]
        )
    return stream.getvalue()


def write_csv(evaluation: Evaluation, path: Path) -> None:
    path.write_text(evaluation_csv(evaluation))


def evaluation_json(evaluation: Evaluation) -> str:
    return json.dumps(asdict(evaluation), indent=1, default=lambda value: None) + "\n"


def write_json(evaluation: Evaluation, path: Path) -> None:
    path.write_text(evaluation_json(evaluation))


def load_evaluation(path: Path) -> Evaluation:
    """What `write_json` wrote (`stitchopt evaluate -o FILE.json`)."""
    try:
        data = json.loads(path.read_text())
        return Evaluation(
            programs=tuple(ProgramOutcome(**p) for p in data["programs"]),
            methods=tuple(MethodSummary(**m) for m in data["methods"]),
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
