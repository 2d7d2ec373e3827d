"""PassListEval, Csmith and differential testing with the real LLVM on small suites."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.cli.main import exit_status
from stitchopt.errors import InputError, PipelineError, ToolchainError
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.tune.acceptance import default_suites, training_suites
from stitchopt.validate import csmith
from stitchopt.validate.builder import ProgramBuilder
from stitchopt.validate.csmith import csmith_suite
from stitchopt.validate.miscompiles import KNOWN_MISCOMPILES, KnownMiscompile
from stitchopt.validate.reduce import reduce_failure, write_reproducer
from stitchopt.validate.runner import Validator
from stitchopt.validate.sandbox import Limits
from stitchopt.validate.selection import DEFAULT_CSMITH_PROGRAMS, differential_suite
from stitchopt.validate.suites import DATA_DIR_ENV, Suite, SuiteProgram, directory_suite, humaneval_path, jsonl_suite
from stitchopt.validate.verdicts import VerdictStatus

DATA = Path(__file__).parents[1] / "data"
SHARED_DATA = Path(os.environ.get(DATA_DIR_ENV, Path(__file__).parents[3] / "shared" / "data"))
# structurizecfg (a GPU pass) miscompiles CPU code: it makes CPP/3's assertion fail and crashes opt on others.
MISCOMPILING = "function(structurizecfg)"
QUICK_PROGRAMS = 10


@pytest.fixture(scope="module")
def humaneval() -> Suite:
    try:
        path = humaneval_path(SHARED_DATA)
    except InputError as exc:
        pytest.skip(str(exc))
    return jsonl_suite(path).limited(QUICK_PROGRAMS)


@pytest.fixture()
def validator(toolchain: Toolchain, store: EvaluationStore) -> Validator:
    return Validator(toolchain, store, jobs=2)


@pytest.fixture(scope="module")
def humaneval_prepared(toolchain: Toolchain, humaneval: Suite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding the quick subset's IR and -O0 reference runs (the C++ builds: most of the time), made
    once: each humaneval test starts from a copy of it, so no verdict passes from one test to another."""
    path = tmp_path_factory.mktemp("humaneval") / "cache.sqlite"
    with EvaluationStore(path) as store:
        Validator(toolchain, store, jobs=2).prepare(humaneval)
        assert set(store.stats().artifacts_by_kind) == {"reference", "suite-ir"}
    return path


@pytest.fixture()
def humaneval_validator(toolchain: Toolchain, humaneval_prepared: Path, tmp_path: Path) -> Iterator[Validator]:
    with (
        closing(sqlite3.connect(humaneval_prepared)) as prepared,
        closing(sqlite3.connect(tmp_path / "c.sqlite")) as copy,
    ):
        prepared.backup(copy)
    with EvaluationStore(tmp_path / "c.sqlite") as store:
        yield Validator(toolchain, store, jobs=2)


@pytest.mark.slow
def test_humaneval_quick_subset_passes_at_o0_and_oz_and_is_cached(
    humaneval_validator: Validator, humaneval: Suite
) -> None:
    validator = humaneval_validator
    baselines = load_baselines(validator.toolchain, ("O0", "Oz"))
    for name in ("O0", "Oz"):
        report = validator.validate(humaneval, baselines[name].pipeline)
        assert report.passed, report.summary()
        assert len(report.verdicts) == QUICK_PROGRAMS
    again = validator.validate(humaneval, baselines["Oz"].pipeline)
    assert again.passed and all(v.cached for v in again.verdicts)


@pytest.mark.slow
def test_a_miscompiling_list_is_caught_and_reduced(
    humaneval_validator: Validator, humaneval: Suite, tmp_path: Path
) -> None:
    validator = humaneval_validator
    report = validator.validate(humaneval, f"{MISCOMPILING},function(instsimplify),globaldce")
    assert not report.passed
    first = report.failures[0]  # miscompiles first, then the programs opt crashed on
    assert (first.program, first.status) == ("CPP/3", VerdictStatus.TEST_FAILED), report.verdicts
    assert "Assertion" in first.detail
    reduction = reduce_failure(validator, report, humaneval.programs)
    assert reduction.pipeline == MISCOMPILING
    out = write_reproducer(validator, reduction, tmp_path / "repro")
    assert "Assertion" in (out / "actual.txt").read_text()
    assert "exit status 0" in (out / "expected.txt").read_text()
    assert MISCOMPILING in (out / "reproduce.sh").read_text()
    assert (out / "input.ll").read_text().startswith("; ModuleID")


