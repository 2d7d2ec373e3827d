"""PassListEval, Csmith and differential testing with the real LLVM on small suites."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.errors import InputError, PipelineError
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.builder import ProgramBuilder
from stitchopt.validate.csmith import csmith_suite
from stitchopt.validate.miscompiles import KNOWN_MISCOMPILES, KnownMiscompile
from stitchopt.validate.reduce import reduce_failure, write_reproducer
from stitchopt.validate.runner import Validator
from stitchopt.validate.selection import DEFAULT_CSMITH_PROGRAMS, differential_suite
from stitchopt.validate.suites import DATA_DIR_ENV, Suite, directory_suite, humaneval_path, jsonl_suite
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


@pytest.mark.slow
def test_humaneval_quick_subset_passes_at_o0_and_oz_and_is_cached(validator: Validator, humaneval: Suite) -> None:
    baselines = load_baselines(validator.toolchain, ("O0", "Oz"))
    for name in ("O0", "Oz"):
        report = validator.validate(humaneval, baselines[name].pipeline)
        assert report.passed, report.summary()
        assert len(report.verdicts) == QUICK_PROGRAMS
    again = validator.validate(humaneval, baselines["Oz"].pipeline)
    assert again.passed and all(v.cached for v in again.verdicts)


@pytest.mark.slow
def test_a_miscompiling_list_is_caught_and_reduced(validator: Validator, humaneval: Suite, tmp_path: Path) -> None:
    report = validator.validate(humaneval, f"{MISCOMPILING},function(instsimplify),globaldce")
    assert not report.passed
    first = report.failures[0]
    assert (first.program, first.status) == ("CPP/3", VerdictStatus.TEST_FAILED)
    assert "Assertion" in first.detail
    reduction = reduce_failure(validator, report, humaneval.programs)
    assert reduction.pipeline == MISCOMPILING
    out = write_reproducer(validator, reduction, tmp_path / "repro")
    assert "Assertion" in (out / "actual.txt").read_text()
    assert "exit status 0" in (out / "expected.txt").read_text()
    assert MISCOMPILING in (out / "reproduce.sh").read_text()
    assert (out / "input.ll").read_text().startswith("; ModuleID")


@pytest.mark.slow
def test_fail_fast_stops_early(validator: Validator, humaneval: Suite) -> None:
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
