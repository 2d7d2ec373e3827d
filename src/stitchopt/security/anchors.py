"""The static analyzers C users already run, as rows of the detection study: each Juliet test function is
called bad when the analyzer reports a finding inside it (`security.analyzers`), on the same functions and in
the same order as the detectors' rows, so the table compares like with like."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.juliet import JulietCase, JulietFunction
from stitchopt.security.analyzers import ANALYZERS, analyzer_predictions
from stitchopt.security.results import DetectionRow, tally
from stitchopt.toolchain.discovery import Toolchain

ANCHOR_NAMES = {"clang": "clang --analyze", "cppcheck": "cppcheck"}


def anchor_rows(
    toolchain: Toolchain,
    test: Sequence[JulietFunction],
    cases: Sequence[JulietCase],
    support_dir: Path,
    *,
    analyzers: Sequence[str] = ANALYZERS,
    store: EvaluationStore | None = None,
    jobs: int = 1,
) -> list[DetectionRow]:
    """One anchor row per analyzer on the `test` functions (of `cases`). A finding's CWE guess counts as right
    when the function's CWE is among the CWEs its checker points to (a buffer checker names the five buffer
    CWEs at once: the analyzers do not tell a stack overflow from a heap underread)."""
    ids = {f.case for f in test}
    chosen = [case for case in cases if case.id in ids]
    rows = []
    for analyzer in analyzers:
        found = analyzer_predictions(toolchain, chosen, support_dir, analyzer, store, jobs)
        hits = [found[f.case, f.name] for f in test]
        guesses = [
            None if h is None else (f.cwe if f.cwe in h.cwes else h.cwe) for f, h in zip(test, hits, strict=True)
        ]
        flags = tuple(h is not None for h in hits)
        rows.append(DetectionRow(ANCHOR_NAMES[analyzer], "anchor", tally(test, flags, guesses), flags=flags))
    return rows
