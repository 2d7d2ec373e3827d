"""Run an untrusted test program: its own namespaces where the kernel allows, resource limits, a scratch directory
removed afterwards, no stdin by default.

With bubblewrap (`bwrap`) the program runs with no network (an empty network namespace), in its own PID
namespace (every process it forks, even one that calls `setsid()`, dies when the run ends, and the run dies when
the process that started it does), as an unprivileged user, with capabilities dropped and the whole filesystem
read-only but for its scratch directory (`TMPDIR` and `HOME` point there; a sandbox made with `private_tmp`
also gives each run a /tmp of its own, thrown away after it: LLVM's offload runtime writes there whatever TMPDIR
says). Where bubblewrap is missing or cannot
create namespaces, programs run under the resource limits alone, and `stitchopt doctor` says so.

Output goes to files in the scratch directory rather than pipes, so the file-size limit also bounds what a
runaway program can print. The whole of stdout is compared (its size and sha256); only the first
`OUTPUT_LIMIT_BYTES` are kept to show.
"""

from __future__ import annotations

import hashlib
import math
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from stitchopt.diagnostics import telling_line
from stitchopt.toolchain.process import kill_group, rlimited

OUTPUT_LIMIT_BYTES = 1 << 20
CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}
SANDBOX_ENV = "STITCHOPT_SANDBOX"  # "off": resource limits only
SCRATCH_KINDS = ("run", "build", "ref", "perf")  # what scratch_directory() makes: test runs and their builds
NOBODY = "65534"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Limits:
    """Per-run ceilings. `processes` caps the user's process count (root is exempt from it on Linux)."""

    wall_seconds: float = 10.0
    cpu_seconds: int = 10
    address_space_bytes: int = 2 << 30
    file_bytes: int = 64 << 20
    processes: int = 256

    def rlimits(self) -> dict[str, int]:
        """The ceilings as `rlimited` takes them; no core files."""
        return {
            "cpu": self.cpu_seconds,
            "as": self.address_space_bytes,
            "fsize": self.file_bytes,
            "nproc": self.processes,
            "core": 0,
        }


