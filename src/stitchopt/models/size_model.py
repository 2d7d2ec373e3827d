"""Compiler emulation: predict object size and IR instruction count before and after a pass list, no compile.

Two regressions per target, and cross-validation picks one: a linear model on the raw counts fitted for
relative error (object bytes are close to a sum of bytes per instruction kind plus data, so this is the natural
model before optimization), and a ridge regression in logs on the standardized features (better when
optimization shrinks programs by amounts that depend on their shape). MAPE is reported on the original scale,
as LLM Compiler reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LIST_TARGET_PREFIX = "size:list"
KINDS = ("linear", "log")
LINEAR_RIDGE = 1e-3  # relative to the mean diagonal of the weighted Gram matrix: 188 counts, few programs


def list_target(index: int) -> str:
    """The target name of coreset list `index`."""
    return f"{LIST_TARGET_PREFIX}{index}"


def size_targets(lists: int) -> tuple[str, ...]:
    """The targets of a model with `lists` coreset lists: before optimization (-O0), after -Oz and -O3, and
    after each list."""
    return (
        "size:O0",
        "instructions:O0",
        "size:Oz",
        "instructions:Oz",
        "size:O3",
        *(list_target(i) for i in range(lists)),
    )


@dataclass
class SizeModel:
    targets: tuple[str, ...] = ()  # e.g. "size:O0", "instructions:O0", "size:list3"
    ridge: float = 1.0  # of the log model
    kinds: tuple[str, ...] = ()  # per target, "linear" or "log"
    linear_weights: np.ndarray | None = None  # (raw features + 1) x targets, columns already unscaled
    log_weights: np.ndarray | None = None  # (standardized features + 1) x targets

    def fit(self, features: np.ndarray, raw: np.ndarray, values: np.ndarray, folds: np.ndarray) -> SizeModel:
        """`features` standardized, `raw` the same rows unstandardized; `values`: programs x targets, positive,
        NaN where unknown (a failed list); `folds`: a group per program for cross-validation."""
        linear, log, kinds = [], [], []
        for column in values.T:
            known = np.isfinite(column) & (column > 0)
            errors = {kind: self._cv_error(kind, features, raw, column, known, folds) for kind in KINDS}
            kinds.append(min(KINDS, key=lambda kind: errors[kind]))
            linear.append(_fit_linear(raw[known], column[known]))
            log.append(_fit_log(features[known], column[known], self.ridge))
        self.kinds = tuple(kinds)
        self.linear_weights = np.stack(linear, axis=1)
        self.log_weights = np.stack(log, axis=1)
        return self

    def predict(self, features: np.ndarray, raw: np.ndarray) -> np.ndarray:
        """programs x targets, on the original scale."""
        assert self.linear_weights is not None and self.log_weights is not None, "fit the size model first"
        linear = _design(raw) @ self.linear_weights
        log = np.exp(np.clip(_design(features) @ self.log_weights, -50, 50))
        chosen = np.array([kind == "linear" for kind in self.kinds])
        return np.asarray(np.where(chosen, np.maximum(linear, 1.0), log), dtype=np.float64)

    def restricted_to(self, keep: list[int]) -> SizeModel:
        """Only the coreset lists `keep` (renumbered in that order); the baseline targets stay."""
        assert self.linear_weights is not None and self.log_weights is not None
        columns = [i for i, t in enumerate(self.targets) if not t.startswith(LIST_TARGET_PREFIX)]
        names = [self.targets[i] for i in columns]
        for new, old in enumerate(keep):
            columns.append(self.targets.index(list_target(old)))
            names.append(list_target(new))
        return SizeModel(
            tuple(names),
            self.ridge,
            tuple(self.kinds[i] for i in columns),
            self.linear_weights[:, columns],
            self.log_weights[:, columns],
        )

    def _cv_error(
        self,
        kind: str,
        features: np.ndarray,
        raw: np.ndarray,
        column: np.ndarray,
        known: np.ndarray,
        folds: np.ndarray,
    ) -> float:
        predicted, actual = [], []
        for fold in np.unique(folds[known]):
            test = known & (folds == fold)
            train = known & (folds != fold)
            if train.sum() < 2:
                continue
            if kind == "linear":
                guess = _design(raw[test]) @ _fit_linear(raw[train], column[train])
            else:
                guess = np.exp(
                    np.clip(_design(features[test]) @ _fit_log(features[train], column[train], self.ridge), -50, 50)
                )
            predicted.append(guess)
            actual.append(column[test])
        if not predicted:
            return float("inf") if kind == "linear" else 0.0
        return mape(np.concatenate(predicted), np.concatenate(actual))


def _design(matrix: np.ndarray) -> np.ndarray:
    return np.hstack([matrix, np.ones((matrix.shape[0], 1))])


def _fit_linear(raw: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Least relative squared error: rows divided by their value, columns scaled, lightly ridged."""
    design = _design(raw)
    scale = np.abs(design).max(axis=0)
    scale[scale == 0] = 1.0
    weighted = design / scale / values[:, None]
    gram = weighted.T @ weighted
    gram += LINEAR_RIDGE * np.trace(gram) / len(gram) * np.eye(len(gram))
    return np.asarray(np.linalg.solve(gram, weighted.T @ np.ones(len(values))) / scale, dtype=np.float64)


def _fit_log(features: np.ndarray, values: np.ndarray, ridge: float) -> np.ndarray:
    design = _design(features)
    penalty = ridge * np.eye(design.shape[1])
    penalty[-1, -1] = 0.0  # do not shrink the bias
    return np.asarray(np.linalg.solve(design.T @ design + penalty, design.T @ np.log(values)), dtype=np.float64)


def mape(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Mean absolute percentage error over the known (finite, positive) actual values."""
    known = np.isfinite(actual) & (actual > 0)
    return float(np.mean(np.abs(predicted[known] - actual[known]) / actual[known])) if known.any() else float("nan")
