"""The tuning driver, minimizer and `stitchopt tune` on a small fixture with small budgets."""

from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from stitchopt.cache.store import DB_NAME, EvaluationStore
from stitchopt.cli.main import exit_status
from stitchopt.core import IRModule, Objective
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.acceptance import ProgramRun, Verified, list_validation, program_guard
from stitchopt.tune.broadcast import broadcast
from stitchopt.tune.driver import Budget, TuningRun, tune
from stitchopt.tune.minimize import minimize
from stitchopt.tune.record import ProgramRecord, RunRecord
from stitchopt.tune.runtime import attach_runtime_meter
from stitchopt.tune.session import tune_programs
from stitchopt.tune.strategies import flatten_pipeline, make_strategy

DATA = Path(__file__).parent.parent / "data"


def _run(
    toolchain: Toolchain,
    catalogue: Catalogue,
    module: IRModule,
    store: EvaluationStore,
    evaluations: int,
    strategy: str = "local",
) -> TuningRun:
    with Evaluator(toolchain, store) as evaluator:
        searcher = make_strategy(strategy, catalogue, 5, evaluator.baselines["Oz"].pipeline)
        return tune(evaluator, module, searcher, catalogue, budget=Budget(evaluations))


def test_runs_within_budget_and_never_worse_than_oz(
    toolchain: Toolchain, catalogue: Catalogue, loop_sum: IRModule, store: EvaluationStore
) -> None:
    for strategy in ("random", "greedy", "local"):
        run = _run(toolchain, catalogue, loop_sum, store, 24, strategy)
        assert run.evaluations == 24 and len(run.curve) == 24
        assert run.best_score <= 1.0 and run.curve == sorted(run.curve, reverse=True)
        if run.best_passes is not None:
            assert run.best_result.size_bytes <= run.oz.size_bytes  # type: ignore[operator]


def _cached_evaluations(cache_dir: Path) -> dict[str, tuple[float, bool]]:
    """Each evaluation a cache directory holds, with the time it was stored and whether its result was resumed
    from a prefix (read beside a running writer)."""
    path = cache_dir / DB_NAME
    if not path.exists():
        return {}
    with closing(sqlite3.connect(path, timeout=30)) as db:
        try:
            rows = list(db.execute("SELECT key, created, result_json FROM evaluations"))
        except sqlite3.OperationalError:  # the file exists but its schema is not committed yet
            return {}
    return {key: (created, json.loads(result).get("resumed", False)) for key, created, result in rows}


@pytest.mark.slow
def test_killed_tune_command_resumes_from_the_cache_with_the_same_answer(tmp_path: Path) -> None:
    """SIGKILL a real `stitchopt tune` (its whole process group) in the middle of its search and run the same
    command again: it evaluates only what the killed run had not finished and writes the same run record as an
    uninterrupted run with the same seed and a separate cache."""
    budget, killed_after = 240, 24

    def tune_command(cache_dir: Path, output: Path) -> tuple[list[str], dict[str, str]]:
        return (
            [
                sys.executable,
                "-m",
                "stitchopt",
                "tune",
                str(DATA / "loop_sum.c"),
                "--budget",
                str(budget),
                "--seed",
                "3",
                "--jobs",
                "2",
                "--no-validate",
                "--json",
                "-o",
                str(output),
            ],
            {**os.environ, "STITCHOPT_CACHE_DIR": str(cache_dir)},
        )

    reference_cache, cache = tmp_path / "reference", tmp_path / "resumed"
    reference_record, record = tmp_path / "reference.json", tmp_path / "resumed.json"
    args, env = tune_command(reference_cache, reference_record)
    reference = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert reference.returncode == 0, reference.stderr

    args, env = tune_command(cache, record)
    with open(tmp_path / "killed.stderr", "w") as stderr:
        killed = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, env=env, start_new_session=True)
        deadline = time.monotonic() + 120
        while len(_cached_evaluations(cache)) < killed_after and killed.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert killed.poll() is None, (tmp_path / "killed.stderr").read_text()  # still searching
        os.killpg(killed.pid, signal.SIGKILL)
        assert killed.wait(timeout=60) == -signal.SIGKILL
    finished = _cached_evaluations(cache)
    assert len(finished) >= killed_after and not record.exists()

    resumed = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    after = _cached_evaluations(cache)
    # What the killed run finished was found in the cache, not evaluated again (its rows keep their time), but
    # for a resumed result that was about to become the best, which is measured again whole; the rest is what the
    # uninterrupted run evaluated: the same proposals.
    again = {key for key in finished if after[key] != finished[key]}
    assert all(finished[key][1] and not after[key][1] for key in again) and len(again) <= 8  # one batch
    assert after.keys() == _cached_evaluations(reference_cache).keys()
    assert RunRecord.load(record) == RunRecord.load(reference_record)
    (answer,) = RunRecord.load(record).programs
    assert answer.evaluations == budget and answer.passes is not None


