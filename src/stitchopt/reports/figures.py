"""Figures more than one report draws: per-program changes against -Oz, and what a set of pass lists holds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from stitchopt.evaluation.comparison import geomean
from stitchopt.reports.document import Figure
from stitchopt.reports.svg import bar_chart, histogram
from stitchopt.reports.tables import Rows

TOP_PASSES = 30


def outcome_counts(changes: Sequence[float]) -> str:
    """`improved / unchanged / regressed` counts of per-program changes (in %, below 0 is better)."""
    better = sum(c < 0 for c in changes)
    worse = sum(c > 0 for c in changes)
    return f"{better} improved / {len(changes) - better - worse} unchanged / {worse} regressed"


def geomean_percent(changes: Sequence[float]) -> float | None:
    """Geometric mean of size ratios, as a % change (changes in %)."""
    mean = geomean([1 + c / 100 for c in changes])
    return None if mean is None else 100 * (mean - 1)


def change_figures(name: str, labelled: Sequence[tuple[str, float]], what: str) -> tuple[Figure, Figure]:
    """Sorted per-program bars with the geomean line, and the distribution of the same changes."""
    ordered = sorted(labelled, key=lambda item: (item[1], item[0]))
    changes = [c for _, c in ordered]
    mean = geomean_percent(changes)
    bars = bar_chart(
        f"{name}: {what} vs -Oz per program",
        [p for p, _ in ordered],
        changes,
        y_label="% vs -Oz (lower is better)",
        reference=mean,
        reference_label="geomean",
    )
    data = Rows(f"{name}: per program", ["program", "% vs -Oz"], [[p, f"{c:+.2f}"] for p, c in ordered])
    spread = histogram(f"{name}: distribution", changes, x_label="% vs -Oz")
    caption = outcome_counts(changes) + ("" if mean is None else f"; geomean {mean:+.2f}%")
    summary = Rows(
        f"{name}: summary",
        ["programs", "geomean % vs -Oz", "improved", "unchanged", "regressed"],
        [
            [
                str(len(changes)),
                "-" if mean is None else f"{mean:+.2f}",
                str(sum(c < 0 for c in changes)),
                str(sum(c == 0 for c in changes)),
                str(sum(c > 0 for c in changes)),
            ]
        ],
    )
    return Figure(bars, data, caption), Figure(spread, summary, caption)


def list_figures(what: str, lists: Sequence[Sequence[str]]) -> tuple[Figure, Figure]:
    """How many of `lists` use each pass (the most used first), and the distribution of their lengths."""
    counts = Counter(name for passes in lists for name in set(passes))
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP_PASSES]
    bars = bar_chart(
        f"Passes in the {what} (top {len(top)})",
        [n for n, _ in top],
        [float(c) for _, c in top],
        y_label="lists using it",
        lower_is_better=False,
    )
    lengths = Counter(len(passes) for passes in lists)
    spread = histogram(f"Lengths of the {what}", [float(len(p)) for p in lists], x_label="passes", integer=True)
    return (
        Figure(bars, Rows(f"Pass frequency in the {what}", ["pass", "lists"], [[n, str(c)] for n, c in top])),
        Figure(
            spread,
            Rows(f"Lengths of the {what}", ["passes", "lists"], [[str(n), str(c)] for n, c in sorted(lengths.items())]),
        ),
    )
