"""A detection study's rows counted again on a subset: without the test functions whose IR has a twin of the
other label (Juliet's `badSink` compiled like a `goodG2BSink`)."""

from __future__ import annotations

from stitchopt.vulnerability.results import DetectionReport, DetectionRow, HeldOutFunction, tally


def test_without_twins_counts_every_row_again_on_the_functions_a_reader_can_tell_apart() -> None:
    tests = [
        HeldOutFunction("CWE1", "bad", twin=True),  # reads exactly like the good function below
        HeldOutFunction("CWE1", "good", twin=True),
        HeldOutFunction("CWE1", "bad"),
        HeldOutFunction("CWE2", "good"),
    ]
    detector = DetectionRow(
        "detector", "detector", tally(tests, [True, True, True, False]), threshold=0.5, risks=(0.9, 0.9, 0.7, 0.1)
    )
    anchor = DetectionRow("tool", "anchor", tally(tests, [False] * 4), flags=(False, False, False, True))
    report = DetectionReport({"test": {"bad": 2, "good": 2}}, ("CWE1", "CWE2"), "detector", "", [detector, anchor])
    report.tests = tests
    assert detector.overall.fp == 1 and detector.verdicts() == (True, True, True, False)
    distinct = report.without_twins()
    assert distinct.functions["test"] == {"bad": 1, "good": 1} and len(distinct.tests) == 2
    kept_detector, kept_anchor = distinct.rows
    assert (kept_detector.overall.tp, kept_detector.overall.fp, kept_detector.overall.tn) == (1, 0, 1)
    assert (kept_anchor.overall.fn, kept_anchor.overall.fp) == (1, 1)
    assert kept_detector.overall.cwe_accuracy is None  # no per-function guesses kept
