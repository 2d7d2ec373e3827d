import time
from pathlib import Path

from stitchopt.toolchain.process import run_tool


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
