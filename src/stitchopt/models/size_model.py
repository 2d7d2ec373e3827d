"""Compiler emulation: predict object size and IR instruction count before and after a pass list, no compile.

Sizes span four orders of magnitude and scale with the amount of code, so the model works in logs: a ridge
regression from standardized (log) features to `log(size)` for each target (unoptimized build, -Oz, -O3, each
coreset list). MAPE is reported on the original scale, as LLM Compiler reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class SizeModel:
    targets: tuple[str, ...] = ()  # e.g. "size:O0", "instructions:O0", "size:list3"
    ridge: float = 1.0
    weights: np.ndarray | None = None  # (features + 1) x targets

    def fit(self, features: np.ndarray, values: np.ndarray) -> SizeModel:
        """`values`: programs x targets, positive; NaN where unknown (a failed list), ignored per target."""
        design = np.hstack([features, np.ones((features.shape[0], 1))])
        penalty = self.ridge * np.eye(design.shape[1])
        penalty[-1, -1] = 0.0
        columns = []
        for column in values.T:
            known = np.isfinite(column) & (column > 0)
            rows = design[known]
            columns.append(np.linalg.solve(rows.T @ rows + penalty, rows.T @ np.log(column[known])))
        self.weights = np.stack(columns, axis=1)
        return self

    def predict(self, features: np.ndarray) -> np.ndarray:
        """programs x targets, on the original scale."""
        assert self.weights is not None, "fit the size model first"
        logs = np.hstack([features, np.ones((features.shape[0], 1))]) @ self.weights
        return np.asarray(np.exp(np.clip(logs, -50, 50)), dtype=np.float64)

    def restricted_to(self, keep: list[int]) -> SizeModel:
        """Only the coreset lists `keep` (renumbered in that order); the baseline targets stay."""
        assert self.weights is not None
        columns = [i for i, t in enumerate(self.targets) if not t.startswith(LIST_TARGET_PREFIX)]
        names = [self.targets[i] for i in columns]
        for new, old in enumerate(keep):
            columns.append(self.targets.index(list_target(old)))
            names.append(list_target(new))
        return SizeModel(tuple(names), self.ridge, self.weights[:, columns])


LIST_TARGET_PREFIX = "size:list"


def list_target(index: int) -> str:
    """The target name of coreset list `index`."""
    return f"{LIST_TARGET_PREFIX}{index}"


def mape(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Mean absolute percentage error over the known (finite, positive) actual values."""
    known = np.isfinite(actual) & (actual > 0)
    return float(np.mean(np.abs(predicted[known] - actual[known]) / actual[known])) if known.any() else float("nan")
