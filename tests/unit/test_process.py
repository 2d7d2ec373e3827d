import ast
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import stitchopt
from stitchopt.toolchain.process import run_tool

SOURCE = Path(stitchopt.__file__).parent


def test_timeout_kills_the_whole_process_group(tmp_path) -> None:
    pidfile = tmp_path / "child.pid"
    # The shell starts a grandchild that would outlive a kill of the shell alone.
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    start = time.perf_counter()
    run = run_tool(["sh", "-c", script], timeout=0.5)
    assert run.timed_out
    assert time.perf_counter() - start < 10
    child = int(pidfile.read_text())
    time.sleep(0.1)
    assert not _running(child)


def _running(pid: int) -> bool:
    """True unless the process is gone or a zombie (an orphan waits for init to reap it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def test_memory_limit_stops_a_hog() -> None:
    run = run_tool(["python3", "-c", "x = bytearray(2 * 1024**3)"], timeout=30, memory_bytes=256 * 1024**2)
    assert run.returncode != 0
    assert "MemoryError" in run.stderr_text


def test_captures_output_and_status() -> None:
    run = run_tool(["sh", "-c", "cat; echo oops >&2; exit 3"], stdin=b"hello")
    assert (run.returncode, run.stdout, run.stderr_tail()) == (3, b"hello", "oops\n")


def test_limits_apply_in_a_process_started_from_a_thread_pool() -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda _: run_tool(["sh", "-c", "ulimit -v"], memory_bytes=512 * 1024**2), range(8)))
    assert {run.stdout.strip() for run in runs} == {b"524288"}  # KiB


def test_no_child_process_is_started_with_preexec_fn() -> None:
    """Python documents `preexec_fn` as unsafe when threads run (a fork may deadlock): limits go through prlimit."""
    offenders = [
        f"{path.relative_to(SOURCE)}:{node.lineno}"
        for path in SOURCE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.keyword) and node.arg == "preexec_fn"
    ]
    assert offenders == []
