"""A chooser for static mode with the -Oz backup: the list that gained most on the training programs nearest to
this one, counting only gains.

With the backup a list that makes a program larger costs nothing (-Oz is kept), so what a list is worth to a
program is its gain alone, `log(min(ratio, 1))`. The regression ranker and the softmax chooser learn sizes with
their losses, which steers them to lists that are safe on average and leaves the best single list the winner of
cross-validation; averaging the gains of the k nearest training programs (Euclidean distance on the standardized
features, each neighbour weighing the same) keeps a list that shrinks programs of this kind even when it grows
others. The average is shrunk toward each list's mean gain over all training programs, as the ranker's is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stitchopt.models.covering import cover_order

NEIGHBOUR_COUNTS = (5, 10, 20, 40)  # the grids package-grouped cross-validation chooses from
NEIGHBOUR_SHRINKS = (0.5, 1.0)


def backup_gains(ratios: np.ndarray) -> np.ndarray:
    """programs x lists: each list's log size ratio to -Oz where it is smaller, else 0 (failed lists too)."""
    finite = np.where(np.isfinite(ratios), ratios, 1.0)
    return np.asarray(np.log(np.clip(finite, 1e-9, 1.0)), dtype=np.float64)


def shrunk_mean(values: np.ndarray, nearest: np.ndarray, shrink: float) -> np.ndarray:
    """programs x lists: each program's mean of `values` (training programs x lists) over its `nearest` rows,
    weight `shrink`, and over all training programs, weight 1 - `shrink`."""
    return np.asarray(shrink * values[nearest].mean(axis=1) + (1.0 - shrink) * values.mean(axis=0))


@dataclass
class NeighbourChooser:
    neighbors: int = 10
    shrink: float = 0.5  # weight of the neighbours' mean; 1 - shrink for each list's mean over all programs
    train_features: np.ndarray | None = None  # programs x d, standardized
    train_gains: np.ndarray | None = None  # programs x lists, `backup_gains`

    def fit(self, features: np.ndarray, ratios: np.ndarray) -> NeighbourChooser:
        """`features`: programs x d, standardized; `ratios`: programs x lists, size over -Oz (inf: failed).
        Stored as float32 values, which is what a saved model reads back."""
        self.train_features = features.astype(np.float32).astype(np.float64)
        self.train_gains = backup_gains(ratios).astype(np.float32).astype(np.float64)
        return self

    def gains(self, features: np.ndarray) -> np.ndarray:
        """programs x lists: expected log gain over -Oz with the backup (0: none expected)."""
        return self._gains(self.nearest(features))

    def order(self, features: np.ndarray) -> np.ndarray:
        """programs x (lists + 1), lowest tried first, -Oz last: the list with the largest expected gain (static's
        choice), then the lists in `cover`'s order over the neighbours (weight `shrink`) and all training
        programs, then the rest by expected gain; -Oz first where no list is expected to gain."""
        assert self.train_gains is not None
        nearest = self.nearest(features)
        gains = self._gains(nearest)
        order = np.empty((len(gains), gains.shape[1] + 1))
        for row, (expected, near) in enumerate(zip(gains, nearest, strict=True)):
            by_gain = [int(j) for j in np.argsort(expected, kind="stable")]
            tried = cover_order(by_gain, [(self.shrink, self.train_gains[near]), (1.0 - self.shrink, self.train_gains)])
            order[row, tried] = np.arange(len(tried))
            order[row, -1] = -np.inf if expected.min() >= 0 else len(tried)
        return order

    def nearest(self, features: np.ndarray) -> np.ndarray:
        """programs x k: the training programs nearest to each, nearest first (ties: the earlier)."""
        assert self.train_features is not None, "fit the chooser first"
        distances = np.zeros((len(features), len(self.train_features)))
        for column in range(features.shape[1]):  # summed feature by feature, as the clang plugin does
            distances += (features[:, column, None] - self.train_features[None, :, column]) ** 2
        k = min(self.neighbors, len(self.train_features))
        return np.argsort(distances, axis=1, kind="stable")[:, :k]

    def _gains(self, nearest: np.ndarray) -> np.ndarray:
        assert self.train_gains is not None, "fit the chooser first"
        return shrunk_mean(self.train_gains, nearest, self.shrink)

    def restricted_to(self, keep: list[int]) -> NeighbourChooser:
        """The same chooser over lists `keep` (in that order) and -Oz."""
        assert self.train_gains is not None
        return NeighbourChooser(self.neighbors, self.shrink, self.train_features, self.train_gains[:, keep])
