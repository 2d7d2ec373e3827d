"""A device pass list checked by running its kernel: the list's build and -O3's, each retargeted to the host
(toolchain/simt.py), run on the CPU with the same launch, their output buffers compared byte for byte. A list
that changes a kernel's outputs is rejected like a miscompile on the CPU; where -O3's own build cannot run here
(an intrinsic the emulator lacks, a deadlock), nothing is known.

The check covers what a pass list can break in the IR; NVPTX's code generator and ptxas, the same for every list,
do not run. Only some blocks run (`sampled_blocks`: the first, the last and some between): what a kernel computes
in one block is the same code as in the others, and a launch of millions of threads as fibers would take
minutes. A counted run (`RunCheck.executed`) runs the IR as instruction selection receives it, llc's IR passes
included, and says how many instructions the sampled blocks executed: the time objective's measure.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.core import CompileOptions
from stitchopt.errors import InputError, StitchoptError
from stitchopt.toolchain.device import optimize_device, without_file_ids
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble
from stitchopt.toolchain.simt import (
    DYNAMIC_SHARED_BYTES,
    OpenmpConfiguration,
    SimtBuilder,
    host_module,
    kernel_parameters,
    openmp_configuration,
)
from stitchopt.validate.sandbox import Limits, RunOutcome, Sandbox, scratch_directory

DEVICE_RUN_LIMITS = Limits(wall_seconds=120.0, cpu_seconds=120, address_space_bytes=8 << 30, file_bytes=1 << 30)
SAMPLED_BLOCKS = 8
MAX_BLOCK_THREADS = 1024


class ArgumentKind(IntEnum):
    SCALAR = 0
    INPUT = 1
    OUTPUT = 2  # read back after the run and compared
    LAUNCH_ENVIRONMENT = 3  # an OpenMP region's first parameter; the data is its cross-team reduction buffer's


@dataclass(frozen=True)
class LaunchArgument:
    kind: ArgumentKind
    data: bytes  # a scalar's bytes as the kernel's parameter holds them, or a buffer's initial contents
    # The numpy type of a buffer's elements or of a scalar (a launch file's): "float32" and "float64" outputs have
    # their NaNs made one, a scalar's kind is checked against its parameter's.
    element: str = ""


_ELEMENT_CODES = {"float32": 1, "float64": 2}  # simt.c's ELEMENT_F32, ELEMENT_F64
_BITCODE_MAGIC = b"BC\xc0\xde"
UNSUPPORTED_EXIT = 5  # simt.c: the emulator cannot run the kernel (not the kernel's doing)
_EXECUTED_RE = re.compile(rb"^simt: executed (\d+)$", re.MULTILINE)  # a counted run's last line on stderr
KEPT_OUTCOMES = 16  # runs a DeviceRunner answers again without running: kernels checked at once, and their lists


@dataclass(frozen=True)
class DeviceLaunch:
    """One launch of a kernel: grid and block shapes, dynamic shared memory and the arguments in order."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    arguments: tuple[LaunchArgument, ...]

    def __post_init__(self) -> None:
        threads = self.block[0] * self.block[1] * self.block[2]
        if not 0 < threads <= MAX_BLOCK_THREADS:
            raise InputError(f"a launch needs 1 to {MAX_BLOCK_THREADS} threads a block, not {threads}")
        if min(self.grid) < 1:
            raise InputError("a launch needs a grid of at least one block")
        if self.shared_bytes > DYNAMIC_SHARED_BYTES:
            raise InputError(f"{self.shared_bytes} bytes of dynamic shared memory: at most {DYNAMIC_SHARED_BYTES}")
        if any(a.kind is ArgumentKind.SCALAR and len(a.data) > 8 for a in self.arguments):
            raise InputError("a scalar kernel argument is at most 8 bytes")


