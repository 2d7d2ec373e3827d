"""The modes, defined once: what each builds for a unit, its defaults, and which front ends offer it.

Plain data and no imports of the modes' own modules: `stitchopt-cc` reads this table on every compile, and a
cache hit must not pay for a search's modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stitchopt.errors import InputError


@dataclass(frozen=True)
class Mode:
    """`k`: the model's top lists it builds (jit, hybrid) or seeds its search with (search, tune); None for
    static, which builds the top list alone. `budget`: a searching mode's evaluations. `optimize` and `build`:
    whether `stitchopt optimize` and `stitchopt-cc` offer it."""

    name: str
    k: int | None = None
    budget: int | None = None
    optimize: bool = True
    build: bool = True

    @property
    def searches(self) -> bool:
        """Whether the mode searches each unit (a budget of evaluations) rather than building ranked lists."""
        return self.budget is not None

    def tried(self, k: int) -> int:
        """How many of the model's top lists the mode builds besides -Oz: a searching mode also builds the
        model's top list, so that it is never worse than static."""
        return max(1, k) if self.k is not None and not self.searches else 1


RANKED_K = 5  # jit's and hybrid's lists, tune's seeds
SEARCH_K = 40  # search's seeds: chosen on the validation split (results.md, "Seeded search's seeds")
SEARCH_BUDGET = 50
TUNE_BUDGET = 100

MODES = {
    mode.name: mode
    for mode in (
        Mode("static"),
        Mode("jit", k=RANKED_K),
        Mode("tune", k=RANKED_K, budget=TUNE_BUDGET, optimize=False),  # release builds: the autotuner, validated
        Mode("search", k=SEARCH_K, budget=SEARCH_BUDGET),  # most of the autotuner's gain in tens of compilations
        Mode("hybrid", k=RANKED_K, build=False),  # hot functions jit-style, the rest static: needs a profile
    )
}
OPTIMIZE_MODES = tuple(name for name, mode in MODES.items() if mode.optimize)
BUILD_MODES = tuple(name for name, mode in MODES.items() if mode.build)


def mode_named(name: str, offered: Sequence[str], *, setting: str = "") -> Mode:
    """The mode called `name` among those a front end offers; `setting` names where a bad name came from
    (an environment variable), else it is an unknown `--mode`."""
    if name not in offered:
        where = f"{setting}={name!r}" if setting else f"unknown mode {name!r}"
        raise InputError(f"{where}: use one of {', '.join(offered)}")
    return MODES[name]


def default_k(name: str) -> int:
    """The mode's own `k`; static's is jit's (a front end takes one `k` for every mode)."""
    return MODES[name].k or RANKED_K
