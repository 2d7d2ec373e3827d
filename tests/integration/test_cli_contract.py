"""What every command promises when it runs: `--json` prints exactly one JSON document on stdout (status goes to
stderr), options are never silently ignored, nothing overwrites the user's input, the evaluator gets the shared
options, and the exit status says what happened (how the options are declared: tests/unit/test_cli_conventions.py)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
import types
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from stitchopt import __version__
from stitchopt.cache.store import EvaluationStore
from stitchopt.cli import entry
from stitchopt.cli.main import COMMANDS, DEBUG_ENV, command_app, exit_status
from stitchopt.cli.options import progress_bar
from stitchopt.datasets.kernels import KERNEL_DIR
from stitchopt.errors import StitchoptError
from stitchopt.evaluation.evaluator import Evaluator

DATA = Path(__file__).parents[1] / "data"


class Inputs:
    """Files the invocations read, made once per module and only when an invocation names them: {run},
    {dataset}, {labels}, {model} and {stitched} in an invocation's arguments (and {data}, {tmp})."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.data = DATA
        # torch and numpy's BLAS on one thread: the models and matrices here are tiny, and a second thread only
        # spins on a busy 2-core machine (stitch table and stitch train took 40% longer)
        self.env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp / "cache"), "COLUMNS": "200", "OMP_NUM_THREADS": "1"}

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """In the module's directory: whatever a command writes by mistake stays there."""
        return subprocess.run(
            [sys.executable, "-m", "stitchopt", *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.tmp,
            timeout=300,
        )

    def made(self, *args: str, results: bool = False) -> None:
        """A command that must succeed; unless it prints `results`, stdout stays empty (what it wrote where is a
        status line, on stderr)."""
        done = self.cli(*args)
        assert done.returncode == 0, done.stderr
        assert results or not done.stdout, done.stdout

    @cached_property
    def run(self) -> Path:
        self.made(
            "tune",
            str(DATA / "loop_sum.c"),
            "--budget",
            "4",
            "--no-validate",
            "--jobs",
            "1",
            "-o",
            str(self.tmp / "run.json"),
            results=True,
        )
        return self.tmp / "run.json"

    @cached_property
    def dataset(self) -> str:
        """The demo dataset (its name) with three programs, built in the module's cache."""
        self.made("datasets", "build", "demo", "--limit", "3", "--jobs", "1")
        return "demo"

    @cached_property
    def labels(self) -> Path:
        """Labels of three demo programs (two train, one validation)."""
        self.made(
            "labels",
            "pool",
            f"bench://{self.dataset}-v1",
            "-o",
            str(self.tmp / "labels.json.gz"),
            "--split",
            "train,validation",
            "--pool-programs",
            "1",
            "--pool-budget",
            "8",
            "--jobs",
            "2",
        )
        return self.tmp / "labels.json.gz"

    @cached_property
    def label_dir(self) -> Path:
        """A label directory with one searched demo unit."""
        directory = self.tmp / "label-dir"
        uri = f"bench://{self.dataset}-v1"
        self.made("labels", "search", uri, "-o", str(directory), "--programs", "1", "--budget", "2")
        return directory

    @cached_property
    def model(self) -> Path:
        """A flag-tuning model with a two-list coreset: evaluations and studies of it stay small. Its lists end
        with a finishing pass, which `stitch train` (the stitched model below) leaves out to find their labels."""
        model = self.tmp / "model"
        self.made(
            "train", str(self.labels), "-o", str(model), "--coreset-size", "2", "--no-validate", "--finish", "mergefunc"
        )
        config = json.loads((model / "config.json").read_text())
        assert config["finish"] == ["mergefunc"] and all(passes[-1] == "mergefunc" for passes in config["lists"])
        return model

    @cached_property
    def stitched(self) -> Path:
        self.made(
            "stitch",
            "train",
            str(self.labels),
            "-o",
            str(self.tmp / "stitched"),
            "--model",
            str(self.model),
            "--epochs",
            "1",
            "--hidden",
            "4",
        )
        config = json.loads((self.tmp / "stitched" / "config.json").read_text())
        assert all(passes[-1] == "mergefunc" for passes in config["lists"])  # built with the flag model's finish
        return self.tmp / "stitched"

    kernels = KERNEL_DIR

    def resolve(self, args: tuple[str, ...]) -> list[str]:
        return [re.sub(r"\{(\w+)\}", lambda m: str(getattr(self, m.group(1))), arg) for arg in args]


@dataclass(frozen=True)
class Invocation:
    args: tuple[str, ...]
    status: int = 0  # validate exits 1 when a program failed
    needs: tuple[str, ...] = ()  # modules of an optional extra


# One small run of every command with --json.
INVOCATIONS = {
    "doctor": Invocation(("doctor", "--json")),
    "serve": Invocation(("serve", "--status", "--json")),
    "plugin path": Invocation(("plugin", "path", "--json")),
    # a list that drops the kernels: reported in the document, exit 1
    "gpu measure": Invocation(
        ("gpu", "measure", "{kernels}/scan.cu", "-p", "module(internalize),globaldce", "--json"), 1
    ),
    "gpu tune": Invocation(("gpu", "tune", "{kernels}/scan.cu", "--budget", "4", "--no-minimize", "--json")),
    "gpu transfers": Invocation(("gpu", "transfers", "{data}/offload.c", "--json")),
    "gpu optimize": Invocation(("gpu", "optimize", "{kernels}/scan.cu", "--mode", "jit", "--k", "2", "--json")),
    "passes": Invocation(("passes", "--json")),
    "datasets list": Invocation(("datasets", "list", "--json")),
    "datasets info": Invocation(("datasets", "info", "{dataset}", "--json")),
    "eval": Invocation(("eval", "{data}/loop_sum.c", "-p", "sroa,instcombine", "--json")),
    "tune": Invocation(("tune", "{data}/loop_sum.c", "--budget", "4", "--no-validate", "--jobs", "1", "--json")),
    "broadcast": Invocation(
        ("broadcast", "{run}", "-o", "{tmp}/broadcast.json", "--no-validate", "--jobs", "1", "--json")
    ),
    # a failing list with --reduce: the reduction's status line must not reach stdout
    "validate": Invocation(
        (
            "validate",
            "-p",
            "function(structurizecfg)",
            "--validate",
            "{data}/selftest",
            "--reduce",
            "--reproducer",
            "{tmp}/repro",
            "--jobs",
            "2",
            "--json",
        ),
        status=1,
    ),
    "predict": Invocation(("predict", "{data}/loop_sum.c", "--top", "3", "--json")),
    "report": Invocation(("report", "run", "{run}", "--json")),
    "optimize": Invocation(("optimize", "{data}/loop_sum.c", "-o", "{tmp}/loop_sum.o", "--json")),
    "labels info": Invocation(("labels", "info", "{label_dir}", "--json")),
    "hot": Invocation(("hot", "{data}/hot_loop.c", "--json")),
    "evaluate": Invocation(
        (
            "evaluate",
            "bench://demo-v1",
            "--split",
            "train",
            "--programs",
            "1",
            "--ks",
            "2",
            "--model",
            "{model}",
            "--jobs",
            "1",
            "--json",
        )
    ),
    "lift-eval": Invocation(
        ("lift-eval", "{data}/loop_sum.c", "--reference", "{data}/shapes.cpp", "--json"),
        needs=("rapidfuzz", "sacrebleu"),
    ),
    "stitch table": Invocation(
        (
            "stitch",
            "table",
            "{labels}",
            "{labels}",
            "--model",
            "{model}",
            "--epochs",
            "1",
            "--hidden",
            "4",
            "--no-pairs",
            "--json",
        ),
        needs=("torch", "ot"),
    ),
    "stitch predict": Invocation(
        ("stitch", "predict", "{data}/loop_sum.c", "--model", "{stitched}", "--json"), needs=("torch", "ot")
    ),
    "security check": Invocation(
        ("security", "check", "{data}/security/cwe14_free.c", "-p", "sroa", "--json"), needs=("torch", "ot")
    ),
}
NEEDS_LABELS = {"evaluate", "stitch table", "stitch predict"}  # a dataset, labels and models first: slow


def having(commands: dict[str, Any], spelling: str) -> set[str]:
    """The commands that have the option spelled so."""
    return {name for name, command in commands.items() if any(spelling in p.opts for p in command.params)}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    return Inputs(tmp_path_factory.mktemp("cli-contract"))


def test_every_json_command_has_an_invocation(cli_commands: dict[str, Any]) -> None:
    assert having(cli_commands, "--json") == set(INVOCATIONS), "give each command with --json an entry in INVOCATIONS"
    assert all("--json" in invocation.args for invocation in INVOCATIONS.values())


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=[pytest.mark.slow] if n in NEEDS_LABELS else []) for n in INVOCATIONS]
)
def test_json_output_is_exactly_one_document_on_stdout(inputs: Inputs, name: str) -> None:
    invocation = INVOCATIONS[name]
    for module in invocation.needs:
        pytest.importorskip(module)
    done = inputs.cli(*inputs.resolve(invocation.args))
    assert done.returncode == invocation.status, done.stderr
    assert json.loads(done.stdout)  # raises on anything before or after the one document