def test_minimizer_never_worsens_and_reaches_a_fixed_point(
    toolchain: Toolchain, catalogue: Catalogue, loop_sum: IRModule, store: EvaluationStore
) -> None:
    with Evaluator(toolchain, store) as evaluator:
        oz = evaluator.baselines["Oz"]
        oz_flat = flatten_pipeline(oz.pipeline, catalogue)
        start = ("sroa", "sroa", *oz_flat[:20], "instcombine", "instcombine")
        first = minimize(evaluator, loop_sum, start, catalogue, insertion=False)
        again = minimize(evaluator, loop_sum, first.passes, catalogue, insertion=False)
        reference = evaluator.evaluate(loop_sum, oz.pipeline, oz.options)
        started = evaluator.evaluate(loop_sum, tuned_pipeline(start, catalogue), oz.options)
        before = Objective().score(started, reference)
    assert first.complete and len(first.passes) < len(start)
    assert first.score <= before
    assert again.passes == first.passes and again.score == first.score


@pytest.mark.slow
def test_tune_command_reports_replayable_validated_results(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "stitchopt",
            "tune",
            str(DATA / "loop_sum.c"),
            "--budget",
            "16",
            "--json",
            "--log",
            str(tmp_path / "trials.jsonl"),
            "--validate",
            str(DATA / "selftest"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (answer,) = json.loads(done.stdout)
    assert answer["validated"] is True and answer["evaluations"] == 16
    assert answer["size_bytes"] <= answer["oz_size_bytes"]
    assert "-passes=" in answer["replay"] and answer["replay"].count("&&") == 1
    trials = [json.loads(line) for line in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert len(trials) == 16 and {"pipeline", "size_bytes", "score", "best_score", "suspicious"} <= set(trials[0])
    bad = subprocess.run(
        [sys.executable, "-m", "stitchopt", "tune", str(DATA / "loop_sum.c"), "--strategy", "x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 2 and "unknown strategy" in bad.stderr


def test_broadcast_gives_every_program_the_common_best_lists(
    toolchain: Toolchain, catalogue: Catalogue, store: EvaluationStore
) -> None:
    shapes = DATA / "shapes.cpp"
    with Evaluator(toolchain, store) as evaluator:
        run = _run(toolchain, catalogue, load_module(toolchain, DATA / "loop_sum.c"), store, 24)
        assert run.best_passes is not None
        oz = evaluator.baselines["Oz"]
        shapes_oz = evaluator.evaluate(load_module(toolchain, shapes), oz.pipeline, oz.options)
        record = RunRecord(
            "llvm",
            "size=1",
            "local",
            (
                ProgramRecord(
                    str(DATA / "loop_sum.c"),
                    run.best_passes,
                    tuned_pipeline(run.best_passes, catalogue),
                    run.best_result.size_bytes,
                    run.oz.size_bytes,
                    24,
                    "replay",
                ),
                ProgramRecord(str(shapes), None, oz.pipeline, shapes_oz.size_bytes, shapes_oz.size_bytes, 0, "replay"),
            ),
        )
        outcome = broadcast(evaluator, catalogue, record)
    assert outcome.candidates == (run.best_passes,)
    before = {p.program: p.size_bytes for p in record.programs}
    for program in outcome.record.programs:
        assert program.size_bytes <= before[program.program]  # type: ignore[operator]
    assert outcome.changed == sum(
        p.passes != q.passes for p, q in zip(record.programs, outcome.record.programs, strict=True)
    )


@pytest.mark.slow
def test_tune_broadcast_pareto_and_minimize_commands(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env, timeout=300
        )

    run, log = tmp_path / "run.json", tmp_path / "trials.jsonl"
    assert (
        cli(
            "tune",
            str(DATA / "loop_sum.c"),
            str(DATA / "shapes.cpp"),
            "--budget",
            "16",
            "-o",
            str(run),
            "--log",
            str(log),
            "--no-validate",
            "--no-minimize",  # answers as searched (minimized: test_tune_command_reports_replayable_validated_results)
        ).returncode
        == 0
    )
    assert cli("report", "run", str(run), "-o", str(tmp_path / "run.csv")).returncode == 0  # the run as CSV
    answers = (tmp_path / "run.csv").read_text().split("answers\n", 1)[1]
    assert [row.split(",")[0] for row in answers.splitlines()[1:4]] == ["loop_sum", "shapes", "geomean (2)"]
    done = cli("broadcast", str(run), "--validate", str(DATA / "selftest"))
    assert done.returncode == 0 and "best(s) changed" in done.stderr
    assert len(RunRecord.load(tmp_path / "run.broadcast.json").programs) == 2
    done = cli("pareto", str(log))
    assert done.returncode == 0 and "Pareto-optimal" in done.stdout
    done = cli("minimize", str(DATA / "loop_sum.c"), "-p", "sroa,sroa,instcombine")
    assert done.returncode == 0 and done.stdout.strip().splitlines()[-1].count(",") < 2
    assert cli("broadcast", str(tmp_path / "missing.json")).returncode == 2


def test_screening_skips_codegen_of_candidates_estimated_worse_than_the_best(tmp_path: Path) -> None:
    """`tune --screen-margin 0`: candidates whose code-size estimate exceeds the best's get no codegen (logged as
    screened, never stored), and the answer is still a measured result."""
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")}
    log, run = tmp_path / "trials.jsonl", tmp_path / "run.json"
    args = ["tune", str(DATA / "loop_sum.c"), "--budget", "16", "--screen-margin", "0", "--no-validate"]
    done = subprocess.run(
        [sys.executable, "-m", "stitchopt", *args, "--log", str(log), "-o", str(run)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    statuses = [json.loads(line)["status"] for line in log.read_text().splitlines()]
    assert "screened" in statuses and "ok" in statuses
    (program,) = RunRecord.load(run).programs
    assert program.size_bytes is not None


def test_patience_and_time_budgets_stop_early(
    toolchain: Toolchain, catalogue: Catalogue, loop_sum: IRModule, store: EvaluationStore
) -> None:
    with Evaluator(toolchain, store) as evaluator:
        oz_pipeline = evaluator.baselines["Oz"].pipeline
        patient = tune(
            evaluator,
            loop_sum,
            make_strategy("random", catalogue, 1, oz_pipeline),
            catalogue,
            budget=Budget(500, patience=8),
        )
        hurried = tune(
            evaluator,
            loop_sum,
            make_strategy("random", catalogue, 2, oz_pipeline),
            catalogue,
            budget=Budget(500, seconds=0.3),
        )
    assert patient.evaluations < 500
    assert patient.evaluations - min(i + 1 for i, s in enumerate(patient.curve) if s == patient.best_score) >= 8
    assert hurried.evaluations < 500 and hurried.seconds < 5


def test_guards_reject_candidates_and_the_search_never_climbs_from_them(
    toolchain: Toolchain, catalogue: Catalogue, loop_sum: IRModule, store: EvaluationStore
) -> None:
    with Evaluator(toolchain, store) as evaluator:
        guard = program_guard(evaluator, loop_sum)
        assert guard("internalize,globaldce")[0].startswith("exported definitions removed: checksum, main")
        assert guard(evaluator.baselines["Oz"].pipeline) == []
        searcher = make_strategy("random", catalogue, 3, evaluator.baselines["Oz"].pipeline)
        log = io.StringIO()
        run = tune(
            evaluator,
            loop_sum,
            searcher,
            catalogue,
            budget=Budget(48),
            trial_log=log,
            guard=lambda pipeline: ["distrusted"],
        )
    assert run.suspicious > 0 and run.bests == [] and run.best_passes is None and run.best_score == 1.0
    flagged = [json.loads(line) for line in log.getvalue().splitlines() if json.loads(line)["suspicious"]]
    assert len(flagged) == run.suspicious and all(t["score"] is None for t in flagged)


class _RejectFirst:
    """A validation that fails the first list it sees (the error path of tune_programs)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def check(self, pipeline: str) -> Verified:
        self.seen.append(pipeline)
        return Verified(len(self.seen) > 1, "failed" if len(self.seen) == 1 else "passed")


@pytest.mark.slow
def test_answers_are_validated_and_a_failing_list_gives_way_to_the_next_best(
    toolchain: Toolchain, catalogue: Catalogue, store: EvaluationStore
) -> None:
    with Evaluator(toolchain, store) as evaluator:
        suite = list_validation(evaluator, [str(DATA / "selftest")])
        (answer,) = tune_programs(
            evaluator, catalogue, [DATA / "loop_sum.c"], budget=Budget(24), validation=suite, program_run=ProgramRun()
        )
        assert answer.validated and "passed selftest (3 programs) + loop_sum.c (1 programs)" in answer.validation
        rejecting = _RejectFirst()
        (fallback,) = tune_programs(
            evaluator, catalogue, [DATA / "loop_sum.c"], budget=Budget(24), validation=rejecting
        )  # type: ignore[arg-type]
    assert rejecting.seen[0] == answer.pipeline and fallback.passes != answer.passes
    assert fallback.validation.startswith(f"{len(answer.passes or ())}-pass list failed")


@pytest.mark.slow
def test_perf_objective_measures_runtime_and_rejects_lists_that_change_behaviour(
    toolchain: Toolchain, catalogue: Catalogue, store: EvaluationStore
) -> None:
    objective = Objective.parse("size=1,perf=1")
    with Evaluator(toolchain, store) as evaluator:
        with pytest.raises(InputError, match="needs programs to run"):
            tune_programs(evaluator, catalogue, [DATA / "loop_sum.c"], objective=objective, budget=Budget(4))
        (answer,) = tune_programs(
            evaluator, catalogue, [DATA / "loop_sum.c"], objective=objective, budget=Budget(8), program_run=ProgramRun()
        )
        assert answer.run.oz.runtime is not None and answer.result.runtime is not None
        assert answer.runtime_unit in ("instructions (valgrind)", "seconds (median of 5 runs)")
        module = load_module(toolchain, DATA / "loop_sum.c")
        meter = attach_runtime_meter(evaluator, module, DATA / "loop_sum.c", ProgramRun())
        broken = evaluator.evaluate(module, "internalize,globaldce", evaluator.baselines["Oz"].options)
        assert broken.ok and broken.runtime is None  # no main left: it cannot run, so it has no runtime
        assert objective.score(broken, answer.run.oz) == math.inf
        assert meter.measure(evaluator.baselines["Oz"].pipeline, answer.run.oz) == answer.run.oz.runtime


def test_a_stopped_rerun_keeps_the_finished_trial_log_and_reports_refuse_another_runs_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tune -o run.json --log trials.jsonl` stopped by Ctrl-C kept the old run.json but truncated its log, and
    `report run` then mixed the two runs without a word."""
    run, log, other = tmp_path / "run.json", tmp_path / "trials.jsonl", tmp_path / "other.jsonl"
    tune = ["tune", str(DATA / "loop_sum.c"), "--budget", "4", "--no-validate", "--cache-dir", str(tmp_path / "c")]
    assert exit_status([*tune, "-o", str(run), "--log", str(log)]) == 0
    finished, recorded = log.read_text(), run.read_text()
    assert {json.loads(line)["run_id"] for line in finished.splitlines()} == {RunRecord.load(run).run_id}

    def stopped(*_args: object, trial_log: io.TextIOBase, **_kw: object) -> None:
        trial_log.write('{"program": "half-done"}\n')
        raise KeyboardInterrupt

    kept = f"the run stopped: its trials are in {log}.partial ({log}, of an earlier run, is unchanged)"
    with monkeypatch.context() as patched, pytest.warns(UserWarning, match=re.escape(kept)):
        patched.setattr("stitchopt.cli.tune.tune_programs", stopped)
        assert exit_status([*tune, "-o", str(run), "--log", str(log)]) == 130
    assert (log.read_text(), run.read_text()) == (finished, recorded)
    assert "half-done" in (tmp_path / "trials.jsonl.partial").read_text()

    report = ["report", "run", str(run), "-o", str(tmp_path / "report.md")]
    assert exit_status([*report, "--log", str(log)]) == 0
    assert exit_status([*tune, "--log", str(other)]) == 0  # another run, same answers
    capsys.readouterr()
    assert exit_status([*report, "--log", str(other)]) == 2
    assert capsys.readouterr().err == (
        f"stitchopt: error: {other}: its trials are from another tune run than the run records: give the --log "
        "file written by the same run (`tune -o run.json --log trials.jsonl`)\n"
    )
    unstamped = [{**json.loads(line), "run_id": None} for line in finished.splitlines()]
    other.write_text("".join(json.dumps(trial) + "\n" for trial in unstamped))
    with pytest.warns(UserWarning, match="cannot check that this log belongs to the run records"):
        assert exit_status([*report, "--log", str(other)]) == 0
