"""`stitchopt stitch inspect`: one self-contained HTML page (inline SVG and CSS, no scripts, nothing fetched)
for looking at a stitching study: the stitching penalty of every pair, the transport plans between hidden
spaces, the ensemble curve and the experts."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from stitchopt.models.ranker import geomean_change
from stitchopt.reports.stitching import comparisons, curve_rows, expert_rows
from stitchopt.reports.tables import Rows
from stitchopt.stitching.results import INITIALIZATIONS, PairAlignment, StudyReport

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
figure { display: inline-block; margin: 0.5em 1.5em 0.5em 0; vertical-align: top; }
figcaption { font-size: 0.85em; max-width: 280px; }
.note { color: #555; font-size: 0.9em; }
"""


def inspect_page(report: StudyReport, exclude: str | None = None) -> str:
    """The whole page as a string."""
    names = [e.name for e in report.experts if not e.name.startswith("ranker")]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>stitchopt: stitching study</title>",
        f"<style>{_STYLE}</style></head><body><h1>Stitching study</h1>",
        "".join(f"<p class='note'>{html.escape(line)}</p>" for line in comparisons(report)),
        _table(expert_rows(report, exclude)),
        "<h2>Stitching penalty (held-out loss of A -&gt; B minus B's own)</h2>",
        "<p class='note'>Rows: A (whose encoder is used); columns: B (whose head predicts). Blue: A's hidden "
        "space serves B's head better than B's own; red: worse.</p>",
        "".join(_penalty_matrix(report, names, init) for init in INITIALIZATIONS),
        "<h2>Stitched ensembles</h2>",
        _curve(report),
        _table(curve_rows(report, exclude)),
        "<h2>Optimal-transport plans between hidden spaces (training programs)</h2>",
        "<p class='note'>Each plan summed over blocks of units; a bright diagonal would mean units that match one "
        "to one (experts trained from different seeds order their units arbitrarily, so a match is any "
        "permutation).</p>",
        "".join(_plan(a) for a in report.alignments),
        "</body></html>",
    ]
    return "\n".join(parts)


def _table(rows: Rows) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in rows.headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows.rows)
    return f"<h2>{html.escape(rows.title)}</h2><table><tr>{head}</tr>{body}</table>"


def _diverging(value: float, scale: float) -> str:
    """Blue for negative, red for positive, white at 0; |value| >= scale is fully saturated."""
    t = min(abs(value) / scale, 1.0) if scale > 0 else 0.0
    fade = int(255 * (1 - t))
    return f"rgb({fade},{fade},255)" if value < 0 else f"rgb(255,{fade},{fade})"


def _penalty_matrix(report: StudyReport, names: Sequence[str], init: str) -> str:
    penalties = {(p.source, p.target): p.penalty for p in report.pairs if p.init == init}
    if not penalties:
        return ""
    scale = max(abs(v) for v in penalties.values()) or 1.0
    cell, label = 56, 150
    size = label + cell * len(names)
    shapes = []
    for i, source in enumerate(names):
        y = label + i * cell
        shapes.append(f"<text x='{label - 6}' y='{y + cell / 2 + 4}' text-anchor='end' font-size='11'>"
                      f"{html.escape(source[:22])}</text>")  # fmt: skip
        for j, target in enumerate(names):
            x = label + j * cell
            value = penalties.get((source, target))
            fill = "#eee" if value is None else _diverging(value, scale)
            text = "" if value is None else f"{value:+.4f}"
            shapes.append(f"<rect x='{x}' y='{y}' width='{cell}' height='{cell}' fill='{fill}' stroke='#fff'>"
                          f"<title>{html.escape(source)} -&gt; {html.escape(target)}: {text}</title></rect>"
                          f"<text x='{x + cell / 2}' y='{y + cell / 2 + 3}' text-anchor='middle' "
                          f"font-size='9'>{text}</text>")  # fmt: skip
    for j, target in enumerate(names):
        middle = label + j * cell + cell / 2
        shapes.append(f"<text transform='translate({middle},{label - 6}) rotate(-40)' font-size='11'>"
                      f"{html.escape(target[:22])}</text>")  # fmt: skip
    svg = f"<svg width='{size}' height='{size}' role='img'>{''.join(shapes)}</svg>"
    return f"<figure>{svg}<figcaption>layer: {html.escape(init)}</figcaption></figure>"


def _curve(report: StudyReport) -> str:
    """Validation and held-out change (static + backup) against the number of stitched experts."""
    if not report.curve:
        return ""
    series = {
        "validation": [100 * geomean_change(np.array(c.validation)) for c in report.curve],
        "held out": [100 * geomean_change(np.array(c.held_out)) for c in report.curve],
    }
    values = [v for points in series.values() for v in points]
    low, high = min(values + [0.0]), max(values + [0.0])
    width, height, margin = 420, 240, 40
    span = (high - low) or 1.0

    def point(k: int, value: float) -> str:
        x = margin + (width - 2 * margin) * (k / max(len(report.curve) - 1, 1))
        y = margin + (height - 2 * margin) * (value - low) / span  # more negative (better) is higher up
        return f"{x:.1f},{height - y:.1f}"

    shapes = [f"<line x1='{margin}' y1='{height - margin}' x2='{width - margin}' y2='{height - margin}' "
              "stroke='#999'/>"]  # fmt: skip
    for (name, points), color in zip(series.items(), ("#1f77b4", "#d62728"), strict=True):
        path = " ".join(point(k, v) for k, v in enumerate(points))
        shapes.append(f"<polyline points='{path}' fill='none' stroke='{color}' stroke-width='2'/>")
        for k, v in enumerate(points):
            x, y = point(k, v).split(",")
            shapes.append(f"<circle cx='{x}' cy='{y}' r='3' fill='{color}'><title>{name}, k={k + 1}: "
                          f"{v:+.2f}%</title></circle>")  # fmt: skip
    for k in range(len(report.curve)):
        x, _ = point(k, low).split(",")
        shapes.append(f"<text x='{x}' y='{height - margin + 16}' text-anchor='middle' font-size='11'>k={k + 1}</text>")
    legend = " ".join(f"<tspan fill='{c}'>{n}</tspan>" for n, c in (("validation", "#1f77b4"), ("held out", "#d62728")))
    shapes.append(f"<text x='{margin}' y='16' font-size='12'>{legend} (geomean vs -Oz, %; lower is better)</text>")
    return f"<figure><svg width='{width}' height='{height}' role='img'>{''.join(shapes)}</svg></figure>"


def _plan(alignment: PairAlignment) -> str:
    plan = np.array(alignment.plan)
    cell = max(2, 160 // max(plan.shape))
    top = plan.max() or 1.0
    shapes = []
    for i, row in enumerate(plan):
        for j, value in enumerate(row):
            shade = int(255 * (1 - value / top))
            shapes.append(f"<rect x='{j * cell}' y='{i * cell}' width='{cell}' height='{cell}' "
                          f"fill='rgb({shade},{shade},{shade})'/>")  # fmt: skip
    svg = f"<svg width='{plan.shape[1] * cell}' height='{plan.shape[0] * cell}' role='img'>{''.join(shapes)}</svg>"
    caption = (f"{html.escape(alignment.source)} (rows) -&gt; {html.escape(alignment.target)} (columns): transport "
               f"cost {alignment.transport_cost:.3f}, matched units' mean correlation "
               f"{alignment.matched_correlation:.2f}, {1000 * alignment.seconds:.0f} ms")  # fmt: skip
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"
