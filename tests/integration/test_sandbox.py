"""The test-program sandbox as an escaping program meets it: no way out of its directory, onto the network or past
the end of its run; whole outputs compared; Ctrl-C and kill -9 of `validate` leave nothing running behind."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.builder import References, judge_outcome
from stitchopt.validate.sandbox import (
    Limits,
    RunInterrupted,
    Sandbox,
    probe_isolation,
    remove_stale_scratch,
    scratch_directory,
)
from stitchopt.validate.suites import Check, SuiteProgram
from stitchopt.validate.verdicts import VerdictStatus

ESCAPES = r"""
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
  FILE *outside = fopen(argv[1], "w");
  printf("wrote outside: %d\n", outside != NULL);
  FILE *inside = fopen("mine.txt", "w");
  printf("wrote inside: %d\n", inside != NULL && fputs("x", inside) >= 0);
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons(atoi(argv[2]));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  printf("connected: %d\n", connect(fd, (struct sockaddr *)&address, sizeof address) == 0);
  printf("root: %d\n", getuid() == 0);
  fflush(stdout);
  if (fork() == 0) {  /* a daemon: its own session, then a grandchild that writes later */
    setsid();
    if (fork() == 0) {
      sleep(1);
      FILE *late = fopen(argv[3], "w");
      if (late) fclose(late);
    }
    return 0;
  }
  return 0;
}
"""

isolated = pytest.mark.skipif(not probe_isolation().available, reason=probe_isolation().reason)


def _compile(toolchain: Toolchain, source: str, exe: Path) -> Path:
    subprocess.run([toolchain.tool("clang"), "-x", "c", "-", "-o", str(exe)], input=source.encode(), check=True)
    return exe


@isolated
def test_a_program_cannot_write_outside_connect_out_or_outlive_its_run(toolchain: Toolchain, tmp_path: Path) -> None:
    """The three escapes a test program had: a file written outside its directory, a connection to a server on
    127.0.0.1, and a setsid()+fork daemon that wrote a file later. It still writes its own directory."""
    exe = _compile(toolchain, ESCAPES, tmp_path / "escapes")
    outside, late = tmp_path / "outside.txt", tmp_path / "late.txt"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        outcome = Sandbox().run(exe, [str(outside), str(port), str(late)])
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.stdout.decode().splitlines() == ["wrote outside: 0", "wrote inside: 1", "connected: 0", "root: 0"]
    time.sleep(1.5)
    assert not outside.exists() and not late.exists()


def test_the_whole_output_is_compared_not_its_first_mebibyte(tmp_path: Path) -> None:
    """Two programs print the same 2 MB and then a different last line: their runs do not behave alike, and a
    list whose build printed the second fails as wrong output."""
    runs = []
    for last in ("same", "different"):
        script = tmp_path / f"{last}.py"
        script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write('x' * 2_000_000 + '\\n{last}\\n')\n")
        script.chmod(0o755)
        runs.append(Sandbox().run(script))
    expected, actual = runs
    assert expected.stdout == actual.stdout and len(expected.stdout) == 1 << 20  # what is kept to show
    assert expected.stdout_size == 2_000_006 and not actual.behaves_like(expected)
    program = SuiteProgram("printer", "", "c", check=Check.MATCH_REFERENCE)
    status, detail = judge_outcome(program, actual, References((expected,)))
    assert status is VerdictStatus.WRONG_OUTPUT and "differs after its first 1,048,576 bytes" in detail


def test_stop_kills_the_runs_in_progress_and_they_give_no_outcome(tmp_path: Path) -> None:
    """What Ctrl-C does to a validation: a run that would take 30 s ends at once, with RunInterrupted rather
    than an outcome that a verdict (and the cache) could take for the program's behaviour."""
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(30)\n")
    sleeper.chmod(0o755)
    sandbox = Sandbox(Limits(wall_seconds=30))
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(sandbox.run, sleeper)
        time.sleep(1)
        started = time.monotonic()
        sandbox.stop()
        with pytest.raises(RunInterrupted):
            running.result(timeout=10)
    assert time.monotonic() - started < 5


