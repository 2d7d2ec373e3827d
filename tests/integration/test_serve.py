"""The compile server behind `stitchopt-cc` (`cc.server`, `cc.client`, `stitchopt serve`): model builds through
it are the in-process wrapper's exactly, parallel compiles share one server and log each unit once, and a dead,
stale or foreign server, or a Ctrl-C, never leaves a build failed or a process behind.

Each test has its own server directory (STITCHOPT_SERVER_DIR) and stops what it started."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from stitchopt.cc.client import ServerPaths, server_status, stop_server
from stitchopt.cc.server import CodeStamp
from stitchopt.cli.main import exit_status
from stitchopt.errors import InputError

SOURCE = """#include <stdio.h>
static int table[32];
int fill(int n) { int s = 0; for (int i = 0; i < n && i < 32; i++) { table[i] = i * i; s += table[i]; } return s; }
int main(void) { int unused; printf("%d\\n", fill(10)); return 0; }
"""
CLIENT_SCRIPT = f"#!{sys.executable}\nimport sys\nfrom stitchopt.cc.client import main_cc\nsys.exit(main_cc())\n"


@pytest.fixture()
def cc(tmp_path: Path) -> str:
    """`stitchopt-cc` as its console script is (the client's entry point), whatever the installed one is."""
    script = tmp_path / "bin" / "stitchopt-cc"
    script.parent.mkdir()
    script.write_text(CLIENT_SCRIPT)
    script.chmod(0o755)
    return str(script)


@pytest.fixture()
def server_dir() -> Iterator[Path]:
    """A private directory with a short path (a socket's is at most 107 bytes); its server is stopped after."""
    directory = Path(tempfile.mkdtemp(prefix="so-serve-"))
    yield directory
    _stop(ServerPaths(str(directory)))
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture()
def env(tmp_path: Path, server_dir: Path) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("STITCHOPT_REAL_", "STITCHOPT_SERVER"))}
    kept = {k: v for k, v in kept.items() if k not in ("STITCHOPT_LIST", "STITCHOPT_MODE")}
    return {
        **kept,
        "STITCHOPT_MODEL": "default",
        "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"),
        "STITCHOPT_BUILD_LOG": str(tmp_path / "build.jsonl"),
        "STITCHOPT_SERVER_DIR": str(server_dir),
        "STITCHOPT_SERVER_IDLE": "60",
    }


def _stop(paths: ServerPaths) -> None:
    """Stop the directory's server and wait for it to exit (SIGKILL after 10 s)."""
    try:
        pid = stop_server(paths)
    except InputError:  # a test's foreign server, already gone
        return
    if pid is not None and not _gone(pid, 10.0):
        os.kill(pid, signal.SIGKILL)


