"""The report of model builds (`STITCHOPT_BUILD_LOG`): units replaced, bytes saved against -Oz, units passed
through by reason, failures with their unit and cause, cache hits and the time a model build added."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from stitchopt.build.build_log import OUTCOMES, BuildEntry, read_log
from stitchopt.errors import InputError
from stitchopt.reports.document import Figure, Report, Section
from stitchopt.reports.sources import file_identity
from stitchopt.reports.svg import BAD, GOOD, NEUTRAL, bar_chart
from stitchopt.reports.tables import Rows

_COLOURS = {"optimized": GOOD, "oz": NEUTRAL, "passed_through": NEUTRAL, "failed": BAD}
TOP_LISTS = 10


def reason_kind(reason: str) -> str:
    """`instrumentation (-fsanitize=address)` -> `instrumentation`: pass-throughs counted by kind."""
    return reason.split(" (", 1)[0]


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:+.2f}%" if whole else "n/a"


def summary_rows(entries: Sequence[BuildEntry]) -> Rows:
    """One row per mode: what happened to the units and what it saved and cost."""
    rows = []
    for mode in sorted({entry.mode or "" for entry in entries}):
        chosen = [entry for entry in entries if (entry.mode or "") == mode]
        counts = Counter(entry.outcome for entry in chosen)
        sized = [entry for entry in chosen if entry.oz_bytes is not None and entry.bytes is not None]
        oz_total = sum(entry.oz_bytes or 0 for entry in sized)
        saved = sum(entry.saved_bytes() for entry in sized)
        timed = [entry for entry in chosen if entry.plain_seconds is not None]
        overhead = sum(entry.seconds - (entry.plain_seconds or 0.0) for entry in timed)
        plain = sum(entry.plain_seconds or 0.0 for entry in timed)
        rows.append(
            [
                mode or "-",
                str(len(chosen)),
                *(str(counts[outcome]) for outcome in OUTCOMES),
                f"{oz_total:,}",
                f"{saved:,}",
                _percent(-saved, oz_total),
                str(sum(entry.cache == "hit" for entry in chosen)),
                f"{sum(entry.seconds for entry in chosen):.1f}",
                f"{overhead:.1f} ({_percent(overhead, plain)})" if timed else "n/a",
            ]
        )
    header = ["mode", "units", "smaller", "at -Oz", "passed", "failed", "-Oz bytes", "saved", "vs -Oz", "hits"]
    return Rows("Units by mode", [*header, "seconds", "added s (misses)"], rows)


def build_log_report(paths: Sequence[Path]) -> Report:
    entries = [entry for path in paths for entry in read_log(path)]
    if not entries:
        raise InputError("these build logs hold no units: was STITCHOPT_BUILD_LOG set for the build?")
    counts = Counter(entry.outcome for entry in entries)
    chart = bar_chart(
        "Units by outcome",
        list(OUTCOMES),
        [float(counts[outcome]) for outcome in OUTCOMES],
        y_label="units",
        colours=[_COLOURS[outcome] for outcome in OUTCOMES],
    )
    outcome_rows = Rows("Units by outcome", ["outcome", "units"], [[o, str(counts[o])] for o in OUTCOMES])
    passed = Counter(reason_kind(entry.reason or "") for entry in entries if entry.outcome == "passed_through")
    passed_rows = Rows("Passed through, by reason", ["reason", "units"], [[r, str(n)] for r, n in passed.most_common()])
    failures = Rows(
        "Failures (the compiler built these as asked)",
        ["unit", "cause"],
        [[entry.unit or "-", entry.reason or ""] for entry in entries if entry.outcome == "failed"],
    )
    lists, saved_by_list = Counter[str](), Counter[str]()
    for entry in entries:
        if entry.outcome == "optimized" and entry.pipeline:
            lists[entry.pipeline] += 1
            saved_by_list[entry.pipeline] += entry.saved_bytes()
    list_rows = Rows(
        f"Lists that won (top {TOP_LISTS})",
        ["units", "bytes saved", "pipeline"],
        [[str(n), f"{saved_by_list[p]:,}", p] for p, n in lists.most_common(TOP_LISTS)],
    )
    summary = summary_rows(entries)
    notes = (
        "vs -Oz: the change in allocated object bytes (without .bss) of the units that were built, against the same "
        "units at clang -Oz; passed-through and failed units are the compiler's own objects.",
        "added seconds: the wrapper's time beyond what a plain -Oz compile of the same units pays (front end and the "
        "-Oz object), over the units built without the object cache.",
    )
    sections = (
        Section("Summary", notes, (Figure(chart, outcome_rows),), (summary,)),
        Section("Passed through and failed", tables=(passed_rows, failures)),
        Section("Chosen lists", tables=(list_rows,)),
    )
    sized = [entry for entry in entries if entry.oz_bytes is not None and entry.bytes is not None]
    change = _percent(-sum(entry.saved_bytes() for entry in sized), sum(entry.oz_bytes or 0 for entry in sized))
    title = f"Build: {counts['optimized']} of {len(entries)} units smaller than -Oz, {change} overall"
    return Report("build", title, tuple(("build log", file_identity(path)) for path in paths), sections)