@pytest.mark.slow
def test_fail_fast_stops_early(humaneval_validator: Validator, humaneval: Suite) -> None:
    validator = humaneval_validator
    report = validator.validate(humaneval, MISCOMPILING, fail_fast=True)
    assert not report.passed and report.failures and not report.complete
    full = validator.validate(humaneval, MISCOMPILING)
    assert full.complete and len(full.verdicts) == len(humaneval.programs) == QUICK_PROGRAMS
    # Programs already running when the first failure comes in still finish, but the queued ones are cancelled:
    # fail-fast reports fewer verdicts than the full run of the same suite.
    assert len(report.verdicts) < len(full.verdicts)
    assert {v.program for v in report.verdicts} < {v.program for v in full.verdicts}


def test_broken_records_are_excluded_not_counted(validator: Validator) -> None:
    suite = directory_suite(DATA / "selftest")
    report = validator.validate(suite, "default<Oz>")
    statuses = {v.program: v.status for v in report.verdicts}
    assert statuses == {
        "broken.c": VerdictStatus.EXCLUDED,
        "running_balance.cpp": VerdictStatus.PASSED,
        "sums.c": VerdictStatus.PASSED,
    }
    assert report.passed and report.counted == 2
    assert "does not build at -O0" in report.excluded[0].detail


def test_unparsable_list_is_a_clear_error(validator: Validator) -> None:
    with pytest.raises(PipelineError, match="opt cannot run this pipeline"):
        validator.validate(directory_suite(DATA / "selftest"), "function(no-such-pass)")


def test_csmith_checksums_match_o0(validator: Validator) -> None:
    suite = csmith_suite(validator.builder, 5, first_seed=1, jobs=2)
    assert len(suite.programs) == 5
    assert validator.validate(suite, "default<Oz>").passed
    broken = validator.validate(suite, f"{MISCOMPILING},default<O3>")
    assert {v.status for v in broken.failures} <= {
        VerdictStatus.WRONG_OUTPUT,
        VerdictStatus.OPT_FAILED,
        VerdictStatus.CRASHED,
        VerdictStatus.TIMEOUT,
    }


def test_differential_testing_of_a_user_program(validator: Validator, tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "one.txt").write_text("a\n")
    (inputs / "many.txt").write_text("a\nb\nc\nd\n")
    suite = differential_suite(DATA / "wordcount.c", ["label"], inputs)
    report = validator.validate(suite, "default<Oz>")
    assert report.passed and report.counted == 2
    as_argument = differential_suite(DATA / "wordcount.c", ["{input}"], inputs)
    assert all(str(inputs) in p.run_args[0] and p.stdin is None for p in as_argument.programs)


FAKE_OPT = """#!{python}
# A broken opt: when the pipeline mentions sccp, every signed less-than becomes greater-or-equal.
import subprocess, sys
REAL, AS = {real!r}, {llvm_as!r}
args = sys.argv[1:]
if "-o" not in args or not any(a.startswith("-passes=") and "sccp" in a for a in args):
    sys.exit(subprocess.call([REAL, *args]))
out = args[args.index("-o") + 1]
rest = [a for i, a in enumerate(args) if a != "-o" and (i == 0 or args[i - 1] != "-o")]
text = subprocess.run([REAL, *rest, *([] if "-S" in rest else ["-S"]), "-o", "-"], capture_output=True, check=True)
text = text.stdout.replace(b"icmp slt", b"icmp sge")
if "-S" in rest:
    open(out, "wb").write(text) if out != "-" else sys.stdout.buffer.write(text)
else:
    sys.exit(subprocess.run([AS, "-", "-o", out], input=text).returncode)
"""


def test_a_corrupting_opt_is_caught_and_reduced_to_the_pass_that_triggers_it(
    toolchain: Toolchain, toolchain_with_opt: Callable[[str], Toolchain], tmp_path: Path
) -> None:
    broken = toolchain_with_opt(
        FAKE_OPT.format(python=sys.executable, real=toolchain.tool("opt"), llvm_as=toolchain.tool("llvm-as"))
    )
    with EvaluationStore(tmp_path / "cache.sqlite") as store:
        validator = Validator(broken, store, jobs=2)
        suite = directory_suite(DATA / "selftest")
        assert validator.validate(suite, "function(sroa,early-cse),globaldce").passed
        report = validator.validate(suite, "function(sroa,sccp,early-cse),globaldce,function(dce)")
        assert {(v.program, v.status) for v in report.failures} == {
            ("running_balance.cpp", VerdictStatus.TEST_FAILED),
            ("sums.c", VerdictStatus.TEST_FAILED),
        }
        reduction = reduce_failure(validator, report, suite.programs)
        assert reduction.pipeline == "function(sccp)"
        out = write_reproducer(validator, reduction, tmp_path / "repro")
        assert "exit status 134" in (out / "actual.txt").read_text()


