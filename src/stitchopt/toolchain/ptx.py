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
# Hopper and Ampere multiprocessors: 64K 32-bit registers, at most 64 resident warps, registers given out per
# warp in units of 256.
REGISTERS_PER_SM = 65536
MAX_WARPS_PER_SM = 64
REGISTER_UNIT = 256


@dataclass(frozen=True)
class KernelResources:
    registers: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int

    @property
    def occupancy(self) -> float:
        """The share of a multiprocessor's warps that can be resident, as far as registers allow."""
        per_warp = -(-max(self.registers, 1) * 32 // REGISTER_UNIT) * REGISTER_UNIT
        return min(MAX_WARPS_PER_SM, REGISTERS_PER_SM // per_warp) / MAX_WARPS_PER_SM


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
