"""The `stitchopt` command as users run it: real processes, real LLVM, an isolated cache."""

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stitchopt.cli.options import writable_file
from stitchopt.toolchain.cuda import CudaToolkit
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import compile_source
from stitchopt.tune.trial_log import trial_log_file

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture()
def cli(tmp_path: Path):  # type: ignore[no-untyped-def]
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env, timeout=300
        )

    return run


def test_eval_json_compares_with_baselines(cli) -> None:  # type: ignore[no-untyped-def]
    done = cli("eval", str(DATA / "loop_sum.c"), "--passes", "sroa,instcombine,simplifycfg", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["pipeline"] == "function(sroa,instcombine<no-verify-fixpoint>,simplifycfg)"
    results = report["results"]
    assert set(results) == {"O0", "Oz", "O3", "passes"}
    assert results["Oz"]["size_change_vs_oz_percent"] == 0.0
    assert all(r["status"] == "ok" for r in results.values())
    assert results["passes"]["size_change_vs_oz_percent"] == pytest.approx(
        100 * (results["passes"]["size_bytes"] / results["Oz"]["size_bytes"] - 1)
    )


def test_eval_table_and_cache_commands(cli) -> None:  # type: ignore[no-untyped-def]
    done = cli("eval", "bench://demo-v1/hash_table", "-p", "default<Oz>")
    assert done.returncode == 0, done.stderr
    assert "-Oz" in done.stdout and "+0.00%" in done.stdout
    stats = cli("cache", "stats")
    assert "4 entries" in stats.stdout
    cleared = cli("cache", "clear")
    assert cleared.returncode == 0 and "file(s) from" in cleared.stderr and not cleared.stdout, cleared.stderr
    assert "0 entries" in cli("cache", "stats").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "missing.c", "-p", "sroa"], "missing.c: no such file"),
        (["eval", str(DATA / "malformed.c"), "-p", "sroa"], "undeclared identifier"),
        (["eval", str(DATA / "malformed.ll"), "-p", "sroa"], "malformed IR at line 4"),
        (["eval", str(DATA / "loop_sum.c"), "-p", "sroa,frobnicate"], "unknown pass 'frobnicate'"),
        (["eval", str(DATA / "loop_sum.c"), "-p", "function(sroa"], "invalid pipeline"),
        (["eval", "bench://demo-v1/nothing", "-p", "sroa"], "no benchmark"),
        (["ir", str(DATA / "loop_sum.c"), "-o", "x.txt"], "must end in .bc"),
        (["doctor", "--llvm", str(DATA)], "unusable LLVM"),
        (["validate", "-p", "sroa", "--validate", "nowhere.jsonl"], "nowhere.jsonl: no such suite"),
        (["validate", "-p", "sroa", "--validate", "humaneval", "--data-dir", str(DATA)], "no HumanEval-X data at"),
        (["validate", "-p", "function(nope)", "--validate", str(DATA / "selftest")], "unknown function pass 'nope'"),
        (["validate", str(DATA / "loop_sum.c"), "-p", "sroa", "--inputs", "absent"], "--inputs must be a directory"),
        (["stitch", "inspect", str(DATA / "loop_sum.c")], "not a stitching study"),
        (["tune", str(DATA / "loop_sum.c"), "--budget", "-5"], "'--budget': Input should be greater than or equal"),
        (["tune", str(DATA / "loop_sum.c"), "--seconds", "-1"], "--seconds -1: give a finite number above 0"),
        (["tune", str(DATA / "loop_sum.c"), "--patience", "0"], "'--patience': Input should be greater"),
        (["tune", str(DATA / "loop_sum.c"), "--suite", "x"], "No such option: --suite"),
        (
            ["validate", str(DATA / "loop_sum.c"), "-p", "sroa", "--run-timeout", "0"],
            "--run-timeout 0: give a finite number",
        ),
        (["validate", "-p", "sroa", "--validate", "csmith", "--validate-limit", "0"], "'--validate-limit'"),
        (["eval", str(DATA / "loop_sum.c"), "-p", ",,,"], "empty pass list"),
        (["ir", str(DATA / "loop_sum.c"), "-o", "missing_dir/x.bc"], "missing_dir is not an existing directory"),
        (["eval", str(DATA), "-p", "sroa"], "a directory with 9 C/C++/IR files: name one program file"),
        (["eval", str(DATA / "loop_sum.c"), "-p", "sroa", "--timeout", "nan"], "--timeout nan: give a finite number"),
        (["eval", str(DATA / "loop_sum.c"), "-p", "sroa", "-o", "x.html"], "format 'html' not supported here"),
        (["eval", str(DATA / "loop_sum.c"), "-p", "sroa", "--json", "--format", "md"], "give -o FILE for the"),
        (["validate", str(DATA / "loop_sum.c"), "-p", "sroa", "--run", '{exe} a "b'], "No closing quotation"),
        (
            ["validate", "-p", "sroa", "--reduce", "--reproducer", str(DATA / "loop_sum.c")],
            "is a file, not a directory: name a directory",
        ),
        (["tune", str(DATA / "loop_sum.c"), "--screen-margin", "-1"], "give a share of 0 or more"),
        (["tune", str(DATA / "loop_sum.c"), "--screen-margin", "nan"], "--screen-margin nan: give a share of 0"),
        (
            ["tune", str(DATA / "loop_sum.c"), "--screen-margin", "0", "--objective", "size=1,compile-time=1"],
            "size-only",
        ),
        (["tune", str(DATA / "loop_sum.c"), "--screen-margin", "0", "--backend", "subprocess"], "native backend"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, args: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    done = cli(*args)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_eval_writes_its_results_in_the_format_asked(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """-o in the file's suffix (csv: one row per build; md: the tables), the tables still shown; --format
    without -o on stdout instead of them."""
    args = ("eval", str(DATA / "loop_sum.c"), "-p", "sroa")
    done = cli(*args, "-o", str(tmp_path / "r.csv"))
    assert done.returncode == 0 and "size vs -Oz" in done.stdout and "wrote " in done.stderr, done.stderr
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert [row["build"] for row in rows] == ["O0", "Oz", "O3", "passes"] and rows[3]["pipeline"] == "function(sroa)"
    assert rows[1]["size_change_vs_oz_percent"] == "0.0" and int(rows[3]["size_bytes"]) > 0
    done = cli(*args, "-o", str(tmp_path / "r.md"))
    assert done.returncode == 0, done.stderr
    assert "| -Oz | ok |" in (tmp_path / "r.md").read_text() and "| clearing calls |" in (tmp_path / "r.md").read_text()
    done = cli(*args, "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["results"]["passes"]["status"] == "ok", done.stderr


def test_eval_of_an_empty_directory_says_it_holds_no_program(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    done = cli("eval", str(tmp_path), "-p", "sroa")
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr == f"stitchopt: error: {tmp_path}: a directory with no C/C++/.ll/.bc files: name one program file\n"
    )


NEWER_LLVM = "this IR may come from a newer LLVM than 19."


def test_ir_of_a_newer_llvm_gets_a_hint(cli, tmp_path: Path, toolchain: Toolchain) -> None:  # type: ignore[no-untyped-def]
    """LLVM 20's `icmp samesign`, IR that names clang 20, and bitcode whose reader names an LLVM 20 producer get
    the hint; IR that is merely broken does not."""
    body = "define i1 @f(i32 %a, i32 %b) {\n  %c = icmp PREDICATE i32 %a, %b\n  ret i1 %c\n}\n"
    (tmp_path / "samesign.ll").write_text(body.replace("PREDICATE", "samesign ult"))
    (tmp_path / "clang20.ll").write_text(
        body.replace("PREDICATE", "ult") + '!0 = !{!"clang version 20.1.0"}\ngarbage\n'
    )
    fake = tmp_path / "llvm"
    fake.mkdir()
    for name, path in toolchain.tools.items():
        (fake / name).symlink_to(path)
    (fake / "llvm-dis").unlink()  # the error LLVM 19's reader gives for LLVM 20 bitcode, with its --version
    (fake / "llvm-dis").write_text(
        f'#!/bin/sh\n[ "$1" = --version ] && exec {toolchain.tool("llvm-dis")} --version\n'
        "echo \"llvm-dis: error: Unknown attribute kind (102) (Producer: 'LLVM20.1.0' Reader: 'LLVM 19.1.7')\" >&2\n"
        "exit 1\n"
    )
    (fake / "llvm-dis").chmod(0o755)
    (tmp_path / "new.bc").write_bytes(compile_source(toolchain, DATA / "loop_sum.c"))
    for args in (["samesign.ll"], ["clang20.ll"], ["new.bc", "--llvm", str(fake)]):
        done = cli("eval", str(tmp_path / args[0]), "-p", "sroa", *args[1:])
        assert done.returncode == 2 and NEWER_LLVM in done.stderr and done.stderr.count("\n") == 1, done.stderr
    done = cli("eval", str(DATA / "malformed.ll"), "-p", "sroa")  # `ret` after a line cut short
    assert done.returncode == 2 and "malformed IR" in done.stderr and NEWER_LLVM not in done.stderr


def test_inputs_nothing_can_measure_are_one_line_errors(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """IR for a target that emits no objects (nvptx) or for a bogus triple, and a binary file given as a trial
    log: exit 2 and one line, where these once exited 0 with every row failed or with an internal error."""
    body = "define i32 @f(i32 %x) {\n  ret i32 %x\n}\n"
    cases = []
    for name, triple in (("gpu", "nvptx64-nvidia-cuda"), ("bogus", "bogus-unknown-none")):
        (tmp_path / f"{name}.ll").write_text(f'target triple = "{triple}"\n{body}')
        cases.append((["eval", str(tmp_path / f"{name}.ll"), "-p", "sroa"], "not even clang's -O0/-Oz/-O3 build it"))
    (tmp_path / "binary.jsonl").write_bytes(bytes(range(128, 256)))
    cases.append((["pareto", str(tmp_path / "binary.jsonl")], "not a trial log"))
    for args, message in cases:
        done = cli(*args)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_a_damaged_or_misplaced_cache_never_costs_a_run_its_results(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A cache directory that is a file is one line before anything runs; a cache whose pages were overwritten
    gives one warning, and the search still finishes and writes its whole run record."""
    blocked = tmp_path / "blocked"
    blocked.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "stitchopt", "eval", str(DATA / "loop_sum.c"), "-p", "sroa"],
        capture_output=True,
        text=True,
        env={**os.environ, "STITCHOPT_CACHE_DIR": str(blocked)},
        timeout=120,
    )
    assert done.returncode == 2 and "point --cache-dir or $STITCHOPT_CACHE_DIR at a writable directory" in done.stderr
    assert cli("eval", str(DATA / "loop_sum.c"), "-p", "sroa").returncode == 0  # fills the cache
    database = tmp_path / "cache" / "evaluations.sqlite"
    size = database.stat().st_size
    with open(database, "r+b") as handle:
        handle.seek(size // 4)
        handle.write(os.urandom(size - size // 4))
    record = tmp_path / "run.json"
    done = cli("tune", str(DATA / "loop_sum.c"), "--budget", "8", "--no-validate", "-o", str(record))
    assert done.returncode == 0, done.stderr
    assert sum("warning: the evaluation cache" in line for line in done.stderr.splitlines()) == 1, done.stderr
    (program,) = json.loads(record.read_text())["programs"]
    assert program["evaluations"] == 8


def test_tune_says_in_a_log_which_program_it_is_at(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Off a terminal there is no bar: each program's answer gets a line, counted by position (two programs may
    share a name), with the time left, and the last says the run is done."""
    twin = tmp_path / "other" / "loop_sum.c"
    twin.parent.mkdir()
    twin.write_text((DATA / "loop_sum.c").read_text())
    programs = (str(DATA / "loop_sum.c"), str(twin), str(DATA / "wordcount.c"))
    done = cli("tune", *programs, "--budget", "6", "--no-validate", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("tune: ")]
    answer = r"(-Oz kept|[+-]\d+\.\d\d% size vs -Oz)"
    time_left = r"(under a minute|about \d+m) left"
    expected = [
        rf"tune: {i}/3 programs, {name}: {answer}, {left}"
        for i, name, left in ((1, "loop_sum.c", time_left), (2, "loop_sum.c", time_left))
    ] + [rf"tune: 3/3 programs, wordcount.c: {answer}, done"]
    assert len(lines) == 3 and all(re.fullmatch(e, line) for e, line in zip(expected, lines, strict=True)), lines
    lists = sum("-Oz kept" not in line for line in lines)  # -Oz, clang's own, needs no validation
    assert (f"{lists} answer(s) NOT validated" in done.stderr) == (lists > 0), done.stderr
    late = cli("tune", str(DATA / "wordcount.c"), str(DATA / "malformed.ll"), "--budget", "6", "--no-validate")
    assert late.returncode == 2 and "malformed IR" in late.stderr  # a bad input found before any search ran
    assert not [line for line in late.stderr.splitlines() if line.startswith("tune: ")], late.stderr


def test_tune_stopped_keeps_the_programs_it_finished(tmp_path: Path) -> None:
    """SIGTERM (or Ctrl-C) after the first of two programs: the run record holds the finished one."""
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")}
    record = tmp_path / "run.json"
    argv = [sys.executable, "-m", "stitchopt", "tune", str(DATA / "loop_sum.c"), str(DATA / "wordcount.c")]
    argv += ["--budget", "100000", "--seconds", "4", "--no-validate", "--jobs", "1", "-o", str(record)]
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env) as running:
        try:
            assert running.stderr is not None
            for line in running.stderr:
                if line.startswith("tune: 1/2 programs"):
                    running.terminate()
                    break
            _, stderr = running.communicate(timeout=60)
        finally:
            running.kill()  # a no-op once it has ended; never a test left waiting on it
    assert running.returncode == 130, stderr
    (program,) = json.loads(record.read_text())["programs"]
    assert Path(program["program"]).name == "loop_sum.c"


def test_ir_writes_bitcode_or_text(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("ir", str(DATA / "loop_sum.c"), "-o", str(tmp_path / "a.bc")).returncode == 0
    assert (tmp_path / "a.bc").read_bytes().startswith(b"BC")
    done = cli("ir", str(DATA / "shapes.cpp"), "--", "-DUNUSED=1")
    assert done.returncode == 0 and "define" in done.stdout


def test_passes_and_doctor(cli) -> None:  # type: ignore[no-untyped-def]
    listing = json.loads(cli("passes", "--json").stdout)
    spellings = {p["spelling"] for p in listing["passes"]}
    assert "instcombine<no-verify-fixpoint>" in spellings
    assert {e["name"] for e in listing["excluded"]} >= {"structurizecfg", "internalize"}
    doctor = cli("doctor")
    assert doctor.returncode == 0 and "LLVM 19" in doctor.stdout and "llvm-profdata" in doctor.stdout
    parts = ("prlimit        found", "valgrind", "chromium", "stitch extra", "lift extra", "profile rt     found")
    assert all(part in doctor.stdout for part in parts), doctor.stdout
    found = json.loads(cli("doctor", "--json").stdout)
    assert found["llvm"]["version"].startswith("19.") and "llvm-profdata" in found["llvm"]["tools"]
    assert found["parts"]["prlimit"]["found"] and found["profile_runtime"]["found"]
    assert found["evaluator"] in doctor.stdout and found["llvm"]["identity"] in doctor.stdout


def test_datasets_list_and_info_as_json(cli) -> None:  # type: ignore[no-untyped-def]
    def demo() -> dict[str, object]:
        return next(d for d in json.loads(cli("datasets", "list", "--json").stdout) if d["name"] == "demo")

    assert demo() == {
        "name": "demo",
        "problem": None,
        "dataset": "demo-v1",
        "description": "the built-in self-checking C programs",
        "built": False,
    }
    assert cli("datasets", "build", "demo", "--limit", "2", "--jobs", "1").returncode == 0
    listed = demo()
    assert listed["built"] and listed["entries"] == listed["units_built"] == 2 and listed["units_failed"] == 0
    info = json.loads(cli("datasets", "info", "demo", "--json").stdout)
    assert info["dataset"] == "demo-v1" and info["entries"] == 2 and sum(info["splits"].values()) == 2
    assert info["directory"] == listed["directory"] and info["failures"] == {}


def test_gpu_labels_name_the_device_datasets_for_a_host_or_unknown_one(cli, cuda: CudaToolkit, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for dataset in ("bench://demo-v1", "bench://nope-v1"):
        refused = cli("gpu", "labels", dataset, "-o", str(tmp_path / "labels"), "--per-file", "1")
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert f"{dataset} is not a device dataset" in refused.stderr and "bench://ggml-cuda-v1" in refused.stderr
        assert "csmith" not in refused.stderr, refused.stderr


def test_validate_exit_status_says_whether_every_program_passed(cli) -> None:  # type: ignore[no-untyped-def]
    suite = str(DATA / "selftest")
    good = cli("validate", "-p", "default<Oz>", "--validate", suite, "--json")
    assert good.returncode == 0, good.stderr
    (report,) = json.loads(good.stdout)
    verdicts = {v["program"]: v["status"] for v in report["verdicts"]}
    assert report["passed"]
    assert verdicts == {"broken.c": "excluded", "running_balance.cpp": "passed", "sums.c": "passed"}
    bad = cli("validate", "-p", "function(structurizecfg)", "--validate", suite)
    assert bad.returncode == 1 and "running_balance.cpp │ test-failed" in bad.stdout and "FAILED" in bad.stdout


def test_shipped_model_predicts_and_optimizes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ranked = cli("predict", str(DATA / "loop_sum.c"), "--json", "--top", "5")
    assert ranked.returncode == 0, ranked.stderr
    report = json.loads(ranked.stdout)
    assert 1 <= len(report["ranked"]) <= 5 and report["inference_ms"] > 0
    rows = report["ranked"]  # the order jit mode tries (the neighbours' gains), each with its predicted size
    assert [row["rank"] for row in rows] == list(range(1, len(rows) + 1)) and len({r["passes"] for r in rows}) == len(
        rows
    )
    assert all(row["predicted_size_bytes"] > 0 for row in rows)
    warmed = cli("cache", "warm", str(DATA / "loop_sum.c"), "--k", "3", "--common", "2")
    assert warmed.returncode == 0 and "1 unit(s) ranked" in warmed.stderr, warmed.stderr
    built = cli("optimize", str(DATA / "loop_sum.c"), "-o", str(tmp_path / "out.o"), "--mode", "jit", "--k", "3")
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "out.o").read_bytes()[:4] == b"\x7fELF" and "vs -Oz" in built.stdout
    missing = cli("optimize", str(DATA / "loop_sum.c"), "-o", str(tmp_path / "x.o"), "--model", str(tmp_path))
    assert missing.returncode == 2 and "not a stitchopt model directory" in missing.stderr


def test_checking_a_path_to_write_follows_links_and_leaves_devices_alone(tmp_path: Path) -> None:
    """The check once replaced a dangling link by nothing (and created its target), and hung on a pipe."""
    link = tmp_path / "d.o"
    link.symlink_to(tmp_path / "target.o")
    assert writable_file("-o", link) == link
    assert link.is_symlink() and not (tmp_path / "target.o").exists()
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    assert writable_file("-o", pipe) == pipe  # not opened: opening a pipe for writing waits for a reader
    assert writable_file("-o", Path("/dev/null")) == Path("/dev/null")


def test_a_trial_log_goes_where_its_link_points_and_to_a_device_as_it_runs(tmp_path: Path) -> None:
    """Written beside the log and renamed, it once replaced a link (and /dev/stderr) with a regular file."""
    link, target = tmp_path / "trials.jsonl", tmp_path / "real.jsonl"
    link.symlink_to(target)
    with trial_log_file(link) as log:
        log.write("{}\n")
    assert link.is_symlink() and target.read_text() == "{}\n"
    with trial_log_file(Path("/dev/null")) as log:
        log.write("{}\n")
    assert Path("/dev/null").is_char_device()