def test_builder_caches_ir_and_references(toolchain: Toolchain, store: EvaluationStore) -> None:
    builder = ProgramBuilder(toolchain, store)
    program = directory_suite(DATA / "selftest").programs[2]
    assert builder.references(program).excluded is None
    assert builder.ir(program) == builder.ir(program)
    assert store.stats().artifacts_by_kind == {"reference": 1, "suite-ir": 1}


def test_a_program_excluded_by_a_time_limit_is_judged_again_next_time(
    toolchain: Toolchain, store: EvaluationStore
) -> None:
    """A reference run that timed out may have met a loaded machine: its exclusion is not remembered."""
    slow = SuiteProgram("slow.c", "#include <unistd.h>\nint main(void) { sleep(2); return 0; }\n", "c")
    hurried = ProgramBuilder(toolchain, store, limits=Limits(wall_seconds=0.5))
    assert "does not finish at -O0 within 0.5 s" in str(hurried.references(slow).excluded)
    assert "reference" not in store.stats().artifacts_by_kind
    assert ProgramBuilder(toolchain, store).references(slow).excluded is None


@pytest.mark.parametrize("known", KNOWN_MISCOMPILES, ids=[known.name for known in KNOWN_MISCOMPILES])
def test_every_known_miscompiling_list_fails_the_csmith_program_that_caught_it(
    validator: Validator, known: KnownMiscompile
) -> None:
    """The regression corpus: each list still fails the program benchmarks/csmith_strength.py found it on, and
    the default Csmith suite is long enough to include that program."""
    if shutil.which("csmith") is None:
        pytest.skip("csmith is not installed")
    suite = csmith_suite(validator.builder, 1, first_seed=known.csmith_seed)
    assert suite.programs[0].name == f"csmith-{known.csmith_seed}"
    assert not validator.validate(suite, known.pipeline).passed
    assert known.csmith_seed <= DEFAULT_CSMITH_PROGRAMS


# A csmith for error paths: seed 1 never finishes, seed 5 fails without a word, any other seed is a tiny program.
FAKE_CSMITH = """#!/bin/sh
case "$1" in --version) echo "csmith 0 (fake)"; exit 0 ;; esac
case "$2" in 1) exec sleep 60 ;; 5) exit 3 ;; esac
printf '#include <stdio.h>\\nint main(void) { printf("checksum = %s\\\\n"); return 0; }\\n' "$2"
"""


