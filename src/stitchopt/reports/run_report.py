"""The report of tuning runs (`stitchopt tune -o run.json`, one record per strategy), with the trial logs
(`tune --log`) when given: sizes against -Oz, search curves, the passes the answers use, Pareto fronts and
validation. Nothing is re-run: everything comes from the records and logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError
from stitchopt.evaluation.comparison import geomean
from stitchopt.reports.document import Figure, Report, Section
from stitchopt.reports.figures import change_figures, list_figures
from stitchopt.reports.sources import file_identity, program_set_identity
from stitchopt.reports.svg import line_chart, scatter
from stitchopt.reports.tables import Rows, tuning_rows
from stitchopt.tune.pareto import pareto_front
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.trial_log import check_log_belongs, read_trials

MAX_PARETO_PROGRAMS = 8  # one plot each; the rest are counted in a note


def _label(path: Path, record: RunRecord, records: Sequence[tuple[Path, RunRecord]]) -> str:
    """The strategy, or the file name when two records share a strategy."""
    shared = sum(r.strategy == record.strategy for _, r in records) > 1
    return f"{record.strategy} ({path.stem})" if shared else record.strategy


def _changes(record: RunRecord) -> list[tuple[str, float]]:
    return [(Path(p.program).stem, p.size_change_vs_oz) for p in record.programs if p.size_change_vs_oz is not None]


def best_at(curve: Sequence[tuple[int, float]], evaluation: int) -> float:
    """The best score after `evaluation` evaluations (1.0, -Oz, before the first)."""
    best = 1.0
    for at, score in curve:
        if at > evaluation:
            break
        best = score
    return best


def search_section(labelled: Sequence[tuple[str, RunRecord]]) -> Section:
    """Geomean best-so-far against evaluations, one line per record (programs without a curve left out)."""
    series: dict[str, list[tuple[float, float]]] = {}
    for label, record in labelled:
        curves = [p.curve for p in record.programs if p.curve]
        if not curves:
            continue
        steps = sorted({at for curve in curves for at, _ in curve} | {max(curve[-1][0] for curve in curves)})
        series[label] = [(float(at), 100 * ((geomean([best_at(c, at) for c in curves]) or 1.0) - 1)) for at in steps]
    if not series:
        return Section(
            "Search curves",
            ("These records hold no search curves (written before stitchopt kept them, or by a benchmark script).",),
        )
    headers = ["evaluations", *series]
    grid = sorted({x for points in series.values() for x, _ in points})
    rows = []
    for x in grid:
        row = [f"{x:.0f}"]
        for points in series.values():
            known = [y for px, y in points if px <= x]
            row.append(f"{known[-1]:+.2f}" if known else "")
        rows.append(row)
    chart = line_chart("Best so far (geomean of objective vs -Oz)", series, x_label="evaluations", y_label="% vs -Oz")
    note = "Each program's best score after n evaluations, geomean over the programs; the score is the run's objective."
    return Section("Search curves", (note,), (Figure(chart, Rows("Best so far, % vs -Oz", headers, rows)),))


def passes_section(programs: Sequence[ProgramRecord]) -> Section:
    """Which passes the answers use, and how long the answers are."""
    answers = [p.passes for p in programs if p.passes is not None]
    if not answers:
        return Section("Best lists", ("Every answer is the -Oz backup: no list beat -Oz.",))
    note = (
        f"{len(answers)} of {len(programs)} answers are pass lists (the rest: the -Oz backup); mean length "
        f"{sum(map(len, answers)) / len(answers):.1f}."
    )
    return Section("Best lists", (note,), list_figures("best lists", answers))


def pareto_section(trials: Sequence[dict[str, Any]]) -> Section:
    """Size against compile time (and against run time, for runs with a perf objective), per program."""
    by_program: dict[str, list[dict[str, Any]]] = {}
    for trial in trials:
        by_program.setdefault(str(trial.get("program", "?")), []).append(trial)
    figures = []
    for program in sorted(by_program)[:MAX_PARETO_PROGRAMS]:
        program_trials = by_program[program]
        for metric, key, unit, scale in (
            ("compile-time", "compile_seconds", "compile ms", 1000.0),
            ("perf", "runtime", "run time", 1.0),
        ):
            usable = [
                t
                for t in program_trials
                if t.get("status") == "ok" and t.get(key) is not None and t.get("size_bytes") is not None
            ]
            if not usable:
                continue
            front = pareto_front(usable, ("size", metric))

            def point(t: dict[str, Any], key: str = key, scale: float = scale) -> tuple[float, float, str]:
                return (float(t["size_bytes"]), scale * float(t[key]), f"{len(t['passes'])} passes")

            chart = scatter(
                f"{program}: size vs {unit}",
                [point(t) for t in usable],
                x_label="size B",
                y_label=unit,
                front=[point(t) for t in front],
            )
            rows = [
                [f"{t['size_bytes']:,}", f"{scale * float(t[key]):.4g}", str(len(t["passes"])), t["pipeline"]]
                for t in front
            ]
            caption = f"{len(usable)} trials, {len(front)} on the front (red)"
            figures.append(
                Figure(chart, Rows(f"{program}: Pareto front", ["size B", unit, "passes", "pipeline"], rows), caption)
            )
    notes = ["Every measured trial (grey) and the trials no other beats on both axes (red, lower-left is better)."]
    if len(by_program) > MAX_PARETO_PROGRAMS:
        notes.append(f"The first {MAX_PARETO_PROGRAMS} of {len(by_program)} programs, by name.")
    return Section("Pareto fronts", tuple(notes), tuple(figures))


def validation_section(labelled: Sequence[tuple[str, RunRecord]]) -> Section:
    programs = [(label, p) for label, record in labelled for p in record.programs]
    rows = [[label, Path(p.program).stem, "yes" if p.validated else "no", p.validation or "-"] for label, p in programs]
    validated = sum(p.validated for _, p in programs)
    note = f"{validated} of {len(programs)} answers passed validation (-Oz, clang's own pipeline, counts as valid)."
    table = Rows("Validation per program", ["run", "program", "validated", "what it said"], rows)
    return Section("Validation", (note,), tables=(table,))


def run_report(records: Sequence[tuple[Path, RunRecord]], trial_logs: Sequence[Path] = ()) -> Report:
    """One report over one or more run records (e.g. one per strategy on the same programs)."""
    if not records:
        raise InputError("give at least one run record (`stitchopt tune ... -o run.json`)")
    labelled = [(_label(path, record, records), record) for path, record in records]
    sources: list[tuple[str, str]] = []
    for (path, record), (label, _) in zip(records, labelled, strict=True):
        sources.append((f"run record ({label})", file_identity(path)))
        sources.append(("objective", record.objective))
    sources += [("trial log", file_identity(path)) for path in trial_logs]
    sources += [
        ("toolchain", " | ".join(sorted({r.toolchain for _, r in records}))),
        ("catalogue", " | ".join(sorted({r.catalogue or "not recorded" for _, r in records}))),
        ("programs", program_set_identity(p.program for _, r in records for p in r.programs)),
    ]
    sections = []
    for label, record in labelled:
        bars, spread = change_figures(label, _changes(record), "size")
        table = tuning_rows(record.programs, f"{label}: answers")
        replays = Rows(
            f"{label}: replay with plain LLVM",
            ["program", "commands"],
            [[Path(p.program).stem, p.replay] for p in record.programs],
        )
        sections.append(Section(f"Size against -Oz: {label}", (), (bars, spread), (table, replays)))
    sections.append(search_section(labelled))
    sections.append(passes_section([p for _, r in records for p in r.programs]))
    runtime = [(Path(p.program).stem, p) for _, r in records for p in r.programs if p.runtime and p.oz_runtime]
    if runtime:
        sections.append(runtime_section(runtime))
    trials = [t for path in trial_logs for t in _trials_of(path, records)]
    if trials:
        sections.append(pareto_section(trials))
    sections.append(validation_section(labelled))
    title = f"Tuning run{'s' if len(records) > 1 else ''}: {', '.join(label for label, _ in labelled)}"
    return Report("run", title, tuple(sources), tuple(sections))


def _trials_of(path: Path, records: Sequence[tuple[Path, RunRecord]]) -> list[dict[str, Any]]:
    """The trials of a log that belongs to one of the records' runs (else one line, not a report of two runs)."""
    trials = read_trials(path)
    check_log_belongs(path, trials, {record.run_id for _, record in records})
    return trials


def runtime_section(programs: Sequence[tuple[str, ProgramRecord]]) -> Section:
    """For runs with a perf objective: each answer's size and run-time change against -Oz."""
    points = []
    rows = []
    for name, p in programs:
        assert p.runtime is not None and p.oz_runtime is not None
        size = p.size_change_vs_oz or 0.0
        runtime = 100 * (p.runtime / p.oz_runtime - 1)
        points.append((size, runtime, name))
        rows.append([name, f"{size:+.2f}", f"{runtime:+.2f}", p.runtime_unit])
    chart = scatter("Answers: size vs run time, % vs -Oz", points, x_label="size % vs -Oz", y_label="run time % vs -Oz")
    data = Rows("Size and run time per program", ["program", "size %", "run time %", "unit"], rows)
    return Section("Size and run time", ("Lower-left of (0, 0) is better than -Oz on both.",), (Figure(chart, data),))
