"""What every kind of flag-tuning model offers the modes (static, jit, hybrid): its lists and a ranking."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from stitchopt.core import IRModule
from stitchopt.passes.pipeline import PassNames
from stitchopt.toolchain.discovery import Toolchain

OZ = "-Oz"
Proposer = Callable[[IRModule], "PassNames | None"]  # one list for a module, or None (nothing usable)


@dataclass(frozen=True)
class RankedList:
    """One candidate: `passes` is None for -Oz itself. Ratios are predicted object size over -Oz's."""

    passes: PassNames | None
    predicted_ratio: float
    predicted_size: float | None = None

    @property
    def label(self) -> str:
        return OZ if self.passes is None else ",".join(self.passes)


class ListModel(Protocol):
    """What the modes (static, jit, hybrid) need of a model: its lists, a ranking, and an identity for caching.
    The shipped `FlagModel` and a stitched model (`stitching.model.StitchedModel`) both are one."""

    @property
    def lists(self) -> tuple[PassNames, ...]: ...

    @property
    def identity(self) -> str: ...

    def rank(self, toolchain: Toolchain, module: IRModule) -> list[RankedList]: ...
