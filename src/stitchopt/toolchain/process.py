"""Run one tool as a subprocess with a time limit that kills its whole process group."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from stitchopt.errors import ToolchainError

DEFAULT_TIMEOUT_S = 120.0
STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True)
class ToolRun:
    """What one process did: exit status, output and wall time."""

    returncode: int  # negative: killed by that signal
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")

    def stderr_tail(self, limit: int = STDERR_TAIL_CHARS) -> str:
        return self.stderr_text[-limit:]


@lru_cache(maxsize=1)
def _prlimit() -> str:
    found = shutil.which("prlimit")
    if found is None:
        raise ToolchainError("resource limits need `prlimit` (util-linux): install util-linux")
    return found


def rlimited(argv: Sequence[str], limits: Mapping[str, int]) -> list[str]:
    """`argv` started under resource limits (prlimit's names: as, cpu, fsize, nproc, core; soft = hard).

    util-linux `prlimit` sets them and execs the command. Setting them in the forked child instead
    (`preexec_fn`) is what Python documents as unsafe when threads run, and evaluations start tools from
    thread pools.
    """
    if not limits:
        return list(argv)
    return [_prlimit(), *(f"--{name}={_within_hard_limit(name, value)}" for name, value in limits.items()), "--", *argv]


_RESOURCES = {
    "as": resource.RLIMIT_AS,
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "nproc": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}


def _within_hard_limit(name: str, value: int) -> int:
    """At most what this process may grant: prlimit refuses to raise a hard limit (an unprivileged user under
    `ulimit -t` on a cluster) and would then run nothing, which would read as the program failing."""
    hard = resource.getrlimit(_RESOURCES[name])[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def memory_limits(memory_bytes: int | None) -> dict[str, int]:
    """An address-space cap, or no limit."""
    return {} if memory_bytes is None else {"as": memory_bytes}


def run_tool(
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    memory_bytes: int | None = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ToolRun:
    """Run `argv` in a new session; on timeout kill the session's process group, never just the leader.

    Starting a new session matters because `clang` spawns `cc1` and a hung child would outlive its parent.
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        rlimited(argv, memory_limits(memory_bytes)),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=cwd,
        env=dict(env) if env is not None else None,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:
        kill_group(proc.pid)
        proc.wait()
        raise
    return ToolRun(
        returncode=proc.returncode,
        stdout=out,
        stderr=err,
        seconds=time.perf_counter() - start,
        timed_out=timed_out,
    )


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
