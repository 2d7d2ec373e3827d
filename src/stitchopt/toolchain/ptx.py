"""What ptxas says about each kernel (`ptxas -v`): registers, spills, stack, and the occupancy they allow.

These are the static measures of GPU code: fewer SASS instructions, no spills and fewer registers (more warps
resident per multiprocessor) are what a pass list can win without running the kernel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FUNCTION_RE = re.compile(
    r"Function properties for (\S+)\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
_REGISTERS_RE = re.compile(r"Compiling entry function '([^']+)'.*?Used (\d+) registers", re.DOTALL)
# Every multiprocessor since Volta: 64K 32-bit registers in 4 sub-partitions, given out per warp in units of
# 256 (cuda_occupancy.h's rule); the resident warps it can hold depend on the architecture.
REGISTERS_PER_SUBPARTITION = 16384
SUBPARTITIONS = 4
REGISTER_UNIT = 256
MAX_WARPS = {70: 64, 72: 64, 75: 32, 80: 64, 86: 48, 87: 48, 89: 48, 90: 64, 100: 64, 101: 64, 120: 48}


def max_warps(arch: str) -> int:
    """Resident warps per multiprocessor of `arch` (sm_XX); one missing from the table as the newest of its
    major version that is there (sm_121 as sm_120), else 64."""
    number = int(re.sub(r"\D", "", arch))
    if number in MAX_WARPS:
        return MAX_WARPS[number]
    same_major = [known for known in MAX_WARPS if known // 10 == number // 10 and known < number]
    return MAX_WARPS[max(same_major)] if same_major else 64


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reports for one kernel."""

    registers: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int

    def occupancy(self, arch: str) -> float:
        """The share of `arch`'s resident warps that registers allow (shared memory and block size aside)."""
        per_warp = -(-max(self.registers, 1) * 32 // REGISTER_UNIT) * REGISTER_UNIT
        warps = SUBPARTITIONS * (REGISTERS_PER_SUBPARTITION // per_warp)
        return min(max_warps(arch), warps) / max_warps(arch)


def kernel_resources(ptxas_verbose: str) -> dict[str, KernelResources]:
    """Per kernel, from `ptxas -v`'s report (its stderr)."""
    frames = {m.group(1): tuple(int(g) for g in m.groups()[1:]) for m in _FUNCTION_RE.finditer(ptxas_verbose)}
    found = {}
    for block in re.split(r"(?=ptxas info\s+: Compiling entry function)", ptxas_verbose):
        match = _REGISTERS_RE.search(block)
        if match is None:
            continue
        name = match.group(1)
        stack, stores, loads = frames.get(name, (0, 0, 0))
        found[name] = KernelResources(int(match.group(2)), stack, stores, loads)
    return found