def _gone(pid: int, within: float) -> bool:
    """Whether the process exits within the time (a zombie has: reaping it is its parent's business)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=120)


def _log(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _status(env: dict[str, str]) -> dict[str, object] | None:
    return server_status(ServerPaths(env["STITCHOPT_SERVER_DIR"]))


def _slow_compiler(tmp_path: Path, body: str) -> str:
    script = tmp_path / "slowcc"
    script.write_text(f'#!/bin/sh\n{body}\nexec clang-19 "$@"\n')
    script.chmod(0o755)
    return str(script)


def test_a_model_build_through_the_server_is_the_in_process_build_exactly(
    cc: str, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "unit.c").write_text(SOURCE)
    (tmp_path / "bad.c").write_text("int f(void) { return missing; }\n")
    seen = {}
    for name, server in (("in-process", "off"), ("server", "on")):
        run_env = {
            **env,
            "STITCHOPT_SERVER": server,
            "STITCHOPT_CACHE_DIR": str(tmp_path / f"cache-{name}"),  # both build the unit, neither from a cache
            "STITCHOPT_BUILD_LOG": str(tmp_path / f"{name}.jsonl"),
        }
        built = _run([cc, "-Wall", "-O2", "-c", "unit.c", "-o", "unit.o"], tmp_path, run_env)
        failed = _run([cc, "-c", "bad.c", "-o", "bad.o"], tmp_path, run_env)
        records = [
            {k: v for k, v in r.items() if k not in ("time", "seconds", "plain_seconds")}
            for r in _log(tmp_path / f"{name}.jsonl")
        ]
        seen[name] = (built, failed, (tmp_path / "unit.o").read_bytes(), records)
        assert not (tmp_path / "bad.o").exists()
    in_process, served = seen["in-process"], seen["server"]
    for ours, theirs in zip(in_process[:2], served[:2], strict=True):
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert in_process[0].returncode == 0 and b"unused" in in_process[0].stderr
    assert in_process[1].returncode != 0 and b"missing" in in_process[1].stderr
    assert in_process[2] == served[2]  # the same object, byte for byte
    assert in_process[3] == served[3] and len(served[3]) == 1  # the same build-log record
    status = _status(env)
    assert status is not None and status["served"] == 2


def test_parallel_compiles_start_one_server_and_log_each_unit_once(
    cc: str, env: dict[str, str], tmp_path: Path
) -> None:
    units = [f"unit{i}.c" for i in range(6)]
    for i, unit in enumerate(units):
        (tmp_path / unit).write_text(f"int f{i}(int x) {{ return x * {i + 2} + {i}; }}\n")
    compiles = [
        subprocess.Popen([cc, "-c", unit, "-o", unit[:-2] + ".o"], cwd=tmp_path, env=env, stderr=subprocess.PIPE)
        for unit in units
    ]
    errors = [compile.communicate(timeout=120)[1] for compile in compiles]
    assert [compile.returncode for compile in compiles] == [0] * len(units), errors
    records = _log(tmp_path / "build.jsonl")
    assert sorted(str(r["unit"]) for r in records) == sorted(str(tmp_path / unit) for unit in units)
    assert all((tmp_path / (unit[:-2] + ".o")).stat().st_size > 0 for unit in units)
    status = _status(env)
    assert status is not None and status["served"] == len(units)  # one server took them all, none in process


def test_a_killed_server_leaves_its_compile_to_finish_and_the_next_compile_starts_a_new_one(
    cc: str, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "unit.c").write_text(SOURCE)
    assert _run([cc, "-c", "unit.c", "-o", "first.o"], tmp_path, env).returncode == 0
    first = _status(env)
    assert first is not None
    slow = {**env, "STITCHOPT_REAL_CC": _slow_compiler(tmp_path, "sleep 2")}  # passed through, to that compiler
    compile = subprocess.Popen([cc, "-c", "unit.c", "-o", "slow.o"], cwd=tmp_path, env=slow, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while (now := _status(env)) is not None and now["busy"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert now is not None and now["busy"] == 1
    os.kill(int(str(first["pid"])), signal.SIGKILL)
    assert compile.wait(timeout=60) == 0, compile.stderr.read() if compile.stderr else ""
    assert (tmp_path / "slow.o").stat().st_size > 0
    assert _run([cc, "-c", "unit.c", "-o", "third.o"], tmp_path, env).returncode == 0
    assert (tmp_path / "third.o").read_bytes() == (tmp_path / "first.o").read_bytes()
    outcomes = [r["outcome"] for r in _log(tmp_path / "build.jsonl")]
    assert len(outcomes) == 3 and outcomes[1] == "passed_through"
    restarted = _status(env)
    assert restarted is not None and restarted["pid"] != first["pid"]


def test_a_dead_servers_socket_file_is_replaced_and_a_foreign_server_is_never_used(
    cc: str, env: dict[str, str], tmp_path: Path, server_dir: Path
) -> None:
    (tmp_path / "unit.c").write_text(SOURCE)
    paths = ServerPaths(str(server_dir))
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(paths.socket)  # bound, never listening, closed: what a killed server leaves
    dead.close()
    assert _run([cc, "-c", "unit.c", "-o", "unit.o"], tmp_path, env).returncode == 0
    assert _status(env) is not None
    _stop(paths)

    received: list[bytes] = []
    foreign = socket.socket(socket.AF_UNIX)
    foreign.bind(paths.socket)
    foreign.listen()

    def answer() -> None:  # another version's server: its hello does not carry our token
        conn, _ = foreign.accept()
        with conn:
            conn.sendall(b"hello 1 0.0.0-0000000000000000\n")
            received.append(conn.recv(1 << 16))

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        done = _run([cc, "-c", "unit.c", "-o", "again.o"], tmp_path, env)
        thread.join(10)
    finally:
        foreign.close()
    assert done.returncode == 0 and done.stderr == b""
    assert received == [b""]  # it got no request: the compile ran in process
    assert (tmp_path / "again.o").read_bytes() == (tmp_path / "unit.o").read_bytes()
    assert len(_log(tmp_path / "build.jsonl")) == 2


def test_ctrl_c_of_the_client_interrupts_the_compile_and_leaves_no_process(
    cc: str, env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "unit.c").write_text(SOURCE)
    pid_file = tmp_path / "compiler.pid"
    slow = {**env, "STITCHOPT_REAL_CC": _slow_compiler(tmp_path, f"echo $$ > {pid_file}\nexec sleep 60")}
    client = subprocess.Popen([cc, "-c", "unit.c", "-o", "unit.o"], cwd=tmp_path, env=slow)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    compiler = int(pid_file.read_text())
    client.send_signal(signal.SIGINT)
    assert client.wait(timeout=15) == 130
    assert _gone(compiler, 10.0)
    status = _status(env)
    assert status is not None and status["busy"] == 0
    assert not (tmp_path / "unit.o").exists()


def test_a_compile_started_by_a_worker_runs_in_its_process_instead_of_queueing(
    cc: str, env: dict[str, str], tmp_path: Path
) -> None:
    """A real compiler that runs stitchopt-cc again (a launcher script): with every worker waiting on such a
    compile, queueing it would never end."""
    (tmp_path / "unit.c").write_text(SOURCE)
    launcher = tmp_path / "launch" / "clang"  # named like a compiler: the wrapper runs it as the real one
    launcher.parent.mkdir()
    launcher.write_text(f'#!/bin/sh\nexec {cc} clang-19 "$@"\n')
    launcher.chmod(0o755)
    done = _run([cc, str(launcher), "-c", "unit.c", "-o", "unit.o"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    outcomes = sorted(str(r["outcome"]) for r in _log(tmp_path / "build.jsonl"))
    assert len(outcomes) == 2 and "passed_through" in outcomes  # the launcher's command, then clang's
    status = _status(env)
    assert status is not None and status["served"] == 1


def test_a_client_in_another_mount_namespace_compiles_in_its_own_process(
    cc: str, env: dict[str, str], tmp_path: Path
) -> None:
    """A worker sees the server's files: a client under `unshare` (a sandbox, a container) may see others."""
    (tmp_path / "unit.c").write_text(SOURCE)
    assert _run([cc, "-c", "unit.c", "-o", "unit.o"], tmp_path, env).returncode == 0
    done = _run(["unshare", "--mount", cc, "-c", "unit.c", "-o", "again.o"], tmp_path, env)
    if done.returncode != 0 and b"unshare:" in done.stderr:
        pytest.skip(f"no private mount namespace here: {done.stderr.decode().strip()[:200]}")
    assert done.returncode == 0 and done.stderr == b""
    assert (tmp_path / "again.o").read_bytes() == (tmp_path / "unit.o").read_bytes()
    status = _status(env)
    assert status is not None and status["served"] == 1  # the second compile ran in its own process