def test_without_pidfds_a_run_still_ends_on_time_and_its_end_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kernel or seccomp profile without pidfd_open: the sandbox looks for the end every 10 ms instead."""

    def refused(pid: int) -> int:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "pidfd_open", refused)
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(f"#!{sys.executable}\nimport sys, time\ntime.sleep(float(sys.argv[1]))\nprint('woke')\n")
    sleeper.chmod(0o755)
    sandbox = Sandbox(Limits(wall_seconds=2))
    quick = sandbox.run(sleeper, ["0"])
    assert not quick.timed_out and quick.returncode == 0 and quick.stdout.strip() == b"woke"
    started = time.monotonic()
    slow = sandbox.run(sleeper, ["30"])
    assert slow.timed_out and time.monotonic() - started < 10


SLEEPER = r"""
#include <unistd.h>
int main(void) { sleep(30); return 0; }
"""


def _validate_a_sleeper(tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`stitchopt validate` on a program that sleeps 30 s (under a 25 s limit), once its reference build runs
    (not while clang builds it: clang's command line names the same scratch directory, and a build in progress
    goes on for a moment after validate is killed); and the mark of that build's scratch directory."""
    program = tmp_path / "sleeper.c"
    program.write_text(SLEEPER)
    validate = subprocess.Popen(
        [sys.executable, "-m", "stitchopt", "validate", str(program), "-p", "sroa", "--run-timeout", "25"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")},
    )
    marker = f"stitchopt-ref-{validate.pid}-"
    assert _wait_for(lambda: _running(marker, program_only=True), 60), "the reference run never started"
    return validate, marker


def _running(marker: str, *, program_only: bool = False) -> list[int]:
    """Processes whose command line (or, `program_only`, whose executable's path) mentions `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if marker in (argv[0] if program_only else b" ".join(argv)).decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for(predicate, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_ctrl_c_ends_validate_at_once(toolchain: Toolchain, tmp_path: Path) -> None:
    """SIGINT while the program's reference build runs (it would take 25 s): validate exits within seconds and
    leaves no test program running."""
    validate, marker = _validate_a_sleeper(tmp_path)
    started = time.monotonic()
    validate.send_signal(signal.SIGINT)
    validate.wait(timeout=20)
    assert time.monotonic() - started < 5
    assert validate.stderr is not None and b"Traceback" not in validate.stderr.read()
    assert not _running(marker)


@isolated
def test_kill_9_of_validate_kills_its_program_and_the_next_run_removes_its_scratch(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    """A test program dies with the process that started it (bubblewrap's --die-with-parent); the scratch
    directories that process could not remove are removed when the next sandbox starts."""
    validate, marker = _validate_a_sleeper(tmp_path)
    left = list(Path(tempfile.gettempdir()).glob(f"stitchopt-*-{validate.pid}-*"))
    assert left  # its reference build's, listed while it lives (a live process's are never stale)
    validate.kill()
    validate.wait(timeout=10)
    assert _wait_for(lambda: not _running(marker), 5), "the test program outlived validate"
    remove_stale_scratch()  # this one, or a sandbox another test worker starts meanwhile, removes them
    assert not any(path.exists() for path in left)
    with scratch_directory("run") as mine:  # a live process's directory is never taken for stale
        remove_stale_scratch()
        assert Path(mine).exists()


def test_a_program_killed_by_a_signal_reads_as_killed_isolated_or_not(toolchain: Toolchain, tmp_path: Path) -> None:
    """bubblewrap exits 128+N when its program dies on signal N: the outcome says the signal, so a crash is judged
    a crash (and abort a failed test), as without isolation."""
    exe = _compile(toolchain, "#include <signal.h>\nint main(void) { raise(SIGSEGV); return 0; }\n", tmp_path / "segv")
    outcome = Sandbox().run(exe)
    assert outcome.returncode == -signal.SIGSEGV and outcome.describe() == "killed by SIGSEGV"
