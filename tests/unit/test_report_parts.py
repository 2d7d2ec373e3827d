"""Report building blocks on hand-made data: plots, the renderings, run/validation/build/detection reports, their
tables in a narrow terminal, and their input errors."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from stitchopt.cc.build_log import BuildEntry, append_entry
from stitchopt.cli import options
from stitchopt.cli.main import command_app
from stitchopt.errors import InputError
from stitchopt.reports.build_log_report import build_log_report
from stitchopt.reports.document import Figure, Link, Report, Section, to_csv, to_html, to_md
from stitchopt.reports.run_report import best_at, run_report
from stitchopt.reports.security import detection_report
from stitchopt.reports.svg import bar_chart, heatmap, histogram, line_chart, nice_ticks, scatter
from stitchopt.reports.tables import Rows, to_rich
from stitchopt.reports.validation_report import validation_report
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.session import improvements
from stitchopt.vulnerability.results import DetectionReport, DetectionRow, HeldOutFunction, tally


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


PIPELINE = "function(sroa,early-cse<memssa>,simplifycfg),inline,function(instcombine<no-verify-fixpoint>,dse)" * 3


def _build_log(path: Path, exceptions: bool = True) -> Path:
    """A build of two modes: units smaller than -Oz (one long list), at -Oz, and with `exceptions` one passed
    through and one failed."""
    entries = [
        BuildEntry(
            "src/parse.c",
            "optimized",
            "static",
            pipeline=PIPELINE,
            oz_bytes=123_456,
            bytes=117_001,
            cache="miss",
            seconds=4.25,
            plain_seconds=0.75,
        ),
        BuildEntry("src/util.c", "oz", "static", oz_bytes=9_870, bytes=9_870, cache="hit", seconds=0.1),
        BuildEntry(
            "src/io.c",
            "optimized",
            "jit",
            pipeline="sroa,instcombine",
            oz_bytes=20_000,
            bytes=19_000,
            cache="miss",
            seconds=12.5,
            plain_seconds=1.5,
        ),
    ]
    if exceptions:
        entries += [
            BuildEntry("src/asan.c", "passed_through", "static", reason="instrumentation (-fsanitize=address)"),
            BuildEntry("src/bad.c", "failed", "static", reason="opt failed: error: expected top-level entity"),
        ]
    for entry in entries:
        append_entry(path, entry)
    return path


def _study() -> DetectionReport:
    """A study shaped like the measured one: twelve rows with the study's long names, fifteen CWEs."""
    cwes = [f"CWE{n}" for n in (121, 122, 124, 126, 127, 190, 191, 369, 401, 415, 416, 457, 476, 590, 680)]
    tests = [HeldOutFunction(cwe, label) for cwe in cwes for label in ("bad", "good", "good")]
    best = "detector:func_properties-43"

    def row(name: str, kind: str, members: tuple[str, ...], init: str = "", seed: int = 0) -> DetectionRow:
        flags = [(i * 7 + seed) % 3 == 0 for i in range(len(tests))]
        if kind == "anchor":
            return DetectionRow(name, kind, tally(tests, flags), flags=tuple(flags))
        risks = tuple(0.9 if flag else 0.1 for flag in flags)
        guesses = [cwes[(i + seed) % len(cwes)] for i in range(len(tests))]
        return DetectionRow(name, kind, tally(tests, flags, guesses), members, init, 0.3077, 0.6871, 187.25, risks)

    rows = [
        row(f"detector:{n}", "detector", (f"detector:{n}",), seed=i)
        for i, n in enumerate(("autophase-56", "histogram-1", "func_properties-43", "ir_tokens-4096-1024"))
    ]
    rows += [
        row(f"{best} + optimization experts ({i})", "stitched", (best, "o:a", "o:b", "o:c"), i) for i in ("lstsq", "ot")
    ]
    rows += [
        row(f"{best} + 3 other detectors ({i})", "control", (best, "d:a", "d:b", "d:c"), i) for i in ("lstsq", "ot")
    ]
    rows += [row(name, "anchor", ()) for name in ("clang --analyze", "cppcheck")]
    rows += [
        row(f"{best} at {a}'s false-positive rate", "operating point", (best,), a)
        for a in ("clang --analyze", "cppcheck")
    ]
    splits = {
        "train": {"bad": 1340, "good": 3506},
        "validation": {"bad": 439, "good": 1145},
        "test": {"bad": 15, "good": 30},
    }
    return DetectionReport(splits, tuple(cwes), best, "abc", rows, rows[2].name, {"features": 1.0}, tests)