def test_minimize_prints_only_the_list_on_stdout(inputs: Inputs) -> None:
    done = inputs.cli("minimize", str(DATA / "loop_sum.c"), "-p", "sroa,sroa,instcombine")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and " " not in done.stdout, done.stdout  # `sroa,instcombine`, nothing else
    assert "passes, objective" in done.stderr


def test_fail_if_no_gain_exits_1_when_every_answer_is_oz(inputs: Inputs, tmp_path: Path) -> None:
    """tune and broadcast: exit 1 when no program's answer beats -Oz, 0 when one does; the record is saved either
    way."""
    for seed in range(10):  # a one-list random search whose list does not beat -Oz (seed 0 with LLVM 19)
        record = tmp_path / f"oz-{seed}.json"
        tune = ["tune", str(DATA / "loop_sum.c"), "--budget", "1", "--strategy", "random", "--seed", str(seed)]
        done = inputs.cli(*tune, "--no-validate", "--jobs", "1", "-o", str(record), "--json", "--fail-if-no-gain")
        (answer,) = json.loads(done.stdout)
        assert done.returncode == (1 if answer["oz_backup"] else 0), done.stderr
        if answer["oz_backup"]:
            break
    else:
        pytest.fail("every seed found a list that beats -Oz")
    assert "nothing beat -Oz: exit status 1" in done.stderr and record.exists()
    broadcast = ["broadcast", "--no-validate", "--jobs", "1", "--fail-if-no-gain", "-o"]
    nothing = inputs.cli(*broadcast, str(tmp_path / "oz.broadcast.json"), str(record))
    assert nothing.returncode == 1 and (tmp_path / "oz.broadcast.json").exists(), nothing.stderr
    gained = inputs.cli(*broadcast, str(tmp_path / "run.broadcast.json"), str(inputs.run))
    assert gained.returncode == 0 and "nothing beat -Oz" not in gained.stderr, gained.stderr


