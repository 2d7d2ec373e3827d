"""What a model knows about its `fast` use (the clang plugin's one-pipeline policy): the margin below which its
static choice is built instead of -Oz, and what that margin gave on held-out folds (`learning.fast_margin`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FastPolicy:
    """`margin` in log ratio to -Oz (inf: always -Oz); held-out `change` (geomean size vs -Oz), share of units
    `built` with a list and share `grown` larger than -Oz."""

    margin: float
    change: float
    built: float
    grown: float

    def to_dict(self) -> dict[str, float | None]:
        return {
            "margin": None if math.isinf(self.margin) else self.margin,
            "change": self.change,
            "built": self.built,
            "grown": self.grown,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FastPolicy:
        margin = data["margin"]
        return cls(math.inf if margin is None else float(margin), data["change"], data["built"], data["grown"])