def test_an_idle_server_exits_and_removes_its_socket(
    cc: str, env: dict[str, str], tmp_path: Path, server_dir: Path
) -> None:
    (tmp_path / "unit.c").write_text(SOURCE)
    assert _run([cc, "-c", "unit.c", "-o", "unit.o"], tmp_path, {**env, "STITCHOPT_SERVER_IDLE": "1"}).returncode == 0
    paths = ServerPaths(str(server_dir))
    found = re.search(r"serve\[(\d+)\]", Path(paths.log).read_text())
    assert found is not None
    assert _gone(int(found[1]), 15.0)
    assert not os.path.exists(paths.socket)
    assert "stopped (idle) after 1 compiles" in Path(paths.log).read_text()


def test_a_server_knows_when_its_code_changed_on_disk(tmp_path: Path) -> None:
    """What makes a server answer `stale` (and stop) after an upgrade or an edit of an editable install."""
    module = tmp_path / "module.py"
    module.write_text("x = 1\n")
    stamp = CodeStamp([str(module)])
    assert not stamp.changed()
    module.write_text("x = 2\n")
    assert stamp.changed()


def test_the_client_imports_almost_nothing() -> None:
    """Every compile pays for the client's imports: none of numpy, subprocess, json or the wrapper."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import stitchopt.cc.client"], capture_output=True, text=True
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert {name for name in imported if name.startswith("stitchopt")} == {
        "stitchopt",
        "stitchopt.cc",
        "stitchopt.cc.client",
        "stitchopt.errors",
    }
    assert imported.isdisjoint({"numpy", "subprocess", "json", "socket", "typing", "re", "dataclasses"})


def test_serve_starts_reports_and_stops_the_server(
    env: dict[str, str], server_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STITCHOPT_SERVER_DIR", str(server_dir))
    assert exit_status(["serve", "--status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["running"] is False

    def serve(*args: str) -> subprocess.CompletedProcess[str]:  # in its own process: the server is not our child
        argv = [sys.executable, "-m", "stitchopt", "serve", *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)

    started = serve("--idle", "30")
    assert started.returncode == 0 and "runs" in started.stderr
    assert exit_status(["serve", "--status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["running"] is True and status["idle_exit_s"] == 30.0 and status["busy"] == 0
    stopped = serve("--stop")
    assert stopped.returncode == 0 and f"compile server {status['pid']} stops" in stopped.stderr
    assert _gone(int(status["pid"]), 10.0)
    assert exit_status(["serve", "--status", "--idle", "5"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("stitchopt: error: --idle goes with starting the server")