@pytest.fixture()
def fake_csmith(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAKE_CSMITH first on PATH, with the csmith.h it needs beside it, and a one-second generation limit."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "include" / "csmith").mkdir(parents=True)
    (tmp_path / "include" / "csmith" / "csmith.h").write_text("")
    (tmp_path / "bin" / "csmith").write_text(FAKE_CSMITH)
    (tmp_path / "bin" / "csmith").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(csmith, "GENERATION_TIMEOUT_S", 1.0)


@pytest.mark.usefixtures("fake_csmith")
def test_a_seed_csmith_does_not_finish_in_time_is_discarded_and_another_drawn(validator: Validator) -> None:
    """Not "csmith --seed 1 failed: " (empty) ending the run: the seed is skipped like a program that hangs."""
    ready: list[tuple[int, int]] = []
    suite = csmith_suite(validator.builder, 2, first_seed=1, progress=lambda *counts: ready.append(counts))
    assert [p.name for p in suite.programs] == ["csmith-2", "csmith-3"]
    assert suite.discarded == ("csmith-1: csmith timed out after 1 s",)
    assert ready[-1] == (2, 2)
    assert validator.validate(suite, "default<Oz>").passed
    # The timeout is cached like a program: the same cache draws the same suite on an idle or a loaded machine.
    (Path(os.environ["PATH"].split(os.pathsep)[0]) / "csmith").write_text(FAKE_CSMITH.replace("exec sleep 60", ":"))
    assert csmith_suite(validator.builder, 2, first_seed=1) == suite


@pytest.mark.usefixtures("fake_csmith")
def test_a_csmith_that_fails_silently_is_named_with_its_exit_status(validator: Validator) -> None:
    with pytest.raises(ToolchainError, match=r"csmith --seed 5 failed: exit status 3: no diagnostic$"):
        csmith_suite(validator.builder, 1, first_seed=5)


NONDETERMINISTIC = '#include <stdio.h>\nint main(void) { int x; printf("%p\\n", (void *)&x); return 0; }\n'
CALLS_ELSEWHERE = "int helper(int);\nextern int table[];\nint main(void) { return helper(table[0]); }\n"


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (NONDETERMINISTIC, "-O0 and -O2 builds behave differently .*; make its output depend on its input only"),
        (CALLS_ELSEWHERE, "does not link on its own at -O0: nothing defines helper, table; validate a whole program"),
        ("int add(int a, int b) { return a + b; }\n", "nothing defines main; validate a whole program"),
    ],
    ids=["nondeterministic", "undefined-symbols", "no-main"],
)
def test_validate_refuses_a_program_no_list_can_be_judged_on(
    source: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 and what to fix, not FAILED (exit 1) as if the list had failed."""
    program = tmp_path / "program.c"
    program.write_text(source)
    assert exit_status(["validate", str(program), "-p", "default<Oz>", "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stitchopt: error: program.c: no list can be judged on it: ") and err.count("\n") == 1
    assert re.search(said, err), err


def test_validate_refuses_an_input_placeholder_without_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a run on a file literally named "{input}" that reports PASSED."""
    args = ["validate", str(DATA / "wordcount.c"), "-p", "default<Oz>", "--run", "{exe} {input}"]
    assert exit_status([*args, "--cache-dir", str(tmp_path / "cache")]) == 2
    assert capsys.readouterr().err == (
        "stitchopt: error: --run names {input} but no --inputs DIR was given: give the directory of inputs\n"
    )


@pytest.mark.usefixtures("fake_csmith")
def test_the_default_suite_says_why_it_is_csmith(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    notes: list[str] = []
    assert default_suites(None, notes.append) == ["csmith"]
    assert notes == [
        "validating on Csmith programs instead of HumanEval-X (no HumanEval-X data: set "
        f"{DATA_DIR_ENV} (or --data-dir, where a command has it) to the directory holding humaneval_cpp.jsonl.gz); "
        "building them takes a minute or more the first time, then they are cached"
    ]
    assert default_suites(tmp_path, notes.append) == ["csmith"]
    assert f"no HumanEval-X data at {tmp_path / 'humaneval_cpp.jsonl.gz'}" in notes[-1]


@pytest.mark.usefixtures("fake_csmith")
def test_training_adds_the_demo_programs_and_validate_knows_them_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo programs caught lists that pass HumanEval-X and break real C: training validates on them too."""
    assert training_suites(tmp_path) == ["csmith", "demo"]
    args = ["validate", "-p", "default<Oz>", "--validate", "demo", "--validate-limit", "2", "--json"]
    assert exit_status([*args, "--cache-dir", str(tmp_path / "cache")]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["suite"] == "demo_v1" and [v["status"] for v in report["verdicts"]] == ["passed", "passed"]


@pytest.mark.slow
@pytest.mark.usefixtures("fake_csmith")
def test_tune_says_when_it_validates_on_csmith_for_want_of_humaneval_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not a silent minute or more of building Csmith programs behind a bar that reads 0%."""
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    args = ["tune", str(DATA / "loop_sum.c"), "--budget", "4", "--validate-limit", "2", "--json"]
    assert exit_status([*args, "--cache-dir", str(tmp_path / "cache")]) == 0
    err = capsys.readouterr().err
    assert "validating on Csmith programs instead of HumanEval-X (no HumanEval-X data: set" in err, err
    assert "takes a minute or more the first time" in err


def test_a_suite_none_of_whose_programs_can_be_judged_is_no_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every program excluded: the verdicts are written, then exit 2 and what to fix, not FAILED (exit 1)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "calls_elsewhere.c").write_text(CALLS_ELSEWHERE)
    output = tmp_path / "verdicts.json"
    args = ["validate", "-p", "default<Oz>", "--validate", str(suite), "-o", str(output)]
    assert exit_status([*args, "--cache-dir", str(tmp_path / "cache")]) == 2
    captured = capsys.readouterr()
    assert "NO VERDICT" in captured.out
    assert captured.err.endswith(
        "no program could be judged (all 1 excluded, e.g. does not link on its own at -O0: nothing defines "
        "helper, table): give programs that build and run alone at -O0\n"
    ), captured.err
    assert json.loads(output.read_text())[0]["verdicts"][0]["status"] == "excluded"
