"""Predict how each coreset list changes a program's size (log ratio to -Oz) from its features, and rank them.

Two small experts, blended: nearest neighbours (programs that look alike respond alike to the same lists; exact
on near-duplicates, which real code has many of) and a ridge regression (smooth, extrapolates to programs unlike
any seen). Both are closed-form, so training takes seconds and inference is a few matrix products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FAILED_LOG_RATIO = float(np.log(2.0))  # a list that failed counts as doubling the size: never ranked first
_CLIP = 1.0


def log_ratio_targets(ratios: np.ndarray) -> np.ndarray:
    """Training targets from size ratios to -Oz (inf = failed), clipped so one outlier cannot dominate."""
    targets = np.where(np.isfinite(ratios), np.log(np.maximum(ratios, 1e-9)), FAILED_LOG_RATIO)
    return np.clip(targets, -_CLIP, _CLIP)


@dataclass
class ListRanker:
    neighbors: int = 8
    ridge: float = 10.0
    blend: float = 0.5  # weight of the neighbours; 1 - blend for the ridge regression
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

    def predict(self, features: np.ndarray) -> np.ndarray:
        """programs x lists predicted log ratios to -Oz (negative: smaller than -Oz)."""
        blended = self.blend * self._neighbours(features) + (1.0 - self.blend) * self._linear(features)
        return np.asarray(blended, dtype=np.float64)

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
            self.neighbors, self.ridge, self.blend, self.train_features, self.train_targets[:, keep],
            self.weights[:, keep],
        )  # fmt: skip

    def arrays(self) -> dict[str, np.ndarray]:
        assert self.weights is not None and self.train_features is not None and self.train_targets is not None
        return {"train_features": self.train_features, "train_targets": self.train_targets, "weights": self.weights}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], neighbors: int, ridge: float, blend: float) -> ListRanker:
        return cls(neighbors, ridge, blend, arrays["train_features"], arrays["train_targets"], arrays["weights"])


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.where(norms == 0, 1.0, norms), dtype=np.float64)