@dataclass(frozen=True)
class RunOutcome:
    """What a test program did. `returncode` < 0 means it died on that signal. `stdout` is the first
    `OUTPUT_LIMIT_BYTES` of the output; `stdout_size` and `stdout_sha256` are of all of it."""

    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool
    stdout_size: int = -1  # -1: as long as `stdout` (outcomes made from a known output)
    stdout_sha256: str = ""  # "": that of `stdout`

    def __post_init__(self) -> None:
        if self.stdout_size < 0:
            object.__setattr__(self, "stdout_size", len(self.stdout))
        if not self.stdout_sha256:
            object.__setattr__(self, "stdout_sha256", hashlib.sha256(self.stdout).hexdigest())

    def behaves_like(self, other: RunOutcome) -> bool:
        """The same exit status and the same whole output."""
        return (self.returncode, self.stdout_size, self.stdout_sha256) == (
            other.returncode,
            other.stdout_size,
            other.stdout_sha256,
        )

    def difference(self, expected: RunOutcome) -> str:
        """How this run departs from `expected` ("" when it behaves alike): the exit statuses, else the first
        stdout line that differs."""
        if self.behaves_like(expected):
            return ""
        if expected.returncode != self.returncode:
            return f"{self.describe()}, expected {expected.describe()}"
        want = expected.stdout.decode(errors="replace").splitlines()
        got = self.stdout.decode(errors="replace").splitlines()
        for number, (a, b) in enumerate(zip(want, got, strict=False), 1):
            if a != b:
                return f"stdout line {number}: {b[:120]!r}, expected {a[:120]!r}"
        if len(got) != len(want):
            return f"stdout has {len(got)} lines, expected {len(want)}"
        return (
            f"stdout differs after its first {len(expected.stdout):,} bytes ({self.stdout_size:,} bytes in all, "
            f"expected {expected.stdout_size:,})"
        )

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s"
        if self.returncode < 0:
            try:
                name = signal.Signals(-self.returncode).name
            except ValueError:
                name = f"signal {-self.returncode}"
            return f"killed by {name}"
        return f"exit status {self.returncode}"

    def to_dict(self) -> dict[str, object]:
        return {
            "returncode": self.returncode,
            "stdout": self.stdout.decode("latin-1"),
            "stderr": self.stderr.decode("latin-1"),
            "seconds": self.seconds,
            "timed_out": self.timed_out,
            "stdout_size": self.stdout_size,
            "stdout_sha256": self.stdout_sha256,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> RunOutcome:
        return cls(
            returncode=int(str(data["returncode"])),
            stdout=str(data["stdout"]).encode("latin-1"),
            stderr=str(data["stderr"]).encode("latin-1"),
            seconds=float(str(data["seconds"])),
            timed_out=bool(data["timed_out"]),
            stdout_size=int(str(data.get("stdout_size", -1))),
            stdout_sha256=str(data.get("stdout_sha256", "")),
        )


class RunInterrupted(Exception):
    """The sandbox was stopped while this run was in progress: there is no outcome to judge."""


@dataclass(frozen=True)
class Isolation:
    """Whether test programs get their own namespaces, and why not."""

    available: bool
    reason: str


@lru_cache(maxsize=1)
def probe_isolation() -> Isolation:
    """Checked once per process by running `true` in the sandbox."""
    if os.environ.get(SANDBOX_ENV) == "off":
        return Isolation(False, f"disabled by {SANDBOX_ENV}=off: resource limits only")
    if shutil.which("bwrap") is None:
        return Isolation(False, "bubblewrap is not installed (apt-get install bubblewrap): resource limits only")
    with scratch_directory("run") as scratch:
        true = shutil.which("true") or "/bin/true"
        try:
            done = subprocess.run(
                [*_bwrap(Path(scratch), Path(true), True), true],
                capture_output=True,
                timeout=30,
                start_new_session=True,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Isolation(False, f"bubblewrap does not run here ({exc}): resource limits only")
    if done.returncode != 0:
        why = telling_line(done.stderr.decode(errors="replace")) or f"exit status {done.returncode}"
        return Isolation(False, f"bubblewrap cannot create namespaces here ({why}): resource limits only")
    return Isolation(True, "bubblewrap: no network, own PID namespace, read-only filesystem, unprivileged user")


def _bwrap(scratch: Path, executable: Path, private_tmp: bool) -> list[str]:
    """bubblewrap's arguments up to the command. The executable is bound read-only where it is, in case it lives
    on a filesystem that is mounted later than / in the host's tree."""
    return [
        "bwrap",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        *(["--tmpfs", "/tmp"] if private_tmp else []),
        "--ro-bind", str(executable), str(executable),
        "--bind", str(scratch), str(scratch),
        "--chdir", str(scratch),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--uid", NOBODY,
        "--gid", NOBODY,
        "--cap-drop", "ALL",
        "--",
    ]  # fmt: skip


def scratch_directory(kind: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary directory named after this process (`stitchopt-KIND-PID-...`), so that one left behind by a
    killed process is recognised and removed by `remove_stale_scratch`."""
    assert kind in SCRATCH_KINDS
    return tempfile.TemporaryDirectory(prefix=f"stitchopt-{kind}-{os.getpid()}-")


def remove_stale_scratch(directory: Path | None = None) -> int:
    """Scratch directories whose process is gone (killed with -9, say): removed; how many."""
    removed = 0
    for path in Path(directory or tempfile.gettempdir()).glob("stitchopt-*-*-*"):
        _, kind, pid, _ = path.name.split("-", 3)
        if kind in SCRATCH_KINDS and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Sandbox:
    """Runs test programs under `limits`, isolated where `probe_isolation()` allows. Several threads may run at
    once; `stop()` (on Ctrl-C, say) kills every run in progress, and those runs raise `RunInterrupted` instead of
    returning an outcome that a verdict could be built on."""

    def __init__(self, limits: Limits = Limits(), *, private_tmp: bool = False) -> None:
        self.limits = limits
        self.private_tmp = private_tmp
        self.isolation = probe_isolation()
        self._running: set[int] = set()
        self._lock = threading.Lock()
        self._stopped = False
        remove_stale_scratch()

    def run(
        self,
        executable: Path,
        args: Sequence[str] = (),
        *,
        stdin: bytes | None = None,
        wrapper: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> RunOutcome:
        """Run `executable` (under `wrapper`, e.g. valgrind, if given) in a fresh scratch directory with a clean
        environment plus `env`; kill its process group (and, isolated, its PID namespace) on timeout."""
        with scratch_directory("run") as scratch:
            workdir = Path(scratch)
            stdin_path = workdir / ".stdin"
            stdin_path.write_bytes(stdin or b"")
            out_path, err_path = workdir / ".stdout", workdir / ".stderr"
            environment = {**CLEAN_ENV, **(env or {}), "HOME": scratch, "TMPDIR": scratch}
            command = [*wrapper, str(executable), *args]
            if self.isolation.available:
                command = [*_bwrap(workdir, executable.resolve(), self.private_tmp), *command]
            start = time.perf_counter()
            with open(stdin_path, "rb") as fin, open(out_path, "wb") as fout, open(err_path, "wb") as ferr:
                proc = subprocess.Popen(
                    rlimited(command, self.limits.rlimits()),
                    stdin=fin if stdin is not None else subprocess.DEVNULL,
                    stdout=fout,
                    stderr=ferr,
                    cwd=workdir,
                    env=environment,
                    start_new_session=True,
                )
                with self._lock:
                    self._running.add(proc.pid)
                    stopped = self._stopped
                try:
                    timed_out = not stopped and not _ends_within(proc.pid, self.limits.wall_seconds)
                finally:
                    with self._lock:  # out of the set before it is reaped: stop() never kills a reused pid
                        self._running.discard(proc.pid)
                        stopped = self._stopped
                    kill_group(proc.pid)  # and whatever it forked and left running: the group's id is still its own
                    proc.wait()
            if stopped:
                raise RunInterrupted(f"{executable.name}: stopped")
            seconds = time.perf_counter() - start
            size, digest = _size_and_digest(out_path)
            returncode = proc.returncode
            if self.isolation.available and 128 < returncode <= 128 + 64:  # bwrap exits 128+N for signal N
                returncode = -(returncode - 128)
            return RunOutcome(returncode, _head(out_path), _head(err_path), seconds, timed_out, size, digest)

    def stop(self) -> None:
        """Kill every run in progress; runs started from now on are killed at once."""
        with self._lock:
            self._stopped = True
            for pid in self._running:
                kill_group(pid)


def _ends_within(pid: int, seconds: float) -> bool:
    """Whether the process ends within `seconds`. It is left unreaped: until then its pid, and so its process
    group's id, cannot pass to another process that a kill of the group would hit."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:  # no pidfds (a kernel before 5.3, a seccomp profile that refuses them): look every 10 ms
        deadline = time.monotonic() + seconds
        while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True
    try:
        ready = select.poll()
        ready.register(handle, select.POLLIN)
        return bool(ready.poll(min(math.ceil(seconds * 1000), 2**31 - 1)))  # poll takes a C int of milliseconds
    finally:
        os.close(handle)


def _size_and_digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _head(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(OUTPUT_LIMIT_BYTES)
