"""Report building blocks on hand-made data: plots, the three renderings, run/validation reports and their
input errors."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from stitchopt.errors import InputError
from stitchopt.reports.document import Figure, Link, Report, Section, to_csv, to_html, to_md
from stitchopt.reports.run_report import best_at, run_report
from stitchopt.reports.svg import bar_chart, heatmap, histogram, line_chart, nice_ticks, scatter
from stitchopt.reports.tables import Rows
from stitchopt.reports.validation_report import validation_report
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.session import improvements


def test_ticks_are_round_and_cover_the_range() -> None:
    ticks = nice_ticks(-7.3, 2.1)
    assert ticks[0] <= -7.3 and ticks[-1] >= 2.1
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:], strict=False)}
    assert len(steps) == 1 and steps.pop() in (1.0, 2.0, 5.0)


def test_plots_draw_one_mark_per_value_and_escape_names() -> None:
    bars = bar_chart("t", ["a<b", "c"], [-2.0, 1.0], y_label="%", reference=-0.5, reference_label="geomean")
    assert bars.count("<rect") == 2 and "a&lt;b" in bars and "a<b" not in bars and "geomean -0.50" in bars
    assert bars == bar_chart("t", ["a<b", "c"], [-2.0, 1.0], y_label="%", reference=-0.5, reference_label="geomean")
    assert "fill='#2ca02c'" in bars and "fill='#d62728'" in bars  # better and worse than -Oz
    counts = histogram("h", [1.0, 1.0, 2.0, 5.0], x_label="x", integer=True)
    assert [int(n) for n in re.findall(r": (\d+)</title></rect>", counts)] == [2, 1, 0, 0, 1]
    lines = line_chart("l", {"one": [(1.0, -1.0), (2.0, -2.0)], "two": [(1.0, 0.0)]}, x_label="x", y_label="y")
    assert lines.count("<polyline") == 2 and lines.count("<circle") == 3
    points = scatter("s", [(1.0, 3.0, "p"), (2.0, 2.0, "q")], x_label="x", y_label="y", front=[(2.0, 2.0, "q")])
    assert points.count("<circle") == 3
    cells = heatmap("m", ["a", "b"], ["a", "b"], [[None, 0.5], [-0.5, None]])
    assert cells.count("<rect") == 4 and "+0.5000" in cells and "rgb(255,0,0)" in cells and "rgb(0,0,255)" in cells


def _report() -> Report:
    data = Rows("numbers", ["program", "% vs -Oz"], [["x,y", "-1.00"], ["z", "+2.00"]])
    figure = Figure(bar_chart("t", ["x,y", "z"], [-1.0, 2.0], y_label="%"), data, "caption")
    more = Rows("more", ["k"], [["v"]])
    section = Section("A section", ("a note",), (figure,), (more,), (Link("repro", "r/README.md"),))
    return Report("run", "Title <1>", (("toolchain", "llvm-19"),), (section,))


def test_renderings_hold_the_same_numbers_and_only_the_timestamp_changes() -> None:
    report = _report()
    page = to_html(report, "T1")
    assert page.replace("T1", "T2") == to_html(report, "T2")
    assert "<script" not in page and "http" not in page and "Title &lt;1&gt;" in page
    assert "<svg class='plot'" in page and "href='r/README.md'" in page and "llvm-19" in page
    markdown = to_md(report)
    assert "| x,y | -1.00 |" in markdown and "[repro](r/README.md)" in markdown and "`llvm-19`" in markdown
    blocks = to_csv(report).split("\n\n")
    assert list(csv.reader(io.StringIO(blocks[1]))) == [
        ["# A section: numbers"],
        ["program", "% vs -Oz"],
        ["x,y", "-1.00"],
        ["z", "+2.00"],
    ]


def _program(
    name: str, size: int | None, passes: tuple[str, ...] | None, curve: tuple[tuple[int, float], ...]
) -> ProgramRecord:
    return ProgramRecord(name, passes, "p", size, 100, 50, "opt ...", validated=passes is not None, curve=curve)


def test_run_report_reads_curves_and_answers_from_the_records(tmp_path: Path) -> None:
    assert improvements([1.0, 0.9, 0.9, 0.8, 0.8]) == ((1, 1.0), (2, 0.9), (4, 0.8), (5, 0.8))
    assert best_at(((2, 0.9), (4, 0.8)), 1) == 1.0 and best_at(((2, 0.9), (4, 0.8)), 3) == 0.9
    record = RunRecord(
        "llvm-19",
        "size=1",
        "local",
        (
            _program("a.c", 90, ("sroa", "gvn"), ((1, 0.95), (10, 0.9))),
            _program("b.c", 100, None, ((1, 1.0),)),
        ),
        "catalogue-1",
    )
    record.save(tmp_path / "run.json")
    report = run_report([(tmp_path / "run.json", RunRecord.load(tmp_path / "run.json"))])
    titles = [s.title for s in report.sections]
    assert titles == ["Size against -Oz: local", "Search curves", "Best lists", "Validation"]
    curve = report.sections[1].figures[0].data
    assert curve.rows[0] == ["1", "-2.53"] and curve.rows[-1] == ["10", "-5.13"]  # geomean of 0.95, 1.0; 0.9, 1.0
    assert ("catalogue", "catalogue-1") in report.sources
    assert "1 improved / 1 unchanged / 0 regressed" in report.sections[0].figures[0].caption


def test_validation_report_links_reproducers_relative_to_the_page(tmp_path: Path) -> None:
    verdicts = [
        {"program": "p1", "status": "wrong-output", "detail": "stdout differs", "seconds": 0.1},
        {"program": "p2", "status": "passed", "detail": "", "seconds": 0.1},
    ]
    entry = {
        "suite": "selftest",
        "pipeline": "sroa",
        "toolchain": "llvm-19",
        "passed": False,
        "complete": True,
        "seconds": 1.0,
        "verdicts": verdicts,
        "reproducer": str(tmp_path / "repro"),
    }
    (tmp_path / "v.json").write_text(json.dumps([entry]))
    report = validation_report([tmp_path / "v.json"], tmp_path / "out")
    suite = report.sections[1]
    assert suite.links[0].href == "../repro/README.md"
    assert suite.tables[0].rows == [["p1", "wrong-output", "stdout differs"]]
    assert report.title == "Validation: 0 of 1 suite runs passed"


@pytest.mark.parametrize("text", ["not json", '[{"suite": 1}]', "{}"])
def test_malformed_inputs_are_one_line_input_errors(tmp_path: Path, text: str) -> None:
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(InputError, match="not a stitchopt validation file"):
        validation_report([tmp_path / "bad.json"], tmp_path)
    with pytest.raises(InputError, match="not a stitchopt run record"):
        RunRecord.load(tmp_path / "bad.json")
