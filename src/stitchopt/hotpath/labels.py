"""What "hot" means, precisely (docs/hot-paths.md):

- a block is hot when it belongs to the smallest set of blocks covering `share` (default 90%) of the program's
  dynamic block executions (blocks sorted by count, ties by layout order);
- a function is hot likewise, over the functions' executions (the sum of their blocks');
- the hot path of a function starts at its entry and follows, from each block, the most executed successor
  not on the path yet, until a block without successors (or only visited ones): the most frequent
  entry-to-exit path when branches are independent, which block counts alone cannot tell apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stitchopt.hotpath.blocks import FunctionBlocks, ProgramBlocks

DEFAULT_SHARE = 0.9


def covering(values: Sequence[float] | np.ndarray, share: float = DEFAULT_SHARE) -> np.ndarray:
    """A mask of the fewest items whose values add up to `share` of the total (none when the total is 0)."""
    array = np.asarray(values, dtype=np.float64)
    mask = np.zeros(len(array), dtype=bool)
    total = array.sum()
    if total <= 0:
        return mask
    order = np.argsort(-array, kind="stable")
    covered = np.cumsum(array[order])
    needed = int(np.searchsorted(covered, share * total - 1e-9 * total)) + 1
    mask[order[:needed]] = True
    return mask


def split_by_function(program: ProgramBlocks, values: np.ndarray) -> list[np.ndarray]:
    """A program-wide per-block array cut back into its functions."""
    sizes = np.cumsum([len(f.labels) for f in program.functions])[:-1]
    return list(np.split(values, sizes))


def measured_counts(program: ProgramBlocks) -> np.ndarray:
    if not program.profiled:
        raise ValueError(f"{program.name} has no profile")
    return np.concatenate([f.counts for f in program.functions if f.counts is not None])


def hot_blocks(program: ProgramBlocks, share: float = DEFAULT_SHARE) -> np.ndarray:
    """The label of every block of the program, in function and layout order."""
    return covering(measured_counts(program), share)


def function_totals(program: ProgramBlocks, values: np.ndarray) -> np.ndarray:
    return np.array([part.sum() for part in split_by_function(program, values)])


def hot_functions(program: ProgramBlocks, share: float = DEFAULT_SHARE) -> list[str]:
    totals = function_totals(program, measured_counts(program))
    mask = covering(totals, share)
    order = np.argsort(-totals, kind="stable")
    return [program.functions[i].name for i in order if mask[i]]


def hot_path(function: FunctionBlocks, counts: Sequence[float]) -> list[int]:
    """Block indices from the entry along the most executed successor, never revisiting a block."""
    path, seen = [0], {0}
    while True:
        options = [s for s in function.successors[path[-1]] if s not in seen]
        if not options:
            return path
        step = max(options, key=lambda s: (counts[s], -s))
        path.append(step)
        seen.add(step)
