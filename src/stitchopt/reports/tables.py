"""Tables of comparisons as plain rows, rendered for the terminal (rich) or for docs (Markdown)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from stitchopt.core import EvalResult
from stitchopt.evaluation.comparison import PASS_LIST_LABEL, Comparison, geomean
from stitchopt.toolchain.baselines import REPORTED_BASELINES
from stitchopt.tune.record import ProgramRecord


@dataclass(frozen=True)
class Rows:
    title: str
    headers: list[str]
    rows: list[list[str]]


def _num(value: int | float | None, fmt: str = "{:,}") -> str:
    return "-" if value is None else fmt.format(value)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def evaluation_rows(comparison: Comparison) -> Rows:
    """One program: each baseline and the pass list, with the size change against -Oz."""
    rows = []
    for label, result in comparison.results.items():
        name = label if label == PASS_LIST_LABEL else f"-{label}"
        rows.append(
            [
                name,
                result.status.value,
                _num(result.size_bytes),
                _num(result.text_bytes),
                _num(result.ir_instruction_count),
                _ms(result.opt_seconds),
                _ms(result.codegen_seconds),
                _pct(comparison.size_change_vs_oz(label)),
            ]
        )
    headers = ["pipeline", "status", "size B", "text B", "IR instrs", "opt ms", "codegen ms", "size vs -Oz"]
    return Rows(comparison.name, headers, rows)


def corpus_rows(comparisons: Sequence[Comparison], title: str) -> Rows:
    """Many programs: size and instructions per baseline, -Oz times, and a geomean row."""
    levels = list(REPORTED_BASELINES)
    headers = (
        ["program"]
        + [f"-{lvl} size B" for lvl in levels]
        + [f"-{lvl} instrs" for lvl in levels]
        + ["-Oz opt ms", "-Oz llc ms"]
    )
    rows = []
    for comparison in comparisons:
        results = [comparison.results[lvl] for lvl in levels]
        oz = comparison.results["Oz"]
        rows.append(
            [comparison.name]
            + [_num(r.size_bytes) if r.ok else r.status.value for r in results]
            + [_num(r.ir_instruction_count) for r in results]
            + [_ms(oz.opt_seconds), _ms(oz.codegen_seconds)]
        )
    complete = [c for c in comparisons if all(c.results[lvl].ok for lvl in levels)]

    def mean_of(pick: str, level: str) -> str:
        values = [float(getattr(c.results[level], pick) or 0) for c in complete]
        return _num(geomean(values), "{:,.0f}")

    rows.append(
        [f"geomean ({len(complete)})"]
        + [mean_of("size_bytes", lvl) for lvl in levels]
        + [mean_of("ir_instruction_count", lvl) for lvl in levels]
        + [
            _num(geomean(1000 * c.results["Oz"].opt_seconds for c in complete), "{:.0f}"),
            _num(geomean(1000 * c.results["Oz"].codegen_seconds for c in complete), "{:.0f}"),
        ]
    )
    return Rows(title, headers, rows)


def tuning_rows(programs: Sequence[ProgramRecord], title: str) -> Rows:
    """Per program: -Oz size, the answer's size and change, evaluations, and the answer's length."""
    rows = [
        [
            Path(p.program).stem,
            _num(p.oz_size_bytes),
            _num(p.size_bytes),
            _pct(p.size_change_vs_oz),
            _num(p.evaluations),
            "-Oz (backup)" if p.passes is None else str(len(p.passes)),
        ]
        for p in programs
    ]
    changes = [1 + p.size_change_vs_oz / 100 for p in programs if p.size_change_vs_oz is not None]
    mean = geomean(changes)
    rows.append([f"geomean ({len(changes)})", "", "", _pct(None if mean is None else 100 * (mean - 1)), "", ""])
    return Rows(title, ["program", "-Oz size B", "best size B", "vs -Oz", "evaluations", "passes"], rows)


def pareto_rows(program: str, front: Sequence[dict[str, Any]]) -> Rows:
    """One program's Pareto-optimal trials (from a trial log), best size first."""
    rows = [
        [
            str(len(t["passes"])),
            _num(t["size_bytes"]),
            _ms(t["compile_seconds"]),
            _num(t["ir_instruction_count"]),
            _num(t.get("runtime"), "{:,.6g}"),
            _num(t.get("security"), "{:g}"),
            t["pipeline"] if len(t["pipeline"]) <= 60 else t["pipeline"][:57] + "...",
        ]
        for t in front
    ]
    headers = ["passes", "size B", "compile ms", "IR instrs", "runtime", "security", "pipeline"]
    return Rows(f"{program}: {len(front)} Pareto-optimal lists", headers, rows)


def to_rich(table: Rows) -> Table:
    rich_table = Table(title=table.title, box=box.SIMPLE_HEAD)
    for index, header in enumerate(table.headers):
        rich_table.add_column(header, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for row in table.rows:
        rich_table.add_row(*row)
    return rich_table


def to_markdown(table: Rows) -> str:
    lines = [
        "| " + " | ".join(table.headers) + " |",
        "| " + " | ".join("---" for _ in table.headers) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    return "\n".join(lines)


def results_json(comparison: Comparison) -> dict[str, object]:
    def row(label: str, result: EvalResult) -> dict[str, object]:
        return {**result.to_dict(), "size_change_vs_oz_percent": comparison.size_change_vs_oz(label)}

    return {
        "program": comparison.name,
        "pipeline": comparison.pipeline,
        "results": {label: row(label, result) for label, result in comparison.results.items()},
    }
