"""Tables of comparisons as plain rows, rendered for the terminal (rich) or for docs (Markdown)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table

from stitchopt.core import EvalResult
from stitchopt.evaluation.comparison import PASS_LIST_LABEL, Comparison, geomean
from stitchopt.toolchain.baselines import REPORTED_BASELINES
from stitchopt.tune.record import ProgramRecord

TERMINAL_CELL_LIMIT = 240  # characters of a cell a terminal table shows (three lines at 80 columns)
_NUMBER = re.compile(r"^[~+-]?\d")  # a number, with what may follow it (a unit, a percentage in parentheses)
_NUMERIC = re.compile(r"^([~+-]?\d|-$|n/a$|$)")  # a number, or what stands for none in a column of numbers


@dataclass(frozen=True)
class Rows:
    title: str
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""  # what the abbreviations in the headers stand for


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
    """A terminal table: columns of numbers right-aligned, text left; a word too long for its column folds onto
    the next line rather than being cut."""
    caption = f"{table.caption}\n" if table.caption else None  # a blank line before what follows
    rich_table = Table(title=table.title, caption=caption, caption_justify="left", box=box.SIMPLE_HEAD)
    for index, header in enumerate(table.headers):
        cells = [row[index] for row in table.rows if index < len(row)]
        numbers = index > 0 and all(map(_NUMERIC.match, cells)) and any(map(_NUMBER.match, cells))
        rich_table.add_column(header, justify="right" if numbers else "left", no_wrap=index == 0, overflow="fold")
    for row in table.rows:
        rich_table.add_row(*(_shortened(cell) for cell in row))
    return rich_table


def _shortened(cell: str) -> str:
    """A cell as a terminal shows it: a pipeline or command of thousands of characters would fill the screen,
    so its head is shown and its length said (the file formats keep it whole)."""
    if len(cell) <= TERMINAL_CELL_LIMIT:
        return cell
    return f"{cell[: TERMINAL_CELL_LIMIT - 40]} ... ({len(cell):,} characters in all)"


def fit_columns(table: Table, console: Console) -> list[Table]:
    """`table` as tables that each fit the console's width with no cell cut: as it is when it fits, else with
    headers wrapped at spaces, else its columns split over several tables that each repeat the first (the key)
    and fit. Only a cell wider than the console alone is folded over lines."""
    width = console.width
    if _width(console, table) <= width:
        return [table]
    needs = [_need(console, column) for column in table.columns]
    needs[0] = min(needs[0], width // 2)  # a long key wraps (and folds) in at most half the width

    def width_of(columns: Sequence[int]) -> int:
        return _width(console, _part(table, [0, *columns], needs))

    parts: list[list[int]] = [[]]
    for index in range(1, len(table.columns)):
        current = parts[-1]
        # a column too wide for any part stays in one with half the width left for it, and folds there
        if (
            current
            and width_of([*current, index]) > width
            and (width_of([index]) <= width or width_of(current) > width // 2)
        ):
            parts.append([])
        parts[-1].append(index)
    tables = [_part(table, [0, *part], needs) for part in parts]
    for number, part in enumerate(tables):
        _fold_last(console, part, width)
        part.caption = table.caption if number == len(tables) - 1 else None
        if number and table.title:
            part.title = f"{table.title} (continued)"
    return tables


def _width(console: Console, table: Table) -> int:
    """The table's width with nothing wrapped (explicit column widths as given)."""
    return Measurement.get(console, console.options.update_width(1 << 16), table).maximum


def _need(console: Console, column: Column) -> int:
    """What a column needs so that no cell wraps or is cut: its widest cell, or its header's longest word."""
    cells = [Measurement.get(console, console.options, cell).maximum for cell in column.cells]
    return max([Measurement.get(console, console.options, column.header).minimum, *cells, 1])


def _part(table: Table, indices: Sequence[int], widths: Sequence[int]) -> Table:
    part = copy.copy(table)
    part.columns = [replace(table.columns[i], _index=k, width=widths[i], no_wrap=False) for k, i in enumerate(indices)]
    return part


def _fold_last(console: Console, part: Table, width: int) -> None:
    """A part still too wide (one column wider than the console) gives its last column what is left."""
    excess = _width(console, part) - width
    last = part.columns[-1]
    if excess > 0 and last.width is not None:
        last.width = max(1, last.width - excess)


def to_markdown(table: Rows) -> str:
    lines = [
        "| " + " | ".join(table.headers) + " |",
        "| " + " | ".join("---" for _ in table.headers) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in table.rows]
    if table.caption:
        lines += ["", table.caption]
    return "\n".join(lines)


def results_json(comparison: Comparison) -> dict[str, object]:
    def row(label: str, result: EvalResult) -> dict[str, object]:
        return {**result.to_dict(), "size_change_vs_oz_percent": comparison.size_change_vs_oz(label)}

    return {
        "program": comparison.name,
        "pipeline": comparison.pipeline,
        "results": {label: row(label, result) for label, result in comparison.results.items()},
    }
