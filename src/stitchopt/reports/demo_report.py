"""The report `stitchopt demo` writes: the shipped model's static and jit answers on the built-in corpus
(checked by running each program), clang's own levels beside them, and the lists the model picked."""

from __future__ import annotations

from collections.abc import Sequence

from stitchopt.evaluation.comparison import Comparison
from stitchopt.learning.corpus_choices import CorpusChoice
from stitchopt.reports.document import Report, Section
from stitchopt.reports.figures import change_figures, geomean_percent, list_figures
from stitchopt.reports.sources import program_set_identity
from stitchopt.reports.tables import Rows, corpus_rows


def _change(size: int, oz: int) -> float:
    return 100 * (size / oz - 1)


def _self_check(choice: CorpusChoice) -> str:
    """`ran OK` when the program behaved under the jit answer, and how many better lists it turned away."""
    rejected = sum("failed" in note for note in choice.jit.notes)
    verdict = "-" if choice.jit.passes is None else "ran OK"
    return verdict + (f", {rejected} list(s) rejected" if rejected else "")


def choice_rows(choices: Sequence[CorpusChoice]) -> Rows:
    """Per program: -Oz size, static and jit sizes and changes, and what the self-check said."""
    rows = [
        [
            c.program,
            f"{c.jit.oz_size_bytes:,}",
            f"{c.static.size_bytes:,}",
            f"{_change(c.static.size_bytes, c.static.oz_size_bytes):+.2f}%",
            f"{c.jit.size_bytes:,}",
            f"{_change(c.jit.size_bytes, c.jit.oz_size_bytes):+.2f}%",
            "-Oz (backup)" if c.jit.passes is None else str(len(c.jit.passes)),
            _self_check(c),
        ]
        for c in choices
    ]
    means = [
        geomean_percent([_change(getattr(c, mode).size_bytes, getattr(c, mode).oz_size_bytes) for c in choices])
        for mode in ("static", "jit")
    ]
    rows.append(
        [
            f"geomean ({len(choices)})",
            "",
            "",
            "-" if means[0] is None else f"{means[0]:+.2f}%",
            "",
            "-" if means[1] is None else f"{means[1]:+.2f}%",
            "",
            "",
        ]
    )
    headers = ["program", "-Oz B", "static B", "static vs -Oz", "jit B", "jit vs -Oz", "jit passes", "self-check"]
    return Rows("The shipped model on the corpus", headers, rows)


def demo_report(
    corpus: str,
    comparisons: Sequence[Comparison],
    choices: Sequence[CorpusChoice],
    sources: Sequence[tuple[str, str]],
    k: int,
) -> Report:
    modes = []
    for mode, label in (("jit", f"jit (top {k} lists and -Oz compiled)"), ("static", "static (top list and -Oz)")):
        changes = [(c.program, _change(getattr(c, mode).size_bytes, getattr(c, mode).oz_size_bytes)) for c in choices]
        bars, spread = change_figures(label, changes, "size")
        modes.append(Section(f"Shipped model, {label}", (), (bars, spread)))
    levels = []
    for level in ("O3", "O0"):
        changes = [(c.name, change) for c in comparisons if (change := c.size_change_vs_oz(level)) is not None]
        bars, _ = change_figures(f"clang -{level}", changes, "size")
        levels.append(bars)
    picked = [c.jit.passes for c in choices if c.jit.passes is not None]
    lists = list_figures("lists jit mode picked", [list(p) for p in picked]) if picked else ()
    note = (
        "Every answer is never larger than -Oz, and is a list under which the program printed what its -O0 "
        "and -O2 builds print (a list that changed the output was skipped)."
    )
    sections = [
        *modes,
        Section("Answers", (note,), tables=(choice_rows(choices),)),
        Section(
            "Lists picked",
            (f"{len(picked)} of {len(choices)} programs got a pass list; the rest kept -Oz.",),
            tuple(lists),
        ),
        Section("clang's levels against -Oz", (), tuple(levels), (corpus_rows(comparisons, corpus),)),
    ]
    all_sources = (*sources, ("programs", program_set_identity(c.name for c in comparisons)))
    jit = geomean_percent([_change(c.jit.size_bytes, c.jit.oz_size_bytes) for c in choices])
    title = f"stitchopt demo: {corpus}" + ("" if jit is None else f", jit {jit:+.2f}% vs -Oz")
    return Report("demo", title, all_sources, tuple(sections))