def as_the_runtime_launches(launch: DeviceLaunch, configuration: OpenmpConfiguration) -> DeviceLaunch:
    """An OpenMP region's launch as the CPU run makes it: its first argument the runtime's launch environment
    (counters zeroed, and the cross-team reduction buffer the kernel environment asks for), whatever it was; its
    teams along x, as the runtime numbers them; a region with a cross-team reduction at most `SAMPLED_BLOCKS`
    teams, so that every team runs and the last one combines their records (the runtime picks the count of
    teams: any computes the same)."""
    environment = LaunchArgument(ArgumentKind.LAUNCH_ENVIRONMENT, bytes(configuration.reduction_bytes))
    teams = launch.grid[0] * launch.grid[1] * launch.grid[2]  # numbered along x only: the runtime's grid is flat
    if configuration.reduction_bytes:
        teams = min(teams, SAMPLED_BLOCKS)
    return replace(launch, grid=(teams, 1, 1), arguments=(environment, *launch.arguments[1:]))


def sampled_blocks(grid: tuple[int, int, int], count: int = SAMPLED_BLOCKS) -> list[int]:
    """Linear indices of the blocks a check runs: `count` spread evenly from the first to the last."""
    total = grid[0] * grid[1] * grid[2]
    if total <= count:
        return list(range(total))
    return sorted({round(i * (total - 1) / (count - 1)) for i in range(count)})


def launch_input(launch: DeviceLaunch, blocks: Sequence[int]) -> bytes:
    """The launch as the emulator reads it on stdin (simt.c's format)."""
    parts = [
        b"SIMT1",
        struct.pack("<6I", *launch.grid, *launch.block),
        struct.pack(f"<{len(blocks) + 1}I", len(blocks), *blocks),
    ]
    parts.append(struct.pack("<I", len(launch.arguments)))
    for argument in launch.arguments:
        element = _ELEMENT_CODES.get(argument.element, 0)
        parts += [struct.pack("<IIQ", argument.kind, element, len(argument.data)), argument.data]
    return b"".join(parts)


def not_run(outcome: RunOutcome) -> str:
    """Why a run tells nothing about the kernel ('' when it does): the emulator could not run it."""
    if outcome.returncode == UNSUPPORTED_EXIT:
        reason = outcome.stderr.decode(errors="replace").strip().splitlines()
        return f"not run: {reason[-1] if reason else outcome.describe()}"
    return ""


def reference_failure(outcome: RunOutcome) -> str:
    """Why -O3's run gives nothing to compare with ('' when it ended cleanly)."""
    if outcome.returncode == 0 and not outcome.timed_out:
        return ""
    return not_run(outcome) or f"not run: -O3's build {outcome.describe()}"


@dataclass(frozen=True)
class DeviceRunCheck:
    """-O3's run and the list's; `ran` is False when -O3's own build could not run here (nothing known)."""

    reference: RunOutcome
    candidate: RunOutcome

    @property
    def ran(self) -> bool:
        return not reference_failure(self.reference)

    @property
    def same_outputs(self) -> bool:
        return self.ran and self.candidate.behaves_like(self.reference)

    @property
    def verdict(self) -> str:
        """What the list did: "same", "differs: ...", or "not run: ..." where the emulator could not run -O3's
        build or the list's (what the list's build does there is unknown, not different)."""
        if not self.ran:
            return reference_failure(self.reference)
        if self.same_outputs:
            return "same"
        if reason := not_run(self.candidate):
            return reason
        if self.candidate.returncode != 0 or self.candidate.timed_out:
            return f"differs: {self.candidate.describe()}"
        return "differs: other outputs"


