"""Validation building blocks that need no LLVM: IR summaries, guards, delta debugging, suite files, sandbox."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from stitchopt.errors import InputError
from stitchopt.validate.builder import build_failure
from stitchopt.validate.guards import summarize, suspicious_changes
from stitchopt.validate.reduce import ddmin, reduce_pipeline
from stitchopt.validate.sandbox import Limits, RunOutcome, Sandbox
from stitchopt.validate.suites import jsonl_suite, load_suite

SOURCE_IR = """
@counter = global i32 0
@table = internal constant [2 x i32] [i32 1, i32 2]
@ext = external global i32
define i32 @main() {
entry:
  %x = call i32 @helper(i32 1)
  ret i32 %x
}
define linkonce_odr i32 @inline_me(i32 %a) {
  ret i32 %a
}
define internal i32 @helper(i32 %a) {
entry:
  ret i32 %a
}
declare void @abort()
"""

BROKEN_IR = """
@table = internal constant [2 x i32] [i32 1, i32 2]
define i32 @main() {
entry:
  store i8 poison, ptr null, align 1
  unreachable
}
define i32 @other() {
  unreachable
}
"""


def test_summary_reads_exported_definitions_bodies_and_ub_markers() -> None:
    source = summarize(SOURCE_IR)
    assert source.required == {"counter", "main"}
    assert source.exported == {"counter", "main", "inline_me"}
    assert source.unreachable_bodies == frozenset() and source.ub_markers == 0
    broken = summarize(BROKEN_IR)
    assert broken.unreachable_bodies == {"other"}
    assert broken.ub_markers == 1


def test_guards_flag_removed_definitions_emptied_functions_and_new_ub() -> None:
    source = summarize(SOURCE_IR)
    reasons = suspicious_changes(source, reference=source, candidate=summarize(BROKEN_IR))
    assert any("removed: counter" in r for r in reasons)
    assert any("reduced to unreachable: other" in r for r in reasons)
    assert any("stores to null/poison" in r for r in reasons)
    assert suspicious_changes(source, source, source) == []


def test_guards_accept_what_oz_does_too() -> None:
    broken = summarize(BROKEN_IR)
    assert not any("unreachable" in r for r in suspicious_changes(broken, broken, broken))


def test_ddmin_finds_a_one_minimal_failing_subsequence() -> None:
    items = list(range(20))
    result = ddmin(items, lambda sub: 3 in sub and 17 in sub)
    assert result == [3, 17]


def test_reduce_pipeline_descends_into_adaptors_and_defaults() -> None:
    def expand(element: str) -> str:
        return "function(instcombine,sccp),globaldce"

    def fails(pipeline: str) -> bool:
        return "sccp" in pipeline.replace("default<O2>", expand("default<O2>"))

    assert reduce_pipeline("inline,function(sroa,sccp,dce),globaldce", fails, expand) == "function(sccp)"
    assert reduce_pipeline("strip,default<O2>", fails, expand) == "function(sccp)"


def _write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    with gzip.open(path, "wt") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return path


def test_humaneval_records_get_missing_includes_and_needed_libraries(tmp_path: Path) -> None:
    record = {
        "task_id": "CPP/X",
        "prompt": "#include<openssl/md5.h>\n#include<vector>\nint f(){",
        "canonical_solution": "return 0;}",
        "test": "int main(){return f();}",
    }
    suite = jsonl_suite(_write_jsonl(tmp_path / "s.jsonl.gz", [record]))
    program = suite.programs[0]
    assert program.source.startswith("#include<stdlib.h>\n#include<algorithm>")
    assert program.source.count("#include<vector>") == 1
    assert "-lcrypto" in program.link_args and "-std=c++11" in program.compile_args


def test_bad_suites_fail_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such suite"):
        load_suite(str(tmp_path / "missing.jsonl"))
    with pytest.raises(InputError, match="lacks 'canonical_solution'"):
        jsonl_suite(_write_jsonl(tmp_path / "bad.jsonl.gz", [{"task_id": "x", "prompt": "", "test": ""}]))
    with pytest.raises(InputError, match="no .c/.cc"):
        load_suite(str(tmp_path))


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def test_sandbox_kills_hangs_and_bounds_output(tmp_path: Path) -> None:
    hang = _script(tmp_path, "import time\ntime.sleep(60)\n")
    outcome = Sandbox(Limits(wall_seconds=0.5)).run(hang)
    assert outcome.timed_out and outcome.seconds < 10
    chatty = _script(tmp_path, "import sys\nwhile True: sys.stdout.write('x' * 65536)\n")
    outcome = Sandbox(Limits(wall_seconds=20, file_bytes=1 << 20)).run(chatty)
    assert not outcome.timed_out and outcome.returncode != 0  # SIGXFSZ or the write error
    assert len(outcome.stdout) <= 1 << 20


def test_sandbox_runs_in_a_removed_scratch_dir_with_a_clean_env(tmp_path: Path) -> None:
    probe = _script(
        tmp_path, "import os, sys\nprint(os.getcwd())\nprint(sorted(os.environ))\nprint(sys.stdin.read() == '')\n"
    )
    outcome = Sandbox().run(probe)
    cwd, env, stdin_empty = outcome.stdout.decode().splitlines()
    assert outcome.returncode == 0 and not Path(cwd).exists()
    assert "HOME" in env and "PYTHONPATH" not in env and "STITCHOPT_DATA" not in env
    assert stdin_empty == "True"
    echo = _script(tmp_path, "import sys\nsys.stdout.write(sys.stdin.read().upper())\n")
    assert Sandbox().run(echo, stdin=b"abc").stdout == b"ABC"


def test_sandbox_applies_every_limit(tmp_path: Path) -> None:
    probe = _script(
        tmp_path,
        "import resource\nfor name in ('CPU', 'AS', 'FSIZE', 'NPROC', 'CORE'):\n"
        "    print(resource.getrlimit(getattr(resource, 'RLIMIT_' + name)))\n",
    )
    limits = Limits(cpu_seconds=7, address_space_bytes=1 << 30, file_bytes=1 << 22, processes=99)
    outcome = Sandbox(limits).run(probe)
    expected = [(7, 7), (1 << 30, 1 << 30), (1 << 22, 1 << 22), (99, 99), (0, 0)]
    assert outcome.stdout.decode().splitlines() == [str(pair) for pair in expected]


def test_limits_above_the_callers_hard_limit_are_lowered_not_fatal(tmp_path: Path) -> None:
    """Under `ulimit -t 5` an unprivileged caller cannot grant 10 CPU seconds: the program still runs, with 5."""
    probe = _script(tmp_path, "import resource\nprint(resource.getrlimit(resource.RLIMIT_CPU))\n")
    caller = (
        "import resource, sys\nfrom pathlib import Path\n"
        "from stitchopt.validate.sandbox import Limits, Sandbox\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (5, 5))\n"
        "outcome = Sandbox(Limits(cpu_seconds=10)).run(Path(sys.argv[1]))\n"
        "print(outcome.returncode, outcome.stdout.decode().strip())\n"
    )
    done = subprocess.run([sys.executable, "-c", caller, str(probe)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "0 (5, 5)", done.stderr


def test_a_link_failure_names_what_nothing_defines_in_gnu_ld_and_lld_wording() -> None:
    """clang's last line, "linker command failed with exit code 1", said nothing about what was missing."""
    gnu = (
        "/usr/bin/ld: /tmp/x.o: in function `main':\nx.c:(.text+0x12): undefined reference to `table'\n"
        "/usr/bin/ld: x.c:(.text+0x19): undefined reference to `helper(int)'\n"
        "clang: error: linker command failed with exit code 1 (use -v to see invocation)\n"
    )
    assert build_failure("O0", gnu) == "does not link on its own at -O0: nothing defines helper(int), table"
    lld = "ld.lld: error: undefined symbol: main\n>>> referenced by start.S\nclang: error: linker command failed\n"
    assert build_failure("O2", lld) == "does not link on its own at -O2: nothing defines main"
    assert build_failure("O0", "x.c:1:1: error: unknown type name 'foo'\n") == (
        "does not build at -O0: x.c:1:1: error: unknown type name 'foo'"
    )


def test_a_run_says_how_it_departs_from_the_expected_one() -> None:
    """What `gpu transfers --run` and `gpu optimize --run` print beside OUTPUT DIFFERS, and validation's verdicts."""
    expected = RunOutcome(0, b"sum 10\nmax 4\n", b"", 0.1, False)
    assert RunOutcome(0, b"sum 10\nmax 4\n", b"", 0.3, False).difference(expected) == ""
    assert RunOutcome(0, b"sum 10\nmax 5\n", b"", 0.1, False).difference(expected) == (
        "stdout line 2: 'max 5', expected 'max 4'"
    )
    assert RunOutcome(0, b"sum 10\n", b"", 0.1, False).difference(expected) == "stdout has 1 lines, expected 2"
    assert RunOutcome(3, b"", b"", 0.1, False).difference(expected) == "exit status 3, expected exit status 0"
