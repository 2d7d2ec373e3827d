"""The report of model builds (`STITCHOPT_BUILD_LOG`): units replaced, bytes saved against -Oz, units passed
through by reason, failures with their unit and cause, cache hits and the time a model build added."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from stitchopt.cc.build_log import OUTCOMES, BuildEntry, read_log
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


@dataclass(frozen=True)
class ModeSummary:
    """What one mode did to its units, and what it saved and cost (the numbers of the report's summary)."""

    mode: str
    units: int
    outcomes: dict[str, int]  # OUTCOMES -> units
    oz_bytes: int  # of the units built (sized), at -Oz
    saved_bytes: int  # -Oz bytes less the built bytes, over the same units
    cache_hits: int
    seconds: float
    added_seconds: float | None  # beyond a plain -Oz compile, over the units built without the cache (None: none)
    plain_seconds: float | None  # what a plain -Oz compile of those units pays

    @property
    def change(self) -> str:
        return _percent(-self.saved_bytes, self.oz_bytes)


def mode_summaries(entries: Sequence[BuildEntry]) -> list[ModeSummary]:
    """One summary per mode, by mode name."""
    summaries = []
    for mode in sorted({entry.mode or "" for entry in entries}):
        chosen = [entry for entry in entries if (entry.mode or "") == mode]
        counts = Counter(entry.outcome for entry in chosen)
        sized = [entry for entry in chosen if entry.oz_bytes is not None and entry.bytes is not None]
        timed = [entry for entry in chosen if entry.plain_seconds is not None]
        summaries.append(
            ModeSummary(
                mode or "-",
                len(chosen),
                {outcome: counts[outcome] for outcome in OUTCOMES},
                sum(entry.oz_bytes or 0 for entry in sized),
                sum(entry.saved_bytes() for entry in sized),
                sum(entry.cache == "hit" for entry in chosen),
                sum(entry.seconds for entry in chosen),
                sum(entry.seconds - (entry.plain_seconds or 0.0) for entry in timed) if timed else None,
                sum(entry.plain_seconds or 0.0 for entry in timed) if timed else None,
            )
        )
    return summaries


def summary_rows(summaries: Sequence[ModeSummary]) -> Rows:
    """One row per mode: what happened to the units, and what it saved and cost."""
    rows = [
        [
            s.mode,
            str(s.units),
            *(str(s.outcomes[outcome]) for outcome in OUTCOMES),
            f"{s.oz_bytes:,}",
            f"{s.saved_bytes:,}",
            s.change,
            str(s.cache_hits),
            f"{s.seconds:.1f}",
            "n/a" if s.added_seconds is None else f"{s.added_seconds:.1f}",
            "n/a" if s.added_seconds is None else _percent(s.added_seconds, s.plain_seconds or 0.0),
        ]
        for s in summaries
    ]
    headers = ["mode", "units", "smaller", "at -Oz", "passed", "failed", "-Oz bytes", "saved", "vs -Oz", "cache hits"]
    caption = (
        "smaller: a list beat -Oz; at -Oz: -Oz was smallest; passed: the compiler's own object; added s: the "
        "wrapper's seconds beyond a plain -Oz compile, over the units built without the object cache; vs plain: "
        "that against the plain compile's seconds"
    )
    return Rows("Units by mode", [*headers, "seconds", "added s", "vs plain"], rows, caption)


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
    failed = [entry for entry in entries if entry.outcome == "failed"]
    fell_back = [entry for entry in entries if entry.outcome in ("optimized", "oz") and entry.reason]
    lists, saved_by_list = Counter[str](), Counter[str]()
    for entry in entries:
        if entry.outcome == "optimized" and entry.pipeline:
            lists[entry.pipeline] += 1
            saved_by_list[entry.pipeline] += entry.saved_bytes()
    summaries = mode_summaries(entries)
    notes = (
        "vs -Oz: the change in allocated object bytes (without .bss) of the units that were built, against the same "
        "units at clang -Oz; passed-through and failed units are the compiler's own objects.",
        "added seconds: the wrapper's time beyond what a plain -Oz compile of the same units pays (front end and the "
        "-Oz object), over the units built without the object cache.",
    )
    sections = (
        Section("Summary", notes, (Figure(chart, outcome_rows),), (summary_rows(summaries),)),
        _exceptions_section(passed, failed, fell_back),
        _lists_section(lists, saved_by_list),
    )
    sized = [entry for entry in entries if entry.oz_bytes is not None and entry.bytes is not None]
    change = _percent(-sum(entry.saved_bytes() for entry in sized), sum(entry.oz_bytes or 0 for entry in sized))
    title = f"Build: {counts['optimized']} of {len(entries)} units smaller than -Oz, {change} overall"
    data = {
        "units": len(entries),
        "outcomes": {outcome: counts[outcome] for outcome in OUTCOMES},
        "modes": [asdict(summary) for summary in summaries],
        "passed_through": dict(passed.most_common()),
        "failures": [{"unit": entry.unit, "cause": entry.reason} for entry in failed],
        "fallbacks": [{"unit": entry.unit, "outcome": entry.outcome, "cause": entry.reason} for entry in fell_back],
        "lists": [{"pipeline": p, "units": n, "saved_bytes": saved_by_list[p]} for p, n in lists.most_common()],
    }
    return Report("build", title, tuple(("build log", file_identity(path)) for path in paths), sections, data)


def _exceptions_section(passed: Counter[str], failed: Sequence[BuildEntry], fell_back: Sequence[BuildEntry]) -> Section:
    """Units passed through, by reason, failures with their cause, and searches that fell back to the model's
    choice or -Oz; a line, not empty tables, when none."""
    tables = []
    if passed:
        tables.append(
            Rows("Passed through, by reason", ["reason", "units"], [[r, str(n)] for r, n in passed.most_common()])
        )
    if failed:
        tables.append(
            Rows(
                "Failures",
                ["unit", "cause"],
                [[entry.unit or "-", entry.reason or ""] for entry in failed],
                "the compiler ran these units' commands as asked: its own object, or its own error",
            )
        )
    if fell_back:
        tables.append(
            Rows(
                "Searches that fell back",
                ["unit", "outcome", "cause"],
                [[entry.unit or "-", entry.outcome, entry.reason or ""] for entry in fell_back],
                "built with the model's choice or -Oz (never worse than -Oz); the next build searches again",
            )
        )
    notes = () if tables else ("No unit was passed through, failed or fell back.",)
    return Section("Passed through and failed", notes, tables=tuple(tables))


def _lists_section(lists: Counter[str], saved_by_list: Counter[str]) -> Section:
    if not lists:
        return Section("Chosen lists", ("No list beat -Oz on any unit.",))
    rows = Rows(
        f"Lists that won (top {TOP_LISTS})",
        ["units", "bytes saved", "pipeline"],
        [[str(n), f"{saved_by_list[p]:,}", p] for p, n in lists.most_common(TOP_LISTS)],
    )
    return Section("Chosen lists", tables=(rows,))