def test_optimize_fails_if_no_gain_only_when_the_object_is_ozs(inputs: Inputs, tmp_path: Path) -> None:
    """On ring_buffer the shipped model's static choice is -Oz and its jit lists beat it."""
    optimize = ["optimize", "bench://demo-v1/ring_buffer", "--jobs", "1", "--fail-if-no-gain", "-o"]
    static = inputs.cli(*optimize, str(tmp_path / "static.o"))
    assert static.returncode == 1 and "-Oz (backup)" in static.stdout, static.stderr
    assert (tmp_path / "static.o").read_bytes()[:4] == b"\x7fELF"  # written all the same
    jit = inputs.cli(*optimize, str(tmp_path / "jit.o"), "--mode", "jit", "--k", "5")
    assert jit.returncode == 0 and "-passes=" in jit.stdout, jit.stderr


def test_broadcast_never_overwrites_its_input(inputs: Inputs, tmp_path: Path) -> None:
    record = tmp_path / "run.json"
    shutil.copy(inputs.run, record)
    before = record.read_bytes()
    for _ in range(2):
        done = inputs.cli("broadcast", str(record), "--no-validate", "--jobs", "1")
        assert done.returncode == 0, done.stderr
    assert record.read_bytes() == before
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["run.broadcast-2.json", "run.broadcast.json", "run.json"]
    assert "run record -> " in done.stderr and "best(s) changed" in done.stderr


def _humaneval(directory: Path, expected: int) -> Path:
    """A one-program HumanEval-X file: with `expected` 1 it passes; with 2 it fails even at -O0, so no program
    can be judged and every list fails validation."""
    directory.mkdir()
    record = {
        "task_id": "CPP/0",
        "prompt": "int f(){",
        "canonical_solution": "return 1;}\n",
        "test": f"#undef NDEBUG\n#include<assert.h>\nint main(){{assert(f()=={expected});}}\n",
    }
    with gzip.open(directory / "humaneval_cpp.jsonl.gz", "wt") as handle:
        handle.write(json.dumps(record) + "\n")
    return directory