class DeviceRunner:
    """Runs optimized device modules' kernels on the CPU; programs built in a directory of its own."""

    def __init__(self, toolchain: Toolchain, sandbox: Sandbox | None = None) -> None:
        self.toolchain = toolchain
        self.sandbox = sandbox or Sandbox(DEVICE_RUN_LIMITS)
        self._directory = scratch_directory("build")  # reclaimed by the sandbox's sweep if this process dies
        self._builder = SimtBuilder(toolchain, Path(self._directory.name))
        # Runs are deterministic: -O3's is run once, not once per list. The latest few only (a kernel's reference
        # is asked for again with each list): an outcome holds up to a MiB of output.
        self._outcomes: OrderedDict[str, RunOutcome] = OrderedDict()
        self._lock = threading.Lock()

    def run(
        self, optimized: bytes, kernel: str, launch: DeviceLaunch, blocks: Sequence[int], counted: bool = False
    ) -> RunOutcome:
        """`kernel` of an optimized device module (bitcode or text) run on `blocks` of `launch`, its executed
        instructions `counted` or not (`executed_instructions`); a run asked for again is answered from the
        first."""
        stdin = launch_input(launch, blocks)
        key = hashlib.sha256(b"\0".join([optimized, kernel.encode(), stdin, bytes([counted])])).hexdigest()
        with self._lock:
            known = self._outcomes.get(key)
            if known is not None:
                self._outcomes.move_to_end(key)
                return known
        is_bitcode = optimized.startswith(_BITCODE_MAGIC)
        text = disassemble(self.toolchain, optimized, kernel) if is_bitcode else optimized.decode()
        program = self._builder.program(host_module(text, kernel, counted))
        try:
            outcome = self.sandbox.run(program, stdin=stdin)
        finally:
            program.unlink(missing_ok=True)
        with self._lock:
            self._outcomes[key] = outcome
            while len(self._outcomes) > KEPT_OUTCOMES:
                self._outcomes.popitem(last=False)
        return outcome

    def check(self, reference: bytes, candidate: bytes, kernel: str, launch: DeviceLaunch) -> DeviceRunCheck:
        """-O3's optimized module (`reference`) and a list's, run alike."""
        blocks = sampled_blocks(launch.grid)
        return DeviceRunCheck(self.run(reference, kernel, launch, blocks), self.run(candidate, kernel, launch, blocks))

    def verdict(self, reference: bytes, candidate: bytes, kernel: str, launch: DeviceLaunch) -> str:
        """`check`'s verdict, or "not run: ..." where the kernel cannot be built to run here (a struct passed by
        value, a retargeting the host compiler rejects)."""
        try:
            return self.check(reference, candidate, kernel, launch).verdict
        except StitchoptError as exc:
            return f"not run: {exc}"

    def reference_status(self, reference: bytes, kernel: str, launch: DeviceLaunch) -> str:
        """ "ran" where -O3's build runs here, else why not."""
        try:
            outcome = self.run(reference, kernel, launch, sampled_blocks(launch.grid))
        except StitchoptError as exc:
            return f"not run: {exc}"
        return reference_failure(outcome) or "ran"

    def close(self) -> None:
        """Removes the programs' directory."""
        self._directory.cleanup()


def executed_instructions(outcome: RunOutcome) -> int | None:
    """The instructions a counted run executed; None where it did not end cleanly."""
    found = _EXECUTED_RE.search(outcome.stderr)
    return int(found.group(1)) if found and outcome.returncode == 0 and not outcome.timed_out else None


@dataclass(frozen=True)
class ExecutedCheck:
    """A build's counted runs beside -O3's: each launch's verdict, and the instructions its launches executed in
    all against -O3's (None where a launch's count is missing, or there is no launch)."""

    verdicts: dict[str, str]
    ratio: float | None


