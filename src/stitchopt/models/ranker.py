"""Predict how each coreset list changes a program's size (log ratio to -Oz) from its features, and rank them.

Two small experts, blended: nearest neighbours (programs that look alike respond alike to the same lists; exact
on near-duplicates, which real code has many of) and a ridge regression (smooth, extrapolates to programs unlike
any seen). Both are closed-form, so training takes seconds and inference is a few matrix products.

The blend is then shrunk toward each list's mean over the training programs (`shrink` = 1: no shrinking, 0: the
same ranking for every program, i.e. the best single list). Picking the smallest of ~50 noisy predictions
favours lists whose error happens to be negative (the winner's curse); on the pool labels (pypi-v1.json.gz) the
unshrunk top-1 choice was worse than the best single list, on the label factory's it is better
(docs/flag-tuning.md). The unshrunk prediction still orders the lists that jit mode tries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FAILED_LOG_RATIO = float(np.log(2.0))  # a list that failed counts as doubling the size: never ranked first
_CLIP = 1.0

# The hyper-parameter grid that package-grouped cross-validation chooses from.
NEIGHBORS = (4, 8, 16)
RIDGES = (1.0, 10.0, 100.0)
BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)
SHRINKS = (0.0, 0.25, 0.5, 0.75, 1.0)


def log_ratio_targets(ratios: np.ndarray) -> np.ndarray:
    """Training targets from size ratios to -Oz (inf = failed), clipped so one outlier cannot dominate."""
    targets = np.where(np.isfinite(ratios), np.log(np.maximum(ratios, 1e-9)), FAILED_LOG_RATIO)
    return np.clip(targets, -_CLIP, _CLIP)


def static_choices(predicted: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    """Each program's size ratio to -Oz in static mode with the -Oz backup, from predicted log ratios (programs
    x lists) and the measured ratios: it builds its top list when one is predicted to beat -Oz, and keeps -Oz
    when that is smaller."""
    picked = ratios[np.arange(len(ratios)), predicted.argmin(axis=1)]
    return np.where(predicted.min(axis=1) < 0, np.minimum(picked, 1.0), 1.0)


def geomean_change(ratios: np.ndarray) -> float:
    return float(np.exp(np.log(ratios).mean()) - 1.0)


def static_change(predicted: np.ndarray, ratios: np.ndarray) -> float:
    """Geomean size change vs -Oz of static mode with the -Oz backup (`static_choices`)."""
    return geomean_change(static_choices(predicted, ratios))


def jit_change(predicted: np.ndarray, ratios: np.ndarray, k: int) -> float:
    """Geomean size change vs -Oz of jit mode: the k lists predicted best are built, the smallest (or -Oz) kept."""
    top = np.argsort(predicted, axis=1)[:, :k]
    return geomean_change(np.minimum(np.take_along_axis(ratios, top, axis=1).min(axis=1), 1.0))


@dataclass
class ListRanker:
    neighbors: int = 8
    ridge: float = 10.0
    blend: float = 0.5  # weight of the neighbours; 1 - blend for the ridge regression
    shrink: float = 1.0  # weight of the prediction; 1 - shrink for each list's training mean
    train_features: np.ndarray | None = None
    train_targets: np.ndarray | None = None
    weights: np.ndarray | None = None  # (features + 1) x lists, the last row is the bias

    def fit(self, features: np.ndarray, targets: np.ndarray) -> ListRanker:
        """`features`: programs x d, standardized; `targets`: programs x lists of log ratios to -Oz."""
        self.train_features = _unit_rows(features)
        self.train_targets = targets.astype(np.float64)
        design = np.hstack([features, np.ones((features.shape[0], 1))])
        penalty = self.ridge * np.eye(design.shape[1])
        penalty[-1, -1] = 0.0  # do not shrink the bias
        self.weights = np.linalg.solve(design.T @ design + penalty, design.T @ self.train_targets)
        return self

    def predict(self, features: np.ndarray, shrink: float | None = None) -> np.ndarray:
        """programs x lists predicted log ratios to -Oz (negative: smaller than -Oz); `shrink` overrides the
        fitted one (1: each program's own prediction, which orders the lists jit mode tries)."""
        assert self.train_targets is not None, "fit the ranker first"
        weight = self.shrink if shrink is None else shrink
        blended = self.blend * self._neighbours(features) + (1.0 - self.blend) * self._linear(features)
        shrunk = weight * blended + (1.0 - weight) * self.train_targets.mean(axis=0)
        return np.asarray(shrunk, dtype=np.float64)

    def order(self, features: np.ndarray) -> np.ndarray:
        """programs x (lists + 1), lowest tried first, -Oz last: the static choice (the shrunk prediction's best,
        or -Oz when no list is predicted to beat it) first, then each program's own (unshrunk) predictions."""
        static = self.predict(features)
        order = np.hstack([self.predict(features, shrink=1.0), np.zeros((len(static), 1))])
        order[np.arange(len(order)), np.where(static.min(axis=1) < 0, static.argmin(axis=1), -1)] = -np.inf
        return order

    def _linear(self, features: np.ndarray) -> np.ndarray:
        assert self.weights is not None, "fit the ranker first"
        return np.asarray(np.hstack([features, np.ones((features.shape[0], 1))]) @ self.weights)

    def _neighbours(self, features: np.ndarray) -> np.ndarray:
        assert self.train_features is not None and self.train_targets is not None, "fit the ranker first"
        similarity = _unit_rows(features) @ self.train_features.T  # cosine similarity
        k = min(self.neighbors, similarity.shape[1])
        nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        weights = np.take_along_axis(similarity, nearest, axis=1)
        weights = np.exp((weights - weights.max(axis=1, keepdims=True)) * 20.0)  # sharp, but never one-hot
        weights /= weights.sum(axis=1, keepdims=True)
        return np.asarray(np.einsum("ik,ikl->il", weights, self.train_targets[nearest]), dtype=np.float64)

    def restricted_to(self, keep: list[int]) -> ListRanker:
        """The same ranker predicting only lists `keep` (in that order)."""
        assert self.weights is not None and self.train_targets is not None
        return ListRanker(
            self.neighbors,
            self.ridge,
            self.blend,
            self.shrink,
            self.train_features,
            self.train_targets[:, keep],
            self.weights[:, keep],
        )

    def arrays(self) -> dict[str, np.ndarray]:
        assert self.weights is not None and self.train_features is not None and self.train_targets is not None
        return {"train_features": self.train_features, "train_targets": self.train_targets, "weights": self.weights}

    @classmethod
    def from_arrays(
        cls, arrays: dict[str, np.ndarray], neighbors: int, ridge: float, blend: float, shrink: float = 1.0
    ) -> ListRanker:
        """`shrink` defaults to 1 for model files made before it existed."""
        return cls(
            neighbors, ridge, blend, shrink, arrays["train_features"], arrays["train_targets"], arrays["weights"]
        )


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.where(norms == 0, 1.0, norms), dtype=np.float64)
