"""A host pass list for an OpenMP offload program, checked by running it: the copies between host and device
counted from libomptarget's log (`LIBOMPTARGET_INFO=32`), the output compared with the baseline build's.

Both builds run with the host CPU as the offload device (toolchain/offload_build.py), sandboxed, with
`OMP_TARGET_OFFLOAD=MANDATORY`: a run that fell back to the host would copy nothing and read as a win.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import CXX_SUFFIXES
from stitchopt.toolchain.offload_build import HOST_BASELINE, build_offload_program, offload_host_module
from stitchopt.validate.sandbox import OUTPUT_LIMIT_BYTES, Limits, RunOutcome, Sandbox

OFFLOAD_ENV = {"LIBOMPTARGET_INFO": "32", "OMP_TARGET_OFFLOAD": "MANDATORY"}  # 32: log every data transfer
OFFLOAD_LIMITS = Limits(wall_seconds=60.0, cpu_seconds=60, address_space_bytes=8 << 30)
# Runs get a /tmp of their own: libomptarget's host plugin writes the device image there.
_COPY_RE = re.compile(rb"Copying data from (host to device|device to host), .*?Size=(\d+)")


@dataclass(frozen=True)
class Transfers:
    """The copies one run made, by direction."""

    to_device: int
    from_device: int
    to_device_bytes: int
    from_device_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.to_device_bytes + self.from_device_bytes

    @classmethod
    def from_log(cls, log: bytes) -> Transfers:
        counts = {b"host to device": [0, 0], b"device to host": [0, 0]}
        for direction, size in _COPY_RE.findall(log):
            counts[direction][0] += 1
            counts[direction][1] += int(size)
        (to_n, to_b), (from_n, from_b) = counts[b"host to device"], counts[b"device to host"]
        return cls(to_n, from_n, to_b, from_b)


@dataclass(frozen=True)
class OffloadRun:
    pipeline: str
    outcome: RunOutcome
    transfers: Transfers

    def to_dict(self) -> dict[str, object]:
        return {
            "pipeline": self.pipeline,
            "returncode": self.outcome.returncode,
            "timed_out": self.outcome.timed_out,
            "stdout_sha256": self.outcome.stdout_sha256,
            "transfers": {**asdict(self.transfers), "bytes": self.transfers.total_bytes},
        }


@dataclass(frozen=True)
class HostListCheck:
    """The baseline's run and the list's: the list is kept only if it behaves like the baseline."""

    baseline: OffloadRun
    candidate: OffloadRun

    @property
    def same_output(self) -> bool:
        return self.baseline.outcome.behaves_like(self.candidate.outcome)

    @property
    def difference(self) -> str:
        """How the list's run departs from the baseline's ("" when it behaves alike)."""
        return self.candidate.outcome.difference(self.baseline.outcome)

    @property
    def bytes_change(self) -> float:
        """Relative change of the bytes copied (0.0 when the baseline copies nothing)."""
        before = self.baseline.transfers.total_bytes
        return (self.candidate.transfers.total_bytes - before) / before if before else 0.0

    @property
    def chosen(self) -> str:
        """The host pipeline to build with: the list where it copies fewer bytes with the same output, else -O3's."""
        keep = self.same_output and self.bytes_change < 0
        return self.candidate.pipeline if keep else self.baseline.pipeline

    def to_dict(self) -> dict[str, object]:
        return {
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "same_output": self.same_output,
            "difference": self.difference,
            "bytes_change": self.bytes_change,
            "chosen": self.chosen,
        }


def check_host_list(
    toolchain: Toolchain,
    sources: Sequence[Path],
    pipeline: str,
    *,
    pass_plugins: Sequence[Path] = (),
    args: Sequence[str] = (),
    clang_args: Sequence[str] = (),
    sandbox: Sandbox | None = None,
) -> HostListCheck:
    """Builds `sources` (one program, with main) with clang's -O3 host pipeline and with `pipeline`, runs both
    with `args`, and counts their copies. InputError when the baseline itself does not run cleanly."""
    modules = [offload_host_module(toolchain, source, clang_args) for source in sources]
    if not any(b"__tgt_" in module for module in modules):  # the runtime's entry points, named in bitcode
        raise InputError(f"{sources[0]}: no OpenMP target region or data mapping (#pragma omp target) to run")
    sandbox = sandbox or Sandbox(OFFLOAD_LIMITS, private_tmp=True)
    cxx = any(source.suffix in CXX_SUFFIXES for source in sources)
    with tempfile.TemporaryDirectory(prefix="stitchopt-offload-") as scratch:
        runs = []
        for name, chosen in (("baseline", HOST_BASELINE), ("candidate", pipeline)):
            program = Path(scratch) / name
            build_offload_program(toolchain, modules, chosen, program, pass_plugins=pass_plugins, cxx=cxx)
            program = program.replace(Path(scratch) / "program")  # one path for both: a program may print argv[0]
            outcome = sandbox.run(program, args, env=OFFLOAD_ENV)
            if len(outcome.stderr) >= OUTPUT_LIMIT_BYTES:
                raise InputError(f"{sources[0]}: too many copies to count from the runtime's log (over 1 MiB of it)")
            if name == "baseline" and (outcome.returncode != 0 or outcome.timed_out):  # nothing to compare with
                raise InputError(
                    f"{sources[0]}: the program does not run cleanly with the host as the offload device "
                    f"({outcome.describe()})"
                )
            runs.append(OffloadRun(chosen, outcome, Transfers.from_log(outcome.stderr)))
    return HostListCheck(runs[0], runs[1])
