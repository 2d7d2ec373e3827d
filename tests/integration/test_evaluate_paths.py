"""`stitchopt evaluate` on the user's own files and directories (real LLVM, the shipped model, tests/data programs):
the tables and JSON name the programs, wins of 10% or more count only once a --verified file backs them, and bad
inputs are one line with exit status 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from stitchopt.cli.main import exit_status

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One evaluation cache for the module: runs after the first measure nothing new."""
    return tmp_path_factory.mktemp("evaluate-cache")


def _evaluate(cache: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = exit_status(["evaluate", *args, "--ks", "2", "--jobs", "2", "--cache-dir", str(cache)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _project(root: Path, name: str, *files: str) -> Path:
    directory = root / name
    directory.mkdir()
    for file in files:
        shutil.copy(DATA / file, directory)
    return directory


def test_a_directory_and_files_are_scored(cache: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    project = _project(tmp_path, "project", "loop_sum.c", "features_sample.ll")
    (project / "README").write_text("not a program")
    status, out, err = _evaluate(cache, capsys, str(project), "--json")
    assert status == 0, err
    evaluation = json.loads(out)
    assert [p["uri"] for p in evaluation["programs"]] == [
        str(project / n) for n in ("features_sample.ll", "loop_sum.c")
    ]
    assert {p["package"] for p in evaluation["programs"]} == {"project"} and not evaluation["skipped"]
    assert {"static + backup", "jit k=2", "-Os", "-O3"} <= {m["method"] for m in evaluation["methods"]}
    assert evaluation["sources"]["inputs"] == f"2 programs in {project}"
    status, out, err = _evaluate(cache, capsys, str(DATA / "loop_sum.c"), str(project / "features_sample.ll"))
    assert status == 0, err
    words = " ".join(out.split())  # the terminal wraps the last line
    assert "2 programs in 2 directories" in words and "jit k=2" in words and "0 programs skipped" in words


def _by_method(evaluation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["method"]: m for m in evaluation["methods"]}


def test_a_large_win_counts_once_a_run_backs_it(
    cache: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """loop_sum.c: some coreset lists give objects more than 10% below -Oz with the shipped model."""
    program = str(DATA / "loop_sum.c")
    status, out, err = _evaluate(cache, capsys, program, "--json")
    assert status == 0, err
    (outcome,) = json.loads(out)["programs"]
    method = next(m for m in outcome["unverified"] if m in outcome["pipelines"])
    measured = outcome["ratios"][method]
    assert measured <= 0.9
    summary = _by_method(json.loads(out))[method]
    assert summary["geomean_change"] == 0.0 and summary["unverified"] == 1
    assert summary["geomean_if_counted"] == pytest.approx(measured - 1)
    evidence = tmp_path / "ran.jsonl"
    evidence.write_text(json.dumps({"program": program, "pipeline": outcome["pipelines"][method]}) + "\n")
    status, out, err = _evaluate(cache, capsys, program, "--verified", str(evidence), "--json")
    assert status == 0, err
    (backed,) = json.loads(out)["programs"]
    assert method not in backed["unverified"]
    summary = _by_method(json.loads(out))[method]
    assert summary["geomean_change"] == pytest.approx(measured - 1) and summary["unverified"] == 0


def test_exclude_package_shows_the_tables_with_and_without_it(
    cache: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    numpy = _project(tmp_path, "numpy", "loop_sum.c")
    mine = _project(tmp_path, "mine", "features_sample.ll")
    status, out, err = _evaluate(cache, capsys, str(numpy), str(mine), "--exclude-package", "numpy", "--format", "md")
    assert status == 0, err
    titles = [line for line in out.splitlines() if line and not line.startswith("|")]
    assert titles[:2] == [
        "2 programs in 2 directories",
        "2 programs in 2 directories: wins 10% or more below -Oz without run evidence, counted as -Oz",  # loop_sum.c
    ]
    assert "2 programs in 2 directories; without numpy: 1 programs" in titles[2:]
    assert out.count("| method | geomean vs -Oz |") == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.c"], "missing.c: no such file or directory"),
        (["{tmp}"], "no C/C++/.ll/.bc files in this directory"),
        (["{data}/malformed.ll"], "malformed IR at line 4"),
        (["{data}/malformed.c"], "undeclared identifier"),
        (["{data}/loop_sum.c", "--split", "train"], "--split only applies to a dataset URI: drop it"),
        (["{data}/loop_sum.c", "--per-package", "3"], "--per-package only applies to a dataset URI"),
        (["bench://demo-v1", "{data}/loop_sum.c"], "give one dataset URI, or files and directories, not both"),
        (["{data}/loop_sum.c", "--exclude-package", "x", "--json"], "--exclude-package only applies to the tables"),
        (["{data}/loop_sum.c", "--verified", "{tmp}/ran.jsonl"], "no such run-evidence file"),
    ],
)
def test_bad_inputs_are_one_line(
    cache: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    filled = [arg.replace("{tmp}", str(tmp_path)).replace("{data}", str(DATA)) for arg in args]
    status, out, err = _evaluate(cache, capsys, *filled)
    assert status == 2 and not out
    assert err.startswith("stitchopt: error: ") and err.count("\n") == 1 and message in err, err