def _printed(monkeypatch: pytest.MonkeyPatch, width: int, tables: list[Rows]) -> str:
    """The tables as `print_table` prints them on a terminal `width` columns wide."""
    screen = io.StringIO()
    monkeypatch.setattr(options, "console", Console(file=screen, width=width))
    for table in tables:
        options.print_table(to_rich(table))
    return screen.getvalue()


@pytest.mark.parametrize("width", [80, 160])
def test_report_tables_fit_a_terminal_with_no_cell_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    study = tmp_path / "study.json"
    _study().write_json(study)
    reports = [build_log_report([_build_log(tmp_path / "build.jsonl")]), detection_report(study, _study())]
    for report in reports:
        tables = report.tables()
        shown = _printed(monkeypatch, width, tables)
        assert "…" not in shown and max(len(line.rstrip()) for line in shown.splitlines()) <= width
        words = set(shown.split())
        numbers = {cell for table in tables for row in table.rows for cell in row if re.fullmatch(r"[-+\d.,%]+", cell)}
        assert numbers - words == set(), report.kind  # every number whole, on one line
    long_pipeline = Rows("lists", ["units", "pipeline"], [["1", "sroa," * 1000]])
    shown = _printed(monkeypatch, width, [long_pipeline])
    assert "(5,000 characters in all)" in shown and shown.count("sroa") < 100  # its head, not 1,000 lines


def test_a_build_without_exceptions_prints_no_empty_tables(tmp_path: Path) -> None:
    report = build_log_report([_build_log(tmp_path / "build.jsonl", exceptions=False)])
    titles = [table.title for table in report.tables()]
    assert not any(title.startswith(("Passed through", "Failures")) for title in titles)
    assert all(table.rows for table in report.tables())
    assert "No unit was passed through, failed or fell back." in to_md(report)


def test_a_search_that_fell_back_is_shown_apart(tmp_path: Path) -> None:
    """A tune unit whose search failed was counted as an ordinary tune unit, in no table."""
    log = tmp_path / "build.jsonl"
    cause = "the tune search failed (csmith --version failed: exit status 3): built with the model's choice or -Oz"
    append_entry(log, BuildEntry("src/a.c", "oz", "tune", oz_bytes=900, bytes=900, reason=cause))
    report = build_log_report([log])
    fell_back = next(table for table in report.tables() if table.title == "Searches that fell back")
    assert fell_back.rows == [["src/a.c", "oz", cause]]
    assert report.data["fallbacks"] == [{"unit": "src/a.c", "outcome": "oz", "cause": cause}]


def test_report_build_json_is_one_document_with_the_numbers(tmp_path: Path) -> None:
    log = _build_log(tmp_path / "build.jsonl")
    done = CliRunner().invoke(command_app(), ["report", "build", str(log), "--json"])
    assert done.exit_code == 0, done.output
    found = json.loads(done.stdout)
    assert found["kind"] == "build" and found["data"]["units"] == 5
    static = next(mode for mode in found["data"]["modes"] if mode["mode"] == "static")
    assert static["saved_bytes"] == 123_456 - 117_001 and static["outcomes"]["failed"] == 1
    assert found["data"]["failures"] == [{"unit": "src/bad.c", "cause": "opt failed: error: expected top-level entity"}]
    assert [table["title"] for table in found["sections"][0]["tables"]][:2] == ["Units by outcome", "Units by mode"]
