import json
from pathlib import Path

import pytest

from stitchopt.errors import InputError
from stitchopt.tune.pareto import fronts_from_log, pareto_front
from stitchopt.tune.record import ProgramRecord, RunRecord


def _trial(size: int, seconds: float, passes: int = 3, status: str = "ok") -> dict[str, object]:
    return {
        "program": "p.c",
        "status": status,
        "size_bytes": size,
        "compile_seconds": seconds,
        "ir_instruction_count": 10,
        "passes": ["sroa"] * passes,
        "pipeline": "function(sroa)",
    }


def test_pareto_front_keeps_only_non_dominated_points() -> None:
    trials = [
        _trial(100, 0.5),
        _trial(90, 0.9),
        _trial(95, 0.95),
        _trial(80, 2.0),
        _trial(70, 0.1, status="crash"),
        _trial(100, 0.5, passes=1),
    ]
    front = pareto_front(trials, ("size", "compile-time"))
    assert [(t["size_bytes"], t["compile_seconds"]) for t in front] == [(80, 2.0), (90, 0.9), (100, 0.5)]
    assert len(front[-1]["passes"]) == 1  # the shortest list of equal points


def test_trial_log_errors_are_one_line(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text(json.dumps(_trial(1, 1.0)) + "\nnot json\n")
    with pytest.raises(InputError, match="line 2 is not JSON"):
        fronts_from_log(log, ("size",))
    log.write_text(json.dumps(_trial(1, 1.0)) + '\n{"score": 1}\n')
    with pytest.raises(InputError, match="trial 2 has no program: not a stitchopt trial log"):
        fronts_from_log(log, ("size",))
    with pytest.raises(InputError, match="unknown metric 'speed'"):
        fronts_from_log(log, ("speed",))
    with pytest.raises(InputError, match="no such trial log"):
        fronts_from_log(tmp_path / "missing.jsonl", ("size",))


def test_run_record_round_trips(tmp_path: Path) -> None:
    record = RunRecord(
        "llvm-19",
        "size=1",
        "local",
        (
            ProgramRecord("a.c", ("sroa", "gvn"), "function(sroa,gvn)", 90, 100, 40, "opt ... && llc ..."),
            ProgramRecord("b.c", None, "default<Oz>", 100, 100, 40, "opt ... && llc ..."),
        ),
    )
    record.save(tmp_path / "run.json")
    loaded = RunRecord.load(tmp_path / "run.json")
    assert loaded == record
    assert loaded.programs[0].size_change_vs_oz == -10.0 and loaded.programs[1].to_dict()["oz_backup"]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="not a stitchopt run record"):
        RunRecord.load(tmp_path / "bad.json")
