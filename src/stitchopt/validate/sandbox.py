"""Run an untrusted test program: resource limits, a scratch directory removed afterwards, no stdin by default.

Output goes to files in the scratch directory rather than pipes, so the file-size limit also bounds what a
runaway program can print; only the first `OUTPUT_LIMIT_BYTES` are read back.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.toolchain.process import kill_group, rlimited

OUTPUT_LIMIT_BYTES = 1 << 20
CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}


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
    """What a test program did. `returncode` < 0 means it died on that signal."""

    returncode: int
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool

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
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> RunOutcome:
        return cls(
            returncode=int(str(data["returncode"])),
            stdout=str(data["stdout"]).encode("latin-1"),
            stderr=str(data["stderr"]).encode("latin-1"),
            seconds=float(str(data["seconds"])),
            timed_out=bool(data["timed_out"]),
        )


def run_sandboxed(
    executable: Path,
    args: Sequence[str] = (),
    *,
    stdin: bytes | None = None,
    limits: Limits = Limits(),
    wrapper: Sequence[str] = (),
) -> RunOutcome:
    """Run `executable` (under `wrapper`, e.g. valgrind, if given) in a fresh scratch directory with a clean
    environment; kill its process group on timeout."""
    with tempfile.TemporaryDirectory(prefix="stitchopt-run-") as scratch:
        workdir = Path(scratch)
        stdin_path = workdir / ".stdin"
        stdin_path.write_bytes(stdin or b"")
        out_path, err_path = workdir / ".stdout", workdir / ".stderr"
        env = {**CLEAN_ENV, "HOME": scratch, "TMPDIR": scratch}
        start = time.perf_counter()
        with open(stdin_path, "rb") as fin, open(out_path, "wb") as fout, open(err_path, "wb") as ferr:
            proc = subprocess.Popen(
                rlimited([*wrapper, str(executable), *args], limits.rlimits()),
                stdin=fin if stdin is not None else subprocess.DEVNULL,
                stdout=fout,
                stderr=ferr,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )
            try:
                proc.wait(timeout=limits.wall_seconds)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                kill_group(proc.pid)  # also whatever it forked and left running
                proc.wait()
        seconds = time.perf_counter() - start
        return RunOutcome(proc.returncode, _head(out_path), _head(err_path), seconds, timed_out)


def _head(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(OUTPUT_LIMIT_BYTES)
