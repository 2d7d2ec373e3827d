"""The verification rule on hand-made outcomes: a win of 10% or more counts in the method table only with run
evidence, else as -Oz, and is reported apart; evidence files; old evaluation files judged on load."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from stitchopt.errors import InputError
from stitchopt.learning.heldout import Evaluation, ProgramOutcome, judged, summarize, without_packages
from stitchopt.learning.verification import UNVERIFIED_WIN_RATIO, RunEvidence
from stitchopt.reports.flag_tuning import evaluation_csv, evaluation_json, load_evaluation, method_tables
from stitchopt.reports.tables import to_markdown

LIST = "always-inline,function(sroa)"


def _outcome(
    uri: str, ratios: dict[str, float], evidence: RunEvidence | None = None, package: str = "p"
) -> ProgramOutcome:
    """Every method's win made by LIST."""
    outcome = ProgramOutcome(uri, 1000, ratios, dict.fromkeys(ratios, 2), 1.0, package, dict.fromkeys(ratios, LIST))
    return judged(outcome, evidence or RunEvidence(), (uri,))


def _evaluation(outcomes: list[ProgramOutcome]) -> Evaluation:
    return Evaluation(tuple(outcomes), summarize(outcomes), {}, 1.0, 1.0)


def test_a_large_win_without_evidence_counts_as_oz_and_is_listed_apart() -> None:
    outcomes = [_outcome("a.c", {"jit k=5": 0.5}), _outcome("b.c", {"jit k=5": 0.95})]
    assert outcomes[0].unverified == ("jit k=5",) and outcomes[1].unverified == ()
    (jit,) = summarize(outcomes)
    assert jit.geomean_change == pytest.approx(math.sqrt(0.95) - 1)  # a.c as -Oz
    assert jit.improved == 0.5 and jit.unchanged == 0.5 and jit.unverified == 1
    assert jit.geomean_if_counted == pytest.approx(math.sqrt(0.5 * 0.95) - 1)
    methods, apart = method_tables(_evaluation(outcomes), "t")
    assert methods.rows[0][1] == f"{100 * (math.sqrt(0.95) - 1):+.2f}%"
    assert apart.rows == [["jit k=5", "1", methods.rows[0][1], f"{100 * (math.sqrt(0.5 * 0.95) - 1):+.2f}%"]]
    assert "without run evidence" in apart.title


def test_run_evidence_lets_the_win_count(tmp_path: Path) -> None:
    evidence_file = tmp_path / "ran.jsonl"
    evidence_file.write_text(json.dumps({"program": "./a.c", "pipeline": f"-passes={LIST}"}) + "\n\n")
    evidence = RunEvidence.load(evidence_file)
    outcomes = [_outcome("a.c", {"jit k=5": 0.5}, evidence), _outcome("b.c", {"jit k=5": 0.5}, evidence)]
    assert outcomes[0].unverified == () and outcomes[1].unverified == ("jit k=5",)  # evidence is per program
    (jit,) = summarize(outcomes[:1])
    assert jit.geomean_change == pytest.approx(-0.5) and jit.unverified == 0 and jit.geomean_if_counted is None
    assert method_tables(_evaluation(outcomes[:1]), "t") == method_tables(_evaluation(outcomes[:1]), "t")[:1]


def test_the_threshold_the_unknown_pipeline_and_clangs_levels() -> None:
    ratios = {"at": UNVERIFIED_WIN_RATIO, "above": 0.91, "-Os": 0.5, "failed": math.inf}
    assert _outcome("a.c", ratios).unverified == ("at",)
    ran = RunEvidence(frozenset({(str(Path("a.c").resolve()), LIST)}))
    unknown = ProgramOutcome("a.c", 1000, {"autotuner": 0.5}, {}, 1.0)  # no pipeline recorded: cannot be backed
    assert judged(unknown, ran, ("a.c",)).unverified == ("autotuner",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"program": "a.c"}\n', "lacks a program or a pipeline"),
        ('{"program": "a.c", "pipeline": "sroa"}\nnot json\n', "line 2 is not JSON"),
        ("[1, 2]\n", "line 1 is not a JSON object"),
    ],
)
def test_a_bad_evidence_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "ran.jsonl").write_text(text)
    with pytest.raises(InputError, match=message) as caught:
        RunEvidence.load(tmp_path / "ran.jsonl")
    assert "\n" not in str(caught.value)


def test_tables_without_a_package_are_computed_again() -> None:
    outcomes = [_outcome("a.c", {"jit k=5": 0.8}, package="numpy"), _outcome("b.c", {"jit k=5": 0.95})]
    rest = without_packages(_evaluation(outcomes), ["numpy"])
    assert [o.uri for o in rest.programs] == ["b.c"] and rest.methods[0].geomean_change == pytest.approx(-0.05)
    assert rest.methods[0].unverified == 0


def test_outputs_carry_the_flags_and_read_back(tmp_path: Path) -> None:
    evaluation = _evaluation([_outcome("a.c", {"jit k=5": 0.5, "-O3": 1.2}), _outcome("b.c", {"jit k=5": 0.95})])
    (tmp_path / "e.json").write_text(evaluation_json(evaluation))
    assert load_evaluation(tmp_path / "e.json") == evaluation
    rows = list(csv.DictReader(io.StringIO(evaluation_csv(evaluation))))
    assert [(r["uri"], r["package"], r["unverified"]) for r in rows] == [("a.c", "p", "jit k=5"), ("b.c", "p", "")]
    assert rows[0]["jit k=5"] == "0.500000"  # the ratio as measured
    assert "| jit k=5 | 1 |" in to_markdown(method_tables(evaluation, "t")[1])


def test_an_evaluation_written_before_the_rule_loads_judged_by_it(tmp_path: Path) -> None:
    """No run evidence was recorded then: its large wins are unverified now, and its table is computed again."""
    old = {
        "programs": [
            {"uri": f"bench://x-v1/p/{name}", "oz_size": 1000, "ratios": {"jit k=5": ratio}, "compilations": {}}
            | {"inference_ms": 1.0}
            for name, ratio in (("a", 0.5), ("b", 0.95))
        ],
        "methods": [
            {
                "method": "jit k=5",
                "geomean_change": math.sqrt(0.5 * 0.95) - 1,
                "improved": 1.0,
                "unchanged": 0.0,
                "regressed": 0.0,
                "compilations": 6.0,
                "of_autotuner": None,
            }
        ],
        "size_mape": {},
        "inference_ms_median": 1.0,
        "inference_ms_max": 1.0,
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    loaded = load_evaluation(tmp_path / "old.json")
    assert [o.unverified for o in loaded.programs] == [("jit k=5",), ()]
    (jit,) = loaded.methods
    assert jit.geomean_change == pytest.approx(math.sqrt(0.95) - 1) and jit.unverified == 1
    assert jit.geomean_if_counted == pytest.approx(math.sqrt(0.5 * 0.95) - 1)  # what the old table said
