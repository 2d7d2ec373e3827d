"""What `gpu optimize --objective time` builds beside the model's lists where launches let it count the
instructions each build executes, and how many fewer it takes as faster: spelled once for apply/device.py and for
the timing report (studies/kernel_timing.py, which must import on a GPU machine without LLVM)."""

from __future__ import annotations

# -O3 with opt's -unroll-count=N: where an H200 found the time that no pass list gave (docs/results.md).
TIME_UNROLL_COUNTS = (2, 4, 8)
# Fewer executed instructions by less than this is not taken as faster: chosen on the train kernels' times, where
# builds 0-1% fewer ran as fast as -O3 or slower (one 2.7% slower).
TIME_MARGIN = 0.02
# ptxas's measures a build kept for time must not be worse in than -O3: local memory, which the CPU run cannot see.
LOCAL_MEMORY = ("spilled", "stack")


def unroll_flags(count: int) -> tuple[str, ...]:
    """opt's flags for an unroll count: no pass list can say it."""
    return (f"-unroll-count={count}",)