def test_hybrid_mode_validates_every_part(inputs: Inputs, tmp_path: Path) -> None:
    hot = ("kruskal", "prim_forest")
    args = [
        "optimize",
        "bench://demo-v1/union_find",
        "-o",
        str(tmp_path / "out.o"),
        "--mode",
        "hybrid",
        "--hot",
        ",".join(hot),
        "--k",
        "2",
        "--validate",
        "humaneval",
        "--data-dir",
    ]
    passing = inputs.cli(*args, str(_humaneval(tmp_path / "pass", 1)))
    assert passing.returncode == 0, passing.stderr
    assert "<rest of the module>: static list passed humaneval_cpp (1 programs)" in passing.stderr
    rejecting = inputs.cli(*args, str(_humaneval(tmp_path / "fail", 2)))
    assert rejecting.returncode == 0, rejecting.stderr
    for part in ("<rest of the module>", *hot):
        assert re.search(rf"^{re.escape(part)}: .*failed humaneval_cpp", rejecting.stderr, re.M), rejecting.stderr
    lists = dict(line.strip().split(": ", 1) for line in rejecting.stdout.splitlines() if line.startswith("  "))
    assert lists == dict.fromkeys(("<rest of the module>", *hot), "-Oz")  # every part


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["optimize", "x.c", "-o", "x.o", "--hot", "f"], "--hot only applies with --mode hybrid"),
        (["optimize", "x.c", "-o", "x.o", "--k", "3"], "--k only applies with --mode jit, search or hybrid"),
        (
            ["optimize", "x.c", "-o", "x.o", "--mode", "hybrid", "--hot", "f", "--hot-from", "model"],
            "--hot-from only applies when hot functions are predicted",
        ),
        (["optimize", "x.c", "-o", "x.o", "--validate-limit", "3"], "--validate-limit only applies with --validate"),
        (["tune", "x.c", "--no-minimize", "--insertion"], "--insertion only applies while minimizing"),
        (["tune", "x.c", "--no-validate", "--validate", "csmith"], "--validate only applies with validation"),
        (["tune", "x.c", "--no-validate", "--inputs", "dir"], "--inputs only applies with --run"),
        (
            ["tune", "x.c", "--no-validate", "--run", "{exe}", "--perf-counter", "seconds"],
            "--perf-counter only applies to an objective with a perf term",
        ),
        (["broadcast", "run.json", "--no-validate", "--data-dir", "d"], "--data-dir only applies with validation"),
        (
            ["broadcast", "run.json", "--validate", "csmith", "--data-dir", "d"],
            "--data-dir only applies to the humaneval suite",
        ),
        (
            ["tune", "x.c", "--validate", "csmith", "--validate", "dir", "--data-dir", "d"],
            "--data-dir only applies to the humaneval suite",
        ),
        (["eval", "x.c", "-p", "sroa", "--no-cache", "--cache-dir", "c"], "--cache-dir only applies with the cache"),
        (["eval", "x.ll", "-p", "sroa", "--", "-DX"], "clang arguments after -- only apply to C/C++ sources"),
        (["validate", "x.c", "-p", "sroa", "--validate", "csmith"], "--validate only applies to suites"),
        (["validate", "x.c", "-p", "sroa", "--validate-limit", "3"], "--validate-limit only applies to suites"),
        (["validate", "-p", "sroa", "--run", "{exe} x"], "--run only applies to a PROGRAM"),
        (["validate", "x.c", "-p", "sroa", "--run", "valgrind {exe}"], "--run must start with {exe}"),
        (["tune", "x.c", "--no-validate", "--run", "{exe} 'x"], '--run "{exe} \'x": No closing quotation'),
        (["gpu", "optimize", "x.c", "--run", ""], "--run must start with {exe}"),
        (["hot", "x.c", "--run", "{exe} > out.txt"], "'>' would reach the program as an argument"),
        (["gpu", "transfers", "x.c", "--run", "{exe}; ls"], "';' would reach the program as an argument"),
        (["gpu", "optimize", "x.cu", "--k", "3"], "--k only applies with --mode jit"),
        (["tune", "x.c", "--no-validate", "--run", "{exe} < in"], "--inputs feeds each input file on stdin"),
        (["validate", "-p", "sroa", "--seed", "3"], "--seed only applies to the csmith suite"),
        (["validate", "-p", "sroa", "--reproducer", "r"], "--reproducer only applies with --reduce"),
        (
            ["validate", "-p", "sroa", "--validate", "csmith", "--data-dir", "d"],
            "--data-dir only applies to the humaneval suite",
        ),
        (
            ["validate", "-p", "sroa", "--validate", "suite.jsonl", "--data-dir", "d"],
            "--data-dir only applies to the humaneval suite",
        ),
        (["validate", "-p", "sroa", "--json", "--show-passed"], "--show-passed only applies to the table"),
        (
            ["labels", "pool", "bench://x-v1", "-o", "l", "--lists-from", "l0", "--seed", "2"],
            "--seed only applies to the pool",
        ),
        (["labels", "search", "bench://x-v1", "-o", "l", "--part", "3/2"], "--part '3/2': give I/N with 1 <= I <= N"),
        (["labels", "broadcast", "l", "--programs", "9"], "--programs only applies with --unsearched"),
        (["labels", "broadcast", "l", "--unsearched", "", "--programs", "9"], "--unsearched '': name a dataset"),
        (["labels", "broadcast", "l", "--matrix", "l/m", "--pool", "9"], "--pool only applies without --matrix"),
        (["labels", "broadcast", "l", "--add-groups"], "--add-groups only applies with --matrix"),
        (
            ["labels", "broadcast", "l", "--matrix", "l/m", "--add-groups", "--unsearched", "bench://x-v1"],
            "--unsearched only applies without --add-groups",
        ),
        (
            ["labels", "broadcast", "l", "--unsearched", "bench://x-v1", "--split", "tarin"],
            "--split 'tarin': use train",
        ),
        (
            ["labels", "broadcast", "l", "--unsearched", "bench://x-v1", "--split", "train,test"],
            "--split test: models train on the matrix",
        ),
        (["datasets", "build", "pypi", "--only", "lz4,nosuch"], "--only 'lz4,nosuch': pypi has no unit nosuch"),
        (["datasets", "build", "pypi", "--only", "lz4", "--limit", "2"], "--limit only applies without --only"),
        (["labels", "search", "bench://x-v1", "-o", "l", "--strategy", "anneal"], "--strategy 'anneal': use one of"),
        (["train", "l.json", "-o", "m", "--no-validate", "--data-dir", "d"], "--data-dir only applies with validation"),
        (
            ["train", "l.json", "-o", "m", "--no-validate", "--finish", "mergefunc,nosuch"],
            "--finish 'mergefunc,nosuch'",
        ),
        (["train", "l.json", "-o", "m", "--no-validate", "--finish", " , "], "--finish ' , ' names no pass"),
        (
            ["train", "l.json", "-o", "m", "--no-validate", "--validate", "csmith"],
            "--validate only applies with validation",
        ),
        (
            ["optimize", "x.c", "-o", "x.o", "--validate", "csmith", "--data-dir", "d"],
            "--data-dir only applies to the humaneval suite",
        ),
        (["report", "evaluation", "e.json", "--log", "t.jsonl"], "--log only applies to run reports"),
        (["report", "run", "r.json", "--study", "s.json"], "--study only applies to model reports"),
        (["report", "bogus", "x", "--log", "t.jsonl"], "unknown report kind 'bogus'"),
        (["hot", "x.c", "--cache-dir", "c"], "--cache-dir only applies with --run"),
        (["lift-eval", "d", "--weights", "w"], "--weights only applies to the llm-compiler lifter"),
        (
            ["lift-eval", "d", "--lifter", "llm-compiler", "--reference", "r"],
            "--reference only applies to the retrieval lifter",
        ),
        (["evaluate", "bench://x-v1", "--json", "--format", "md"], "--json and --format both print on stdout"),
        (["evaluate", "bench://x-v1", "-o", "e.html"], "format 'html' not supported here: use one of json, csv, md"),
        (["lift-eval", "d", "--format", "csv"], "format 'csv' not supported here: use one of json, md"),
        (["demo", "--format", "pdf"], "format 'pdf' not supported here: use one of html, md"),
        (
            ["stitch", "table", "a", "b", "--json", "--exclude-package", "numpy"],
            "--exclude-package only applies to the tables",
        ),
    ],
)
def test_options_a_mode_would_ignore_are_refused(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused before any work (in process: main() turns the error into one line and exit status 2)."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(command_app(), args, env={"STITCHOPT_CACHE_DIR": str(tmp_path / "cache")})
    assert isinstance(result.exception, StitchoptError), result.output
    assert message in str(result.exception)


# Every option naming a path a command writes, in an invocation that would otherwise start work: `-o` of every
# command that has one (True: a directory to create or fill), and the other options that write.
WRITTEN = {
    "broadcast -o": (["broadcast", "run.json", "--no-validate"], False),
    "datasets export -o": (["datasets", "export", "demo"], False),
    "demo -o": (["demo"], False),
    "eval -o": (["eval", "{data}/loop_sum.c", "-p", "sroa"], False),
    "gpu measure -o": (["gpu", "measure", f"{KERNEL_DIR}/scan.cu"], False),
    "gpu tune -o": (["gpu", "tune", f"{KERNEL_DIR}/scan.cu"], False),
    "gpu optimize -o": (["gpu", "optimize", f"{KERNEL_DIR}/scan.cu"], False),
    "gpu labels -o": (["gpu", "labels", "bench://kernels-v1"], True),
    "evaluate -o": (["evaluate", "bench://demo-v1"], False),
    "ir -o": (["ir", "{data}/loop_sum.c"], False),
    "labels pool -o": (["labels", "pool", "bench://demo-v1"], False),
    "labels search -o": (["labels", "search", "bench://demo-v1"], True),
    "lift-eval -o": (["lift-eval", "{data}/loop_sum.c"], False),
    "optimize -o": (["optimize", "{data}/loop_sum.c"], False),
    "plugin export -o": (["plugin", "export", "default"], False),
    "report -o": (["report", "run", "run.json"], False),
    "security check -o": (["security", "check", "{data}/loop_sum.c"], False),
    "security study -o": (["security", "study"], False),
    "stitch inspect -o": (["stitch", "inspect", "study.json"], False),
    "stitch table -o": (["stitch", "table", "labels.json.gz", "labels.json.gz"], False),
    "stitch train -o": (["stitch", "train", "labels.json.gz"], True),
    "train -o": (["train", "labels.json.gz", "--no-validate"], True),
    "tune -o": (["tune", "{data}/loop_sum.c", "--no-validate"], False),
    "validate -o": (["validate", "-p", "sroa"], False),
    "tune --log": (["tune", "{data}/loop_sum.c", "--no-validate", "--budget", "2", "--jobs", "1"], False),
    "validate --reproducer": (["validate", "-p", "sroa", "--validate", "{data}/selftest", "--reduce"], True),
    "security study --save-model": (["security", "study", "-o", "study.json"], True),
}


def test_every_command_with_o_has_a_written_path_case(cli_commands: dict[str, Any]) -> None:
    assert having(cli_commands, "-o") == {key.removesuffix(" -o") for key in WRITTEN if key.endswith(" -o")}


@pytest.mark.parametrize("key", list(WRITTEN))
def test_a_path_that_cannot_be_written_is_one_line_before_any_work(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """/proc takes no new file, and a directory is no file to write (a file no directory): exit 2 and one line
    naming the path, at once, where these once failed in llc or after minutes of work."""
    args, directory = WRITTEN[key]
    option = key.rsplit(" ", 1)[1]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STITCHOPT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "a-file").write_text("")
    (tmp_path / "a-dir").mkdir()
    for path in (Path("/proc/x"), tmp_path / ("a-file" if directory else "a-dir")):
        started = time.monotonic()
        status = exit_status([*(arg.replace("{data}", str(DATA)) for arg in args), option, str(path)])
        err = capsys.readouterr().err
        assert status == 2 and err.startswith(f"stitchopt: error: {option} {path}: ") and err.count("\n") == 1, err
        assert time.monotonic() - started < 5, f"{key} {path}: found after the work began"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-dir", "a-file"]  # nothing left behind


def test_an_address_needs_the_ray_backend(inputs: Inputs) -> None:
    done = inputs.cli("tune", str(DATA / "loop_sum.c"), "--no-validate", "--address", "localhost:6379")
    assert done.returncode == 2 and "only applies to the ray backend" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


class Reached(Exception):
    """Raised in place of building the Evaluator: the command got that far, with these arguments."""


BROADCAST_RECORD = {"toolchain": "llvm", "objective": "size=1", "strategy": "local", "programs": []}
# Just enough of each command to reach its Evaluator (the rest is faked where a built dataset would be needed).
REACHES = {
    "labels pool": ["labels", "pool", "bench://demo-v1", "-o", "l.json.gz"],
    "labels search": ["labels", "search", "bench://demo-v1", "-o", "labels"],
    "labels broadcast": ["labels", "broadcast", "labels"],
    "labels groups": ["labels", "groups", "labels"],
    "labels validate": ["labels", "validate", "labels", "--validate", "{data}/selftest"],
    "train": ["train", "labels.json.gz", "-o", "model", "--no-validate"],
    "optimize": ["optimize", "{data}/loop_sum.c", "-o", "x.o"],
    "evaluate": ["evaluate", "bench://demo-v1"],
    "eval": ["eval", "{data}/loop_sum.c", "-p", "sroa"],
    "demo": ["demo"],
    "tune": ["tune", "{data}/loop_sum.c", "--no-validate"],
    "broadcast": ["broadcast", "run.json", "--no-validate"],
    "minimize": ["minimize", "{data}/loop_sum.c", "-p", "sroa"],
    "cache warm": ["cache", "warm", "{data}/loop_sum.c"],
    "datasets export": ["datasets", "export", "demo", "-o", "index.parquet"],
    "gpu tune": ["gpu", "tune", f"{KERNEL_DIR}/scan.cu"],
}


def test_every_evaluating_command_is_reached(cli_commands: dict[str, Any]) -> None:
    assert having(cli_commands, "--backend") == set(REACHES), "give each command with --backend an entry in REACHES"


@pytest.mark.parametrize("name", sorted(REACHES))
def test_evaluator_options_reach_the_evaluator(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def spy(_self: Evaluator, _toolchain: object, store: EvaluationStore, **options: Any) -> None:
        seen.update(options, store=store)
        raise Reached

    monkeypatch.setattr(Evaluator, "__init__", spy)
    monkeypatch.setattr("stitchopt.cli.labels.select_benchmarks", lambda *_args, **_kw: [])
    monkeypatch.setattr("stitchopt.cli.labels.plan_broadcast", lambda *_args, **_kw: None)
    monkeypatch.setattr("stitchopt.cli.labels.load_matrix", lambda *_args, **_kw: SimpleNamespace(programs=[]))
    monkeypatch.setattr("stitchopt.cli.labels.form_groups", lambda *_args, **_kw: [()])
    monkeypatch.setattr("stitchopt.cli.labels.pool_lists", lambda *_args, **_kw: [("sroa",)])
    monkeypatch.setattr("stitchopt.learning.heldout.select_benchmarks", lambda *_args, **_kw: [])
    monkeypatch.setattr("stitchopt.cli.datasets.Manifest.load", lambda _dir: SimpleNamespace(entries=[None]))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps(BROADCAST_RECORD))
    args = [arg.replace("{data}", str(DATA)) for arg in REACHES[name]]
    cache = tmp_path / "cache"
    options = ["--jobs", "3", "--backend", "subprocess", "--address", "ray://head:10001", "--cache-dir", str(cache)]
    result = CliRunner().invoke(command_app(), [*args, *options])
    assert isinstance(result.exception, Reached), result.output
    assert seen["jobs"] == 3 and seen["backend"] == "subprocess" and seen["address"] == "ray://head:10001"
    assert cache in Path(seen["store"].path).parents


def test_version_names_stitchopt_its_llvm_and_the_shipped_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert exit_status(["--version"]) == 0
    version, llvm, model = capsys.readouterr().out.splitlines()
    assert version == f"stitchopt {__version__}" and llvm.startswith("LLVM 19.")
    assert re.fullmatch(r"model: shipped default model [0-9a-f]{16}, made by stitchopt \S+ for LLVM 19\.\S+ .*", model)
    monkeypatch.setenv("STITCHOPT_LLVM", str(tmp_path))
    assert exit_status(["--version"]) == 0
    llvm = capsys.readouterr().out.splitlines()[1]
    assert llvm.startswith("LLVM: not found (unusable LLVM: ") and str(tmp_path) in llvm


def _boom(*_args: object, **_kw: object) -> None:
    raise RuntimeError("boom\nsecond line")


def test_exit_status_says_what_went_wrong(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(DEBUG_ENV, "0")  # and restored afterwards: --debug sets it
    assert exit_status(["tune", "x.c", "--bogus"]) == 2
    assert "No such option: --bogus" in capsys.readouterr().err
    assert exit_status(["eval", str(tmp_path / "missing.c"), "-p", "sroa"]) == 2
    assert capsys.readouterr().err == f"stitchopt: error: {tmp_path / 'missing.c'}: no such file\n"
    (tmp_path / "dir.ll").mkdir()
    for output, what in ((tmp_path / "absent" / "x.ll", "is not an existing directory"), (tmp_path / "dir.ll", "is a")):
        assert exit_status(["ir", str(DATA / "loop_sum.c"), "-o", str(output)]) == 2  # a path, not a bug
        err = capsys.readouterr().err
        assert err.startswith(f"stitchopt: error: -o {output}: ") and what in err and err.count("\n") == 1, err
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(DATA / "selftest" / "running_balance.cpp", suite)  # structurizecfg miscompiles it
    assert (
        exit_status(
            [
                "validate",
                "-p",
                "function(structurizecfg)",
                "--validate",
                str(suite),
                "--cache-dir",
                str(tmp_path / "cache"),
            ]
        )
        == 1
    )
    capsys.readouterr()
    monkeypatch.setattr("stitchopt.cli.report.build_report", _boom)
    internal = f"stitchopt: internal error: RuntimeError: boom (run with --debug or {DEBUG_ENV}=1 for the traceback)\n"
    assert exit_status(["report", "run", "r.json"]) == 3
    assert capsys.readouterr().err == internal
    for debug_args, env in ((["--debug"], "0"), ([], "1")):
        monkeypatch.setenv(DEBUG_ENV, env)
        assert exit_status([*debug_args, "report", "run", "r.json"]) == 3
        err = capsys.readouterr().err
        assert err.startswith("Traceback") and "in _boom" in err and err.endswith(internal)


def test_ctrl_c_is_one_line_and_status_130(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(*_args: object, **_kw: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("stitchopt.cli.report.build_report", interrupt)
    assert exit_status(["report", "run", "r.json"]) == 130
    assert capsys.readouterr().err == "stitchopt: interrupted\n"


def test_an_error_raised_while_ctrl_c_unwinds_is_the_interrupt(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal that lands inside a lock's handling can make the cleanup fail (`release unlocked lock`): that
    is still the user's Ctrl-C or SIGTERM (130, one line), not an internal error."""

    def interrupted_cleanup(*_args: object, **_kw: object) -> None:
        try:
            raise KeyboardInterrupt
        finally:
            raise RuntimeError("release unlocked lock")

    monkeypatch.setattr("stitchopt.cli.report.build_report", interrupted_cleanup)
    assert exit_status(["report", "run", "r.json"]) == 130
    assert capsys.readouterr().err == "stitchopt: interrupted\n"


def test_a_command_loads_its_own_modules_and_not_the_other_commands() -> None:
    """`stitchopt cache ...` starts without the GPU, tuning or report commands' modules (COMMANDS' table)."""
    loaded = (
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from stitchopt.cli.main import exit_status; status = exit_status(['cache', '--help']); "
                "print(status, *sorted(m for m in sys.modules if m.startswith('stitchopt.cli.')))",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.splitlines()[-1]
        .split()
    )  # after the help
    assert loaded[0] == "0" and "stitchopt.cli.cache" in loaded, loaded
    assert not {"stitchopt.cli.gpu", "stitchopt.cli.tune", "stitchopt.cli.report"} & set(loaded), loaded


def test_debug_shows_the_traceback_of_a_command_that_fails_to_load(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--debug is read before the command's modules load, so a module that fails to load is shown too."""
    monkeypatch.setenv(DEBUG_ENV, "0")
    monkeypatch.setitem(COMMANDS, "cache", ("stitchopt.cli.no_such_module", "cache_app"))
    assert exit_status(["cache", "--help"]) == 3
    assert "Traceback" not in capsys.readouterr().err
    assert exit_status(["--debug", "cache", "--help"]) == 3
    assert "Traceback" in capsys.readouterr().err


def test_ctrl_c_while_the_commands_load_is_the_same_line_and_status(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executable's first moment, loading typer, is interrupted as a command is (the command's own modules load
    inside `exit_status`, which ends a Ctrl-C so)."""

    class Loading(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "stitchopt.cli.main", Loading("stitchopt.cli.main"))
    with pytest.raises(SystemExit) as ended:
        entry.main()
    assert ended.value.code == 130
    assert capsys.readouterr().err == "stitchopt: interrupted\n"


def test_a_progress_bar_leaves_nothing_on_stderr_that_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log of a run (stderr to a file or a pipe) holds status lines only: rich would leave a blank line where a
    transient bar was."""
    for forcing in ("FORCE_COLOR", "TTY_COMPATIBLE"):  # what makes rich take a pipe for a terminal
        monkeypatch.delenv(forcing, raising=False)
    with progress_bar() as progress:
        progress.update(progress.add_task("building", total=2), completed=2)
    assert capsys.readouterr().err == ""