@dataclass(frozen=True)
class RunCheck:
    """Lists run on the CPU before they are kept (`gpu optimize`, `gpu tune`): each launch (kernel, launch) of the
    list's build beside -O3's."""

    runner: DeviceRunner
    launches: Sequence[tuple[str, DeviceLaunch]]
    origin: str = ""  # the launch file, which `fitted`'s errors name

    def verdicts(
        self, toolchain: Toolchain, bitcode: bytes, pipelines: tuple[str, str], options: CompileOptions
    ) -> dict[str, str]:
        """Each launch's verdict (`DeviceRunCheck.verdict`) for the second pipeline against the first (-O3's)."""
        reference, candidate = (optimize_device(toolchain, bitcode, p, options) for p in pipelines)
        return {
            f"{kernel} #{number}": self.runner.verdict(reference, candidate, kernel, launch)
            for number, (kernel, launch) in enumerate(self.launches, 1)
        }

    def executed(self, reference_ir: str, candidate_ir: str) -> ExecutedCheck:
        """-O3's module and a build's, each as instruction selection receives it (`codegen_ir`), run with their
        instructions counted on every launch: the outputs compared as `verdicts` does, the counts summed over the
        launches (a large launch weighs as its work does) as a ratio."""
        verdicts: dict[str, str] = {}
        counts: list[tuple[int, int]] = []  # -O3's and the build's, per launch
        for number, (kernel, launch) in enumerate(self.launches, 1):
            blocks = sampled_blocks(launch.grid)
            name = f"{kernel} #{number}"
            try:
                reference, candidate = (
                    self.runner.run(ir.encode(), kernel, launch, blocks, counted=True)
                    for ir in (reference_ir, candidate_ir)
                )
            except StitchoptError as exc:
                verdicts[name] = f"not run: {exc}"
                continue
            verdicts[name] = DeviceRunCheck(reference, candidate).verdict
            executed = executed_instructions(reference), executed_instructions(candidate)
            if verdicts[name] == "same" and executed[0] and executed[1] is not None:
                counts.append((executed[0], executed[1]))
        complete = bool(counts) and len(counts) == len(self.launches)
        return ExecutedCheck(verdicts, sum(c for _, c in counts) / sum(r for r, _ in counts) if complete else None)

    def fitted(self, device_ir: str, kernels: Sequence[str], module: str) -> RunCheck:
        """These launches with their kernels named as `module` (its text `device_ir`, its kernels `kernels`) names
        them: an OpenMP region also by its name without the file IDs clang puts in it (`__omp_offloading_f_l2`),
        which copying or moving the file changes. InputError where a launch names a kernel the module lacks, or
        passes arguments its parameters do not take: one per parameter, a buffer for a pointer, a scalar of the
        parameter's width otherwise."""
        launches = []
        for number, (named, launch) in enumerate(self.launches, 1):
            where = f"{self.origin}: launch {number}" if self.origin else f"launch {number}"  # as the file's errors
            alike = [kernel for kernel in kernels if without_file_ids(kernel) == without_file_ids(named)]
            if named not in kernels and len(alike) > 1:
                raise InputError(f"{where} names {named!r}, which is {' or '.join(alike)}: name one of them")
            kernel = named if named in kernels else next(iter(alike), "")
            if not kernel:
                raise InputError(
                    f"{where} names kernel {named!r}, which {module} lacks: launch one of {', '.join(kernels)}"
                )
            parameters = kernel_parameters(device_ir, kernel)
            configuration = openmp_configuration(device_ir, kernel)  # an OpenMP region's first is the runtime's
            if len(parameters) != len(launch.arguments):
                raise InputError(
                    f"{where}: {kernel} takes {len(parameters)} arguments, it gives {len(launch.arguments)}"
                )
            for position, (parameter, argument) in enumerate(zip(parameters, launch.arguments, strict=True), 1):
                wanted = _parameter_bytes(parameter)
                given = 0 if argument.kind is not ArgumentKind.SCALAR else len(argument.data)
                floating = parameter.split()[0] in _TYPE_BYTES
                scalar = argument.kind is ArgumentKind.SCALAR and wanted == given
                if scalar and argument.element and floating != argument.element.startswith("float"):
                    use = "a float32 or float64" if floating else "an int or uint of the same width"
                    raise InputError(
                        f"{where}, argument {position}: {kernel} takes {parameter.split()[0]} there, the "
                        f"launch gives {argument.element}: use {use}"
                    )
                if wanted != given:
                    takes = {0: "a buffer (a pointer)", None: "a type no launch passes"}.get(
                        wanted, f"a scalar of {wanted} bytes"
                    )
                    raise InputError(
                        f"{where}, argument {position}: {kernel} takes {takes} there ({parameter.split()[0]})"
                    )
                reads = dereferenceable_bytes(parameter) if position > 1 or configuration is None else None
                if reads is not None and argument.kind is not ArgumentKind.SCALAR and len(argument.data) < reads:
                    raise InputError(
                        f"{where}, argument {position}: {kernel} may read {reads} bytes there, the buffer "
                        f"holds {len(argument.data)}: are the arguments in its parameters' order (docs/gpu.md)?"
                    )
            if configuration is not None:
                if not any(a.kind is ArgumentKind.OUTPUT for a in launch.arguments[1:]):
                    raise InputError(
                        f"{where}: argument 1 of an OpenMP region is the runtime's launch environment, "
                        "which is not compared: mark one of the region's own arguments as an output"
                    )
                launch = as_the_runtime_launches(launch, configuration)
            launches.append((kernel, launch))
        return replace(self, launches=launches)


