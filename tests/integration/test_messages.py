"""Error messages that once misled: each says what went wrong where it went wrong."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from stitchopt.cli.main import exit_status
from stitchopt.datasets.benchmarks import dataset_benchmarks
from stitchopt.errors import DatasetError, InputError, ToolchainError
from stitchopt.labels.labelset import LabeledProgram, LabelSet
from stitchopt.passes.pipeline import check_pipeline
from stitchopt.reports.run_report import read_trials
from stitchopt.toolchain.discovery import Toolchain

HANGING_OPT = """#!/bin/sh
case "$*" in *-passes=*) exec sleep 60 ;; esac
exec {real} "$@"
"""


def test_an_opt_that_hangs_is_a_toolchain_problem_reported_at_the_given_timeout(
    toolchain: Toolchain, toolchain_with_opt: Callable[[str], Toolchain]
) -> None:
    """Not "cannot run this pipeline" after a fixed 60 s: the opt named, the caller's time limit."""
    hanging = toolchain_with_opt(HANGING_OPT.format(real=toolchain.tool("opt")))
    started = time.monotonic()
    with pytest.raises(ToolchainError, match="did not answer within 1 s on an empty module"):
        check_pipeline(hanging, "function(sroa)", timeout=1)
    assert time.monotonic() - started < 15


def test_a_truncated_trial_log_names_its_last_line(tmp_path: Path) -> None:
    log = tmp_path / "trials.jsonl"
    log.write_text('{"program": "a", "score": 1}\n' * 20 + '{"program": "a", "sc')
    with pytest.raises(InputError, match="line 21 is not JSON"):
        read_trials(log)


def test_an_unknown_split_is_named_as_such_not_as_an_unbuilt_dataset() -> None:
    with pytest.raises(DatasetError, match="unknown split 'bogus'.*use one of train, validation, test"):
        dataset_benchmarks("bench://demo-v1", split="bogus")


def test_validate_keeps_a_bench_uri_whole(tmp_path: Path) -> None:
    """PROGRAM was a Path, which turned bench://demo-v1/x into bench:/demo-v1/x; now URIs resolve."""
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "stitchopt", "validate", "bench://demo-v1/nothing", "-p", "sroa"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2 and "no benchmark bench://demo-v1/nothing" in done.stderr, done.stderr
    assert "bench:/demo" not in done.stderr


DATA = Path(__file__).parents[1] / "data"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["predict", "{data}/loop_sum.c", "--top", "0"], "Invalid value for '--top'"),  # printed nothing, exit 0
        (["predict", "{data}/loop_sum.c", "--top", "-1"], "Invalid value for '--top'"),  # all lists but the last
        (["optimize", "{data}/loop_sum.c", "-o", "x.o", "--mode", "jit", "--k", "0"], "Invalid value for '--k'"),
        (["optimize", "{data}/loop_sum.c", "-o", "x.o", "--mode", "fast"], "unknown mode 'fast': use one of"),
        (["train", "labels.json.gz", "-o", "m", "--coreset-size", "0"], "Invalid value for '--coreset-size'"),
        (["tune", "{data}/loop_sum.c", "--objective", "size=abc"], "--objective 'size=abc': size=abc: the weight"),
        (["train", "labels.json.gz", "-o", "m", "--objective", "size=nan"], "--objective 'size=nan': size=nan:"),
        (["tune", "{data}/loop_sum.c", "--objective", "size=1,size=2"], "size is given twice"),
    ],
)
def test_an_out_of_range_value_is_one_line_naming_the_option(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Once accepted (--top 0 printed nothing, --k 0 ran as 1) or refused without naming the option (`could not
    convert string to float: 'abc'`): now exit 2 and one line, before any work."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STITCHOPT_CACHE_DIR", str(tmp_path / "cache"))
    status = exit_status([arg.replace("{data}", str(DATA)) for arg in args])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("stitchopt: error: ") and message in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, no cache opened


def test_ir_keeps_a_bench_uri_whole() -> None:
    """`ir bench://demo-v1/avl_tree` was `bench:/demo-v1/avl_tree: no such file`, as validate's once was."""
    done = subprocess.run(
        [sys.executable, "-m", "stitchopt", "ir", "bench://demo-v1/avl_tree"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "avl_tree.c" in done.stdout.splitlines()[0]


def test_training_without_functions_on_function_units_only_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`train --no-functions` keeps module units only; labels of function units alone leave nothing to learn."""
    monkeypatch.setenv("STITCHOPT_CACHE_DIR", str(tmp_path / "cache"))
    unit = LabeledProgram(
        "bench://demo-v1/avl_tree#insert", "0" * 64, "demo", "train", {"Oz": 10}, {"Oz": 5}, (9,), (4,)
    )
    labels = tmp_path / "labels.json.gz"
    LabelSet("llvm", "catalogue", "bench://demo-v1", (("sroa",),), (unit,), 0.0).save(labels)
    status = exit_status(["train", str(labels), "--no-functions", "-o", str(tmp_path / "m"), "--no-validate"])
    err = capsys.readouterr().err
    assert status == 2 and "no module units to train on: drop --no-functions" in err and err.count("\n") == 1, err
    assert not (tmp_path / "m").exists()
