"""Plots as inline SVG strings, so a report is one file that opens offline: no scripts, nothing fetched, and
the same data always gives the same bytes (fixed number formats, no random ids).

Every chart is an `<svg class='plot'>` with a `<title>` on each mark, so hovering shows the exact value.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")
GOOD, BAD, NEUTRAL = "#2ca02c", "#d62728", "#999999"


def _f(value: float) -> str:
    """Coordinates with two decimals: enough for a screen, stable across platforms."""
    return f"{value:.2f}"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2 or 5 times a power of ten apart)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def _tick_label(value: float) -> str:
    return f"{value:g}" if abs(value) >= 1e-9 else "0"


@dataclass(frozen=True)
class _Axes:
    """A plotting area with linear x and y scales (y grows upward)."""

    width: int
    height: int
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    left: int = 56
    right: int = 16
    top: int = 28
    bottom: int = 44

    def x(self, value: float) -> float:
        low, high = self.x_range
        span = (high - low) or 1.0
        return self.left + (self.width - self.left - self.right) * (value - low) / span

    def y(self, value: float) -> float:
        low, high = self.y_range
        span = (high - low) or 1.0
        return self.height - self.bottom - (self.height - self.top - self.bottom) * (value - low) / span

    def frame(self, x_label: str, y_label: str, x_ticks: Sequence[float] | None = None) -> list[str]:
        """Axis lines, y grid with labels, optional x ticks, axis titles."""
        parts = []
        for tick in nice_ticks(*self.y_range):
            if self.y_range[0] - 1e-9 <= tick <= self.y_range[1] + 1e-9:
                y = _f(self.y(tick))
                parts.append(
                    f"<line x1='{self.left}' y1='{y}' x2='{self.width - self.right}' y2='{y}' "
                    f"stroke='#eee'/><text x='{self.left - 4}' y='{y}' dy='0.32em' text-anchor='end' "
                    f"font-size='10'>{_tick_label(tick)}</text>"
                )
        for tick in x_ticks or ():
            x = _f(self.x(tick))
            parts.append(
                f"<text x='{x}' y='{self.height - self.bottom + 14}' text-anchor='middle' "
                f"font-size='10'>{_tick_label(tick)}</text>"
            )
        base = _f(self.height - self.bottom)
        parts.append(f"<line x1='{self.left}' y1='{base}' x2='{self.width - self.right}' y2='{base}' stroke='#666'/>")
        parts.append(f"<line x1='{self.left}' y1='{self.top}' x2='{self.left}' y2='{base}' stroke='#666'/>")
        parts.append(
            f"<text x='{(self.left + self.width - self.right) / 2:.2f}' y='{self.height - 6}' "
            f"text-anchor='middle' font-size='11'>{_esc(x_label)}</text>"
        )
        parts.append(
            f"<text transform='translate(12,{(self.top + self.height - self.bottom) / 2:.2f}) rotate(-90)' "
            f"text-anchor='middle' font-size='11'>{_esc(y_label)}</text>"
        )
        return parts


def _svg(width: int, height: int, title: str, parts: Sequence[str]) -> str:
    return (
        f"<svg class='plot' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img' aria-label='{_esc(title)}'>"
        f"<text x='{width / 2:.2f}' y='16' text-anchor='middle' font-size='12' font-weight='bold'>"
        f"{_esc(title)}</text>{''.join(parts)}</svg>"
    )


def _padded(low: float, high: float, include_zero: bool = True) -> tuple[float, float]:
    if include_zero:
        low, high = min(low, 0.0), max(high, 0.0)
    if high - low < 1e-12:
        low, high = low - 1.0, high + 1.0
    ticks = nice_ticks(low, high)
    return ticks[0], ticks[-1]


def bar_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    y_label: str,
    reference: float | None = None,
    reference_label: str = "",
    lower_is_better: bool = True,
    colours: Sequence[str] = (),
) -> str:
    """One bar per item in the given order, coloured by sign (green: better than 0) unless `colours` gives one
    per bar; names appear as tooltips, and under the bars when there are few enough to read; `reference` draws
    a dashed line (e.g. the geomean)."""
    count = max(len(values), 1)
    show_names = len(values) <= 40
    width = max(360, min(1100, 60 + 14 * count)) if show_names else max(360, min(1100, 80 + 4 * count))
    low, high = _padded(min(values, default=0.0), max(values, default=0.0))
    axes = _Axes(width, 300 if show_names else 240, (0.0, float(count)), (low, high), bottom=110 if show_names else 30)
    parts = axes.frame("" if show_names else f"{len(values)} items, sorted", y_label)
    slot = (axes.width - axes.left - axes.right) / count
    zero = axes.y(0.0)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        better = value < 0 if lower_is_better else value > 0
        colour = colours[i] if colours else NEUTRAL if value == 0 else GOOD if better else BAD
        top, bottom = sorted((axes.y(value), zero))
        x = axes.x(i) + 0.1 * slot
        parts.append(
            f"<rect x='{_f(x)}' y='{_f(top)}' width='{_f(0.8 * slot)}' height='{_f(max(bottom - top, 0.5))}' "
            f"fill='{colour}'><title>{_esc(label)}: {value:+.2f}</title></rect>"
        )
        if show_names:
            middle = _f(axes.x(i + 0.5))
            parts.append(
                f"<text transform='translate({middle},{_f(axes.height - axes.bottom + 8)}) rotate(60)' "
                f"font-size='9'>{_esc(label[:18])}</text>"
            )
    if reference is not None:
        y = _f(axes.y(reference))
        parts.append(
            f"<line x1='{axes.left}' y1='{y}' x2='{axes.width - axes.right}' y2='{y}' stroke='#333' "
            f"stroke-dasharray='5,3'><title>{_esc(reference_label)}: {reference:+.2f}</title></line>"
            f"<text x='{axes.width - axes.right}' y='{y}' dy='-4' text-anchor='end' font-size='10'>"
            f"{_esc(reference_label)} {reference:+.2f}</text>"
        )
    return _svg(width, axes.height, title, parts)


def histogram(title: str, values: Sequence[float], *, x_label: str, bins: int = 20, integer: bool = False) -> str:
    """Counts per bin of equal width; `integer` gives one bin per whole number (e.g. list lengths)."""
    if not values:
        low, high, bins = 0.0, 1.0, 1
    elif integer:
        low, high = math.floor(min(values)) - 0.5, math.ceil(max(values)) + 0.5
        bins = int(high - low)
    else:
        low, high = min(values), max(values)
        if high - low < 1e-12:
            low, high = low - 0.5, high + 0.5
    step = (high - low) / bins
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / step), bins - 1)] += 1
    top = max(counts, default=1) or 1
    axes = _Axes(440, 240, (low, high), (0.0, float(nice_ticks(0, top)[-1])))
    x_ticks = nice_ticks(low, high, 6) if not integer else [float(v) for v in range(int(low + 0.5), int(high + 0.5))]
    if integer and len(x_ticks) > 20:
        x_ticks = x_ticks[:: math.ceil(len(x_ticks) / 20)]
    parts = axes.frame(x_label, "programs" if not integer else "count", [t for t in x_ticks if low <= t <= high])
    for i, count in enumerate(counts):
        left, right = low + i * step, low + (i + 1) * step
        x0, x1, y = axes.x(left), axes.x(right), axes.y(count)
        parts.append(
            f"<rect x='{_f(x0)}' y='{_f(y)}' width='{_f(max(x1 - x0 - 1, 0.5))}' "
            f"height='{_f(axes.y(0) - y)}' fill='{PALETTE[0]}'><title>{left:g} to {right:g}: {count}"
            "</title></rect>"
        )
    return _svg(axes.width, axes.height, title, parts)


def line_chart(
    title: str,
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    x_label: str,
    y_label: str,
    integer_x: bool = False,
) -> str:
    """One polyline per series (x ascending), with a legend; points carry tooltips. `integer_x` keeps x ticks
    on whole numbers (counts of things)."""
    points = [p for values in series.values() for p in values]
    xs, ys = [p[0] for p in points] or [0.0, 1.0], [p[1] for p in points] or [0.0, 1.0]
    axes = _Axes(560, 300, (min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1), _padded(min(ys), max(ys)))
    x_ticks = nice_ticks(axes.x_range[0], axes.x_range[1], 6)
    if integer_x:
        x_ticks = [t for t in x_ticks if t == int(t)]
    parts = axes.frame(x_label, y_label, x_ticks)
    for index, (name, values) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        path = " ".join(f"{_f(axes.x(x))},{_f(axes.y(y))}" for x, y in values)
        parts.append(
            f"<polyline points='{path}' fill='none' stroke='{colour}' stroke-width='2'>"
            f"<title>{_esc(name)}</title></polyline>"
        )
        if len(values) <= 30:
            parts += [
                f"<circle cx='{_f(axes.x(x))}' cy='{_f(axes.y(y))}' r='2.5' fill='{colour}'>"
                f"<title>{_esc(name)}: {x:g}, {y:+.2f}</title></circle>"
                for x, y in values
            ]
        parts.append(
            f"<text x='{axes.left + 8}' y='{axes.top + 12 + 14 * index}' font-size='11' fill='{colour}'>"
            f"{_esc(name)}</text>"
        )
    return _svg(axes.width, axes.height, title, parts)


def scatter(
    title: str,
    points: Sequence[tuple[float, float, str]],
    *,
    x_label: str,
    y_label: str,
    front: Sequence[tuple[float, float, str]] = (),
) -> str:
    """Grey points, and the Pareto `front` (lower-left is better) as red points joined by a step line."""
    every = [*points, *front]
    xs, ys = [p[0] for p in every] or [0.0, 1.0], [p[1] for p in every] or [0.0, 1.0]
    axes = _Axes(440, 300, _padded(min(xs), max(xs), False), _padded(min(ys), max(ys), False))
    parts = axes.frame(x_label, y_label, nice_ticks(axes.x_range[0], axes.x_range[1], 5))
    parts += [
        f"<circle cx='{_f(axes.x(x))}' cy='{_f(axes.y(y))}' r='2' fill='#bbb'><title>{_esc(label)}: "
        f"{x:g}, {y:g}</title></circle>"
        for x, y, label in points
    ]
    ordered = sorted(front)
    if ordered:
        steps = []
        for (x0, y0, _), (x1, _, _) in zip(ordered, [*ordered[1:], ordered[-1]], strict=True):
            steps += [f"{_f(axes.x(x0))},{_f(axes.y(y0))}", f"{_f(axes.x(x1))},{_f(axes.y(y0))}"]
        parts.append(f"<polyline points='{' '.join(steps)}' fill='none' stroke='{BAD}' stroke-width='1.5'/>")
        parts += [
            f"<circle cx='{_f(axes.x(x))}' cy='{_f(axes.y(y))}' r='3.5' fill='{BAD}'><title>{_esc(label)}: "
            f"{x:g}, {y:g}</title></circle>"
            for x, y, label in ordered
        ]
    return _svg(axes.width, axes.height, title, parts)


def _diverging(value: float, scale: float) -> str:
    """Blue for negative, red for positive, white at 0; |value| >= scale is fully saturated."""
    t = min(abs(value) / scale, 1.0) if scale > 0 else 0.0
    fade = int(255 * (1 - t))
    return f"rgb({fade},{fade},255)" if value < 0 else f"rgb(255,{fade},{fade})"


def _sequential(value: float, top: float) -> str:
    """White at 0 to black at `top`."""
    shade = int(255 * (1 - min(value / top, 1.0))) if top > 0 else 255
    return f"rgb({shade},{shade},{shade})"


def heatmap(
    title: str,
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    diverging: bool = True,
    annotate: bool = True,
) -> str:
    """A matrix of cells: diverging (blue below 0, red above) or sequential (white to black); None is grey.
    Labels are drawn when there are names; `annotate` writes each value in its cell."""
    known = [v for row in values for v in row if v is not None]
    scale = max((abs(v) for v in known), default=1.0) or 1.0
    cells = max(len(rows), len(columns), 1)
    cell = 56 if annotate else max(2, 240 // cells)
    label = 150 if any(rows) else 0
    top = 30 + (100 if any(columns) else 0)
    width, height = label + cell * len(columns) + 8, top + cell * len(rows) + 8
    stroke = " stroke='#fff'" if annotate else ""
    parts = []
    for i, row in enumerate(values):
        y = top + i * cell
        if rows[i]:
            parts.append(
                f"<text x='{label - 6}' y='{y + cell / 2:.2f}' dy='0.32em' text-anchor='end' "
                f"font-size='11'>{_esc(rows[i][:22])}</text>"
            )
        for j, value in enumerate(row):
            x = label + j * cell
            fill = "#eee" if value is None else _diverging(value, scale) if diverging else _sequential(value, scale)
            text = "" if value is None else f"{value:+.4f}" if diverging else f"{value:.4g}"
            name = f"{_esc(rows[i])} -&gt; {_esc(columns[j])}: " if rows[i] or columns[j] else f"({i}, {j}): "
            parts.append(
                f"<rect x='{x}' y='{y}' width='{cell}' height='{cell}' fill='{fill}'{stroke}>"
                f"<title>{name}{text}</title></rect>"
            )
            if annotate and value is not None:
                parts.append(
                    f"<text x='{x + cell / 2:.2f}' y='{y + cell / 2:.2f}' dy='0.32em' text-anchor='middle' "
                    f"font-size='9'>{text}</text>"
                )
    for j, column in enumerate(columns):
        if column:
            middle = label + j * cell + cell / 2
            parts.append(
                f"<text transform='translate({middle:.2f},{top - 6}) rotate(-40)' font-size='11'>"
                f"{_esc(column[:22])}</text>"
            )
    return _svg(width, height, title, parts)