def run_refusal(verdicts: dict[str, str]) -> str:
    """Why a list's runs refuse it: a launch whose outputs differ from -O3's ('' when none; where -O3's own build
    could not run, nothing is known and the static measures decide)."""
    differing = [f"{launch}: {verdict}" for launch, verdict in verdicts.items() if verdict.startswith("differs")]
    return f"changes outputs when run on the CPU ({'; '.join(differing)})" if differing else ""


_TYPE_BYTES = {"half": 2, "bfloat": 2, "float": 4, "double": 8}
_DEREFERENCEABLE_RE = re.compile(r"^ptr\b.*\bdereferenceable\((\d+)\)")


def dereferenceable_bytes(parameter: str) -> int | None:
    """The bytes the IR says a pointer parameter may be read or written at (an OpenMP region's static array, say);
    None where it says nothing."""
    found = _DEREFERENCEABLE_RE.match(parameter)
    return int(found.group(1)) if found else None


def _parameter_bytes(parameter: str) -> int | None:
    """The bytes of a scalar parameter's type (0 for a pointer, None for a type no launch passes)."""
    type_ = parameter.split()[0]
    if type_ == "ptr":
        return 0
    if type_ == "i1":  # a C++ bool, passed as a byte
        return 1
    if re.fullmatch(r"i(8|16|32|64)", type_):
        return int(type_[1:]) // 8
    return _TYPE_BYTES.get(type_)


# A launch file (`stitchopt gpu optimize --launch`): JSON, {"launches": [{"kernel", "grid", "block",
# "shared_bytes" (0), "seed" (0), "arguments": [{"scalar": TYPE, "value": V} or {"buffer": TYPE, "count": N,
# "fill": "random" | "zeros" | "range" ("random"), "output": false}]}]}; "random" draws floats from [-1, 1) and
# integers from [0, count), so that they can index the buffer's own length.
ELEMENT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
FILLS = ("random", "zeros", "range")


