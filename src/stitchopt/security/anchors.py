"""The static analyzers C users already run, as rows of the detection study: each Juliet test function is
called bad when the analyzer reports a finding inside it (`security.analyzers`), on the same functions and in
the same order as the detectors' rows, so the table compares like with like."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.juliet import JulietCase, JulietFunction
from stitchopt.features.base import FeatureCache
from stitchopt.security.analyzers import ANALYZERS, analyzer_predictions
from stitchopt.security.calibration import threshold_for
from stitchopt.security.model import DetectorModel
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


def operating_points(
    toolchain: Toolchain,
    detector: DetectionRow,
    model: DetectorModel,
    anchors: Sequence[DetectionRow],
    validation: Sequence[JulietFunction],
    test: Sequence[JulietFunction],
    cases: Sequence[JulietCase],
    support_dir: Path,
    *,
    store: EvaluationStore | None = None,
    jobs: int = 1,
) -> list[DetectionRow]:
    """The detector (`detector`, the row of `model`) once per anchor, its threshold chosen on the validation
    split so that its false-positive rate there is at most the anchor's there: the two then compare at no
    higher false-positive rate, with nothing chosen on the test split."""
    cache = FeatureCache(store) if store is not None else None
    good = np.array([f.label == "good" for f in validation])
    risk = np.array([found.risk for found in model.predict(toolchain, [f.bitcode for f in validation], cache)])
    test_risk = np.array(detector.risks)
    guesses = [found.cwe for found in model.predict(toolchain, [f.bitcode for f in test], cache)]
    rows = []
    for anchor in anchors:
        analyzer = next(key for key, name in ANCHOR_NAMES.items() if name == anchor.name)
        (seen,) = anchor_rows(toolchain, validation, cases, support_dir, analyzers=[analyzer], store=store, jobs=jobs)
        allowed = int(np.sum(np.array(seen.flags) & good))  # the anchor's false positives on validation
        threshold = threshold_for(risk[good], allowed)
        flags = tuple(bool(r >= threshold) for r in test_risk)
        rows.append(
            replace(
                detector,
                name=f"{detector.name} at {anchor.name}'s false-positive rate",
                kind="operating point",
                counts=tally(test, flags, guesses),
                init=anchor.name,
                threshold=threshold,
                validation_f1=None,
                seconds=0.0,
            )
        )
    return rows
