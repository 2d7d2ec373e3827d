"""Optimal-transport alignment of two hidden spaces (OTFusion-style), used to initialize a stitching layer.

Each hidden unit is described by its activations over the same programs, z-scored; moving unit i of A onto
unit j of B costs 2 - 2 corr(i, j) (the squared distance of the z-scored activation vectors over the number of
programs). The exact plan (`ot.emd`, uniform weights) matches units one to one when both sides have the same
width; larger problems use the entropic plan (`ot.sinkhorn`). The correlations are accumulated over chunks of
programs, so memory stays under `max_bytes` whatever the number of programs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import ot

EXACT_LIMIT = 2048 * 2048  # units x units above which the entropic plan is used
DEFAULT_MAX_BYTES = 256 * 2**20
_SMOOTHING = 1e-3  # share of the uniform plan mixed in, so that the map has full rank


@dataclass(frozen=True)
class Alignment:
    plan: np.ndarray  # source units x target units, sums to 1
    cost: np.ndarray  # same shape: 2 - 2 correlation
    method: str  # "emd" or "sinkhorn"

    @property
    def transport_cost(self) -> float:
        return float((self.plan * self.cost).sum())


def unit_correlations(h_source: np.ndarray, h_target: np.ndarray, max_bytes: int = DEFAULT_MAX_BYTES) -> np.ndarray:
    """corr(source unit i, target unit j) over programs (rows), a constant unit correlating 0 with all."""
    if len(h_source) != len(h_target) or len(h_source) < 2:
        raise ValueError("alignment needs the hidden vectors of the same programs (at least 2) from both experts")
    source_mean, target_mean = h_source.mean(axis=0), h_target.mean(axis=0)
    source_std, target_std = _std(h_source), _std(h_target)
    rows = max(1, max_bytes // (8 * 2 * (h_source.shape[1] + h_target.shape[1])))
    total = np.zeros((h_source.shape[1], h_target.shape[1]))
    for start in range(0, len(h_source), rows):
        a = (h_source[start : start + rows] - source_mean) / source_std
        b = (h_target[start : start + rows] - target_mean) / target_std
        total += a.T @ b
    return total / len(h_source)


def align(
    h_source: np.ndarray,
    h_target: np.ndarray,
    method: str = "auto",
    reg: float = 0.05,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Alignment:
    """The transport plan between the two experts' hidden units, from their activations on the same programs."""
    cost = np.clip(2.0 - 2.0 * unit_correlations(h_source, h_target, max_bytes), 0.0, 4.0)
    source_units, target_units = cost.shape
    if method == "auto":
        method = "emd" if source_units * target_units <= EXACT_LIMIT else "sinkhorn"
    a, b = np.full(source_units, 1.0 / source_units), np.full(target_units, 1.0 / target_units)
    if method == "emd":
        plan = ot.emd(a, b, cost)
    elif method == "sinkhorn":
        plan = ot.sinkhorn(a, b, cost, reg)
    else:
        raise ValueError(f"unknown alignment method {method!r}: use emd, sinkhorn or auto")
    return Alignment(np.asarray(plan, dtype=np.float64), cost, method)


def transport_map(alignment: Alignment, h_source: np.ndarray, h_target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A stitching layer's (W, b) from a plan: each target unit becomes the plan-weighted average of the source
    units sent to it, rescaled from the source units' spread to its own (a dead target unit stays constant). A
    little of the uniform plan is mixed in and dead source units count with unit spread, so no column of a
    live unit is zero."""
    plan = (1 - _SMOOTHING) * alignment.plan + _SMOOTHING / alignment.plan.size
    weights = plan / plan.sum(axis=0, keepdims=True)  # columns sum to 1
    weight = weights / _std(h_source)[:, None] * h_target.std(axis=0)[None, :]
    return weight, h_target.mean(axis=0) - h_source.mean(axis=0) @ weight


def _std(h: np.ndarray) -> np.ndarray:
    std = h.std(axis=0)
    return np.where(std > 1e-8, std, 1.0)
