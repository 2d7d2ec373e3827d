"""The report of a flag-tuning evaluation (`stitchopt evaluate -o FILE.json`): every method against -Oz on the
same programs (static, fast, jit, seeded search, the best single list, the coreset oracle, -Os, -O3, the
autotuner when given), the wins without run evidence apart, the per-program picture of the model's methods, and
inference time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from stitchopt.learning.heldout import Evaluation
from stitchopt.learning.verification import LARGE_WIN
from stitchopt.reports.document import Figure, Report, Section
from stitchopt.reports.figures import change_figures
from stitchopt.reports.flag_tuning import method_tables
from stitchopt.reports.sources import file_identity, program_set_identity
from stitchopt.reports.svg import bar_chart, histogram
from stitchopt.reports.tables import Rows

SHOWN_PER_PROGRAM = ("static + backup",)  # plus the largest jit k


def _shown(evaluation: Evaluation) -> list[str]:
    jit = [m.method for m in evaluation.methods if m.method.startswith("jit k=")]
    largest = max(jit, key=lambda name: int(name.split("=")[1]), default=None)
    return [*SHOWN_PER_PROGRAM, *([largest] if largest else [])]


def methods_section(evaluation: Evaluation, name: str) -> Section:
    """The comparison table and its geomean column as bars."""
    methods = list(evaluation.methods)
    bars = bar_chart(
        f"{name}: geomean size vs -Oz per method",
        [m.method for m in methods],
        [100 * m.geomean_change for m in methods],
        y_label="% vs -Oz (lower is better)",
    )
    data = Rows(
        f"{name}: geomean per method",
        ["method", "% vs -Oz"],
        [[m.method, f"{100 * m.geomean_change:+.2f}"] for m in methods],
    )
    note = (
        "Every method is read off the same measurements: each coreset list, -Oz, -Os and -O3 built once per "
        f"program. A failed build counts as doubling the size. A win {LARGE_WIN} without run evidence counts "
        "as -Oz and is listed apart."
    )
    tables = tuple(method_tables(evaluation, f"{name}: methods"))
    return Section(f"Methods: {name}", (note,), (Figure(bars, data),), tables)


def _changes(evaluation: Evaluation, method: str) -> list[tuple[str, float]]:
    """(program, % vs -Oz) as the methods table counts it (unverified wins as -Oz), failed builds left out (they
    are counted in the methods table)."""
    counted = [o.counted_ratios for o in evaluation.programs]
    return [
        (o.uri.rsplit("/", 1)[-1], 100 * (ratios[method] - 1))
        for o, ratios in zip(evaluation.programs, counted, strict=True)
        if method in ratios and math.isfinite(ratios[method])
    ]


def inference_section(evaluation: Evaluation, name: str) -> Section:
    times = [o.inference_ms for o in evaluation.programs]
    spread = histogram(f"{name}: inference time per program", times, x_label="ms")
    data = Rows(
        f"{name}: inference",
        ["median ms", "max ms", "programs"],
        [[f"{evaluation.inference_ms_median:.1f}", f"{evaluation.inference_ms_max:.1f}", str(len(times))]],
    )
    mape = ", ".join(f"{k} {v:.3f}" for k, v in evaluation.size_mape.items()) or "-"
    notes = [f"Features and ranking, one core; size model MAPE: {mape}."]
    notes += [f"skipped {uri}: {why}" for uri, why in sorted(evaluation.skipped.items())]
    return Section(f"Inference: {name}", tuple(notes), (Figure(spread, data),))


def evaluation_sections(path: Path, evaluation: Evaluation) -> tuple[list[tuple[str, str]], list[Section]]:
    """What one evaluation file adds to a report: its sources and its sections."""
    name = path.stem
    sources = [(f"evaluation ({name})", file_identity(path))]
    sources += [(f"{what} ({name})", identity) for what, identity in sorted(evaluation.sources.items())]
    sources.append((f"programs ({name})", program_set_identity(o.uri for o in evaluation.programs)))
    sections = [methods_section(evaluation, name)]
    for method in _shown(evaluation):
        bars, spread = change_figures(f"{name}, {method}", _changes(evaluation, method), "size")
        sections.append(Section(f"Per program: {name}, {method}", (), (bars, spread)))
    sections.append(inference_section(evaluation, name))
    return sources, sections


def evaluation_report(evaluations: Sequence[tuple[Path, Evaluation]]) -> Report:
    """One or more evaluations (e.g. two models on the same programs), each with its own sections."""
    sources: list[tuple[str, str]] = []
    sections: list[Section] = []
    for path, evaluation in evaluations:
        more_sources, more_sections = evaluation_sections(path, evaluation)
        sources += more_sources
        sections += more_sections
    title = "Flag-tuning evaluation: " + ", ".join(path.stem for path, _ in evaluations)
    return Report("evaluation", title, tuple(sources), tuple(sections))
