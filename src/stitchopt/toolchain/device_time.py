"""What `gpu optimize --objective time` builds beside the model's lists where launches let it count the
instructions each build executes, and which build it keeps: spelled once for apply/device.py, the timing report
(studies/kernel_timing.py, which must import on a GPU machine without LLVM) and benchmarks/gpu_time_chooser.py."""

from __future__ import annotations

from collections.abc import Sequence

# -O3 with opt's -unroll-count=N: where an H200 found the time that no pass list gave (docs/results.md).
TIME_UNROLL_COUNTS = (2, 4, 8)
# Fewer executed instructions than -O3's by less than this is not taken as faster: on the H200 record's train
# kernels, with no margin one build 0.3% fewer was kept and ran 2.7% slower; 2% is the timing's own noise.
TIME_MARGIN = 0.02
# ptxas's measures a build kept for time must not be worse in than -O3: local memory, which the CPU run cannot see.
LOCAL_MEMORY = ("spilled", "stack")


def unroll_flags(count: int) -> tuple[str, ...]:
    """opt's flags for an unroll count: no pass list can say it."""
    return (f"-unroll-count={count}",)


def fewest_executed(ratios: Sequence[float | None], margin: float = TIME_MARGIN) -> int | None:
    """Of builds whose launches executed `ratios` of -O3's instructions (None: one not to keep whatever it
    counted: a run failed or wrote other outputs, or it uses more local memory), the index of the first that
    executed fewest, where that is `margin` fewer than -O3's; None where none is."""
    kept = [(ratio, index) for index, ratio in enumerate(ratios) if ratio is not None and ratio <= 1 - margin]
    return min(kept)[1] if kept else None