def read_launches(path: Path) -> list[tuple[str, DeviceLaunch]]:
    """The kernels and launches of a launch file; InputError naming the first thing wrong in it."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: undecodable text, bad JSON, huge numbers
        raise InputError(f"{path}: not a readable JSON launch file ({type(exc).__name__}: {exc})") from None
    launches = document.get("launches") if isinstance(document, dict) else None
    if not isinstance(launches, list) or not launches:
        raise InputError(f'{path}: a launch file holds {{"launches": [...]}} with at least one launch')
    return [_launch(path, number, entry) for number, entry in enumerate(launches, 1)]


_LAUNCH_KEYS = frozenset({"kernel", "grid", "block", "shared_bytes", "seed", "arguments"})
_SCALAR_KEYS, _BUFFER_KEYS = frozenset({"scalar", "value"}), frozenset({"buffer", "count", "fill", "output"})
_GRID_LIMITS = (2**31 - 1, 65535, 65535)  # CUDA's
MAX_BLOCKS = 2**32 - 1  # a block's linear index is 32 bits in simt.c's launch
MAX_LAUNCH_BYTES = 1 << 30  # the buffers of one launch: each run holds them twice, under DEVICE_RUN_LIMITS


def _launch(path: Path, number: int, entry: object) -> tuple[str, DeviceLaunch]:
    where = f"{path}: launch {number}"
    if not isinstance(entry, dict) or not isinstance(entry.get("kernel"), str):
        raise InputError(f'{where}: an object naming its "kernel"')
    if unknown := sorted(set(entry) - _LAUNCH_KEYS):
        raise InputError(f"{where}: unknown key {unknown[0]!r} (a launch has {', '.join(sorted(_LAUNCH_KEYS))})")
    grid, block = (_dimensions(where, entry, key) for key in ("grid", "block"))
    if any(size > limit for size, limit in zip(grid, _GRID_LIMITS, strict=True)):
        raise InputError(f'{where}: "grid" is at most {_GRID_LIMITS[0]} x {_GRID_LIMITS[1]} x {_GRID_LIMITS[2]}')
    if grid[0] * grid[1] * grid[2] > MAX_BLOCKS:
        raise InputError(f'{where}: "grid" has more than {MAX_BLOCKS} blocks')
    shared, seed = entry.get("shared_bytes", 0), entry.get("seed", 0)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (shared, seed)):
        raise InputError(f"{where}: shared_bytes and seed are whole numbers of at least 0")
    arguments = entry.get("arguments")
    if not isinstance(arguments, list):
        raise InputError(f'{where}: "arguments" is a list, one entry per kernel parameter')
    budget = [MAX_LAUNCH_BYTES]  # what the launch's buffers may still take, checked before each is filled
    rng = np.random.default_rng(seed)
    made = tuple(_argument(f"{where}, argument {i}", rng, a, budget) for i, a in enumerate(arguments, 1))
    if not any(a.kind is ArgumentKind.OUTPUT for a in made):
        raise InputError(f'{where}: no buffer is an output ("output": true): a run would compare nothing')
    try:
        return entry["kernel"], DeviceLaunch(grid, block, shared, made)
    except InputError as exc:  # the block's threads, the shared memory: checked where every launch is made
        raise InputError(f"{where}: {exc}") from None


def _dimensions(where: str, entry: dict[str, object], key: str) -> tuple[int, int, int]:
    value = entry.get(key)
    whole = isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    if not isinstance(value, list) or not whole or not 1 <= len(value) <= 3:
        raise InputError(f'{where}: "{key}" is a list of 1 to 3 positive whole numbers')
    padded = [*value, 1, 1]
    return (padded[0], padded[1], padded[2])


def _argument(where: str, rng: np.random.Generator, argument: object, budget: list[int]) -> LaunchArgument:
    if not isinstance(argument, dict) or ("scalar" in argument) == ("buffer" in argument):
        raise InputError(f'{where}: an object with "scalar" or "buffer" (an element type)')
    allowed = _SCALAR_KEYS if "scalar" in argument else _BUFFER_KEYS
    if unknown := sorted(set(argument) - allowed):
        raise InputError(f"{where}: unknown key {unknown[0]!r} (use {', '.join(sorted(allowed))})")
    kind = argument.get("scalar", argument.get("buffer"))
    if kind not in ELEMENT_TYPES:
        raise InputError(f"{where}: element type {kind!r} is not one of {', '.join(ELEMENT_TYPES)}")
    dtype = np.dtype(str(kind))
    if "scalar" in argument:
        return LaunchArgument(ArgumentKind.SCALAR, _scalar(where, dtype, argument.get("value")), dtype.name)
    count, fill, output = argument.get("count"), argument.get("fill", "random"), argument.get("output", False)
    most = budget[0] // dtype.itemsize
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= most:
        raise InputError(
            f'{where}: a buffer needs a whole "count" of elements, 1 to {most} (the launch\'s buffers hold at most '
            f"{MAX_LAUNCH_BYTES >> 30} GiB)"
        )
    budget[0] -= count * dtype.itemsize
    if fill not in FILLS:
        raise InputError(f"{where}: fill {fill!r} is not one of {', '.join(FILLS)}")
    if not isinstance(output, bool):
        raise InputError(f'{where}: "output" is true or false')
    if fill == "zeros":
        data = np.zeros(count, dtype)
    elif fill == "range":
        data = np.arange(count).astype(dtype)
    elif dtype.kind == "f":
        data = rng.uniform(-1.0, 1.0, count).astype(dtype)
    else:
        data = rng.integers(0, count, count).astype(dtype)
    return LaunchArgument(ArgumentKind.OUTPUT if output else ArgumentKind.INPUT, data.tobytes(), dtype.name)


def _scalar(where: str, dtype: np.dtype[Any], value: object) -> bytes:
    """A scalar argument's bytes; InputError where the value is not one of its type."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f'{where}: a scalar needs a numeric "value"')
    if dtype.kind in "iu":
        limits = np.iinfo(dtype)
        if not isinstance(value, int) or not limits.min <= value <= limits.max:
            raise InputError(f"{where}: {value!r} is not {_article(dtype.name)} ({limits.min} to {limits.max})")
    elif not abs(float(value)) <= float(np.finfo(dtype).max):  # also NaN, and integers too large for a float
        raise InputError(
            f"{where}: {float(value)!r} is not {_article(dtype.name)} (finite, at most {np.finfo(dtype).max})"
        )
    return np.array(value, dtype).tobytes()


def _article(type_name: str) -> str:
    return f"{'an' if type_name[0] in 'aeiou' else 'a'} {type_name}"
