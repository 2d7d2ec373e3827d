"""A report as data (sections of notes, plots and tables), rendered as one self-contained HTML page, Markdown,
CSV or JSON. Every plot carries the table of numbers it draws, so the other forms lose nothing but the
picture. Rendering is deterministic: the same report gives the same bytes apart from the `generated` line.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from stitchopt.reports.tables import Rows, to_markdown

FORMATS = ("html", "md", "csv", "json")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1150px; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.code { font-family: ui-monospace, monospace; font-size: 0.85em; word-break: break-all; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
figure { display: inline-block; margin: 0.5em 1.5em 0.5em 0; vertical-align: top; }
figcaption { font-size: 0.85em; max-width: 560px; }
details { margin: 0.2em 0 0.8em; font-size: 0.9em; }
.note { color: #555; font-size: 0.9em; }
.sources td { text-align: left; font-family: ui-monospace, monospace; }
"""


@dataclass(frozen=True)
class Figure:
    svg: str  # from `reports.svg`
    data: Rows  # the numbers it draws
    caption: str = ""


@dataclass(frozen=True)
class Link:
    text: str
    href: str  # relative to the report, or absolute


@dataclass(frozen=True)
class Section:
    title: str
    notes: tuple[str, ...] = ()
    figures: tuple[Figure, ...] = ()
    tables: tuple[Rows, ...] = ()
    links: tuple[Link, ...] = ()


@dataclass(frozen=True)
class Report:
    kind: str  # run, evaluation, model, validation, stitching, build
    title: str
    sources: tuple[tuple[str, str], ...]  # (what, identity): toolchain, catalogue, model, dataset, input files
    sections: tuple[Section, ...]
    data: Mapping[str, Any] = field(default_factory=dict)  # the numbers behind the tables, for the JSON form

    def tables(self) -> list[Rows]:
        """Every table, figures' data included, in page order."""
        return [t for s in self.sections for t in (*(f.data for f in s.figures), *s.tables)]


_NUMBER = re.compile(r"^[+-]?[\d,]*\.?\d+(e[+-]?\d+)?%?$")


def _cell(text: str) -> str:
    """Numbers right-aligned, long code (pipelines, commands) in a small monospace font."""
    kind = " class='num'" if _NUMBER.match(text) else " class='code'" if len(text) > 80 else ""
    return f"<td{kind}>{html.escape(text)}</td>"


def _table_html(rows: Rows) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in rows.headers)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows.rows)
    table = f"<table><caption>{html.escape(rows.title)}</caption><tr>{head}</tr>{body}</table>"
    return table + (f"<p class='note'>{html.escape(rows.caption)}</p>" if rows.caption else "")


def _section_html(section: Section) -> str:
    parts = [f"<section><h2>{html.escape(section.title)}</h2>"]
    parts += [f"<p class='note'>{html.escape(note)}</p>" for note in section.notes]
    for figure in section.figures:
        caption = f"<figcaption>{html.escape(figure.caption)}</figcaption>" if figure.caption else ""
        parts.append(
            f"<figure>{figure.svg}{caption}<details><summary>numbers</summary>"
            f"{_table_html(figure.data)}</details></figure>"
        )
    parts += [_table_html(table) for table in section.tables]
    if section.links:
        items = "".join(
            f"<li><a href='{html.escape(link.href, quote=True)}'>{html.escape(link.text)}</a></li>"
            for link in section.links
        )
        parts.append(f"<ul>{items}</ul>")
    parts.append("</section>")
    return "".join(parts)


def to_html(report: Report, generated: str) -> str:
    """One page with inline CSS and SVG: no scripts, no fonts or images fetched."""
    sources = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in report.sources)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            "<html lang='en'><head><meta charset='utf-8'>",
            f"<title>stitchopt: {html.escape(report.title)}</title><style>{_STYLE}</style></head><body>",
            f"<h1>{html.escape(report.title)}</h1>",
            f"<table class='sources'><caption>Made from</caption>{sources}</table>",
            f"<p class='note'>stitchopt {html.escape(report.kind)} report, generated {html.escape(generated)}</p>",
            *(_section_html(section) for section in report.sections),
            "</body></html>",
            "",
        ]
    )


def to_md(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    lines += [f"- {what}: `{identity}`" for what, identity in report.sources]
    for section in report.sections:
        lines += ["", f"## {section.title}", ""]
        lines += [f"{note}\n" for note in section.notes]
        for table in (*(f.data for f in section.figures), *section.tables):
            lines += [f"**{table.title}**", "", to_markdown(table), ""]
        lines += [f"- [{link.text}]({link.href})" for link in section.links]
    return "\n".join(lines).rstrip("\n") + "\n"


def to_csv(report: Report) -> str:
    """Every table in turn: a `# section: title` line, the header, the rows, a blank line."""
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    for what, identity in report.sources:
        writer.writerow([f"# {what}", identity])
    for section in report.sections:
        for table in (*(f.data for f in section.figures), *section.tables):
            stream.write("\n")
            writer.writerow([f"# {section.title}: {table.title}"])
            writer.writerow(table.headers)
            writer.writerows(table.rows)
    return stream.getvalue()


def to_json(report: Report, generated: str) -> str:
    """The sections' notes and tables (cells as shown), and the numbers behind them where the kind keeps them."""
    document = {
        "kind": report.kind,
        "title": report.title,
        "generated": generated,
        "sources": [{"what": what, "identity": identity} for what, identity in report.sources],
        "sections": [
            {
                "title": section.title,
                "notes": list(section.notes),
                "tables": [asdict(t) for t in (*(f.data for f in section.figures), *section.tables)],
                "links": [asdict(link) for link in section.links],
            }
            for section in report.sections
        ],
        **({"data": report.data} if report.data else {}),
    }
    return json.dumps(document, indent=1) + "\n"


def generated_now() -> str:
    """The one line of a report that changes between runs on the same data."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render(report: Report, fmt: str, generated: str) -> str:
    if fmt == "html":
        return to_html(report, generated)
    if fmt == "json":
        return to_json(report, generated)
    return to_md(report) if fmt == "md" else to_csv(report)
