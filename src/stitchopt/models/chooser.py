"""A chooser trained for the decision static mode makes: which one list (or -Oz) to build for a program.

A regression ranker predicts every list's size and picks the smallest prediction, so its errors decide (the
winner's curse: the list whose error happens to be most negative wins). The chooser instead learns the choice:
a linear softmax over the coreset lists and -Oz, fitted to minimize the expected size of what it picks,
`mean_i sum_j p_ij(x_i) c_ij` with `c_ij` the list's log size ratio to -Oz (0 for -Oz, failures count as
doubling). Where no list is reliably better for programs like this one, -Oz keeps the probability, so static
mode without the backup regresses less often than a regression's top-1. Listwise and cost-sensitive, numpy
only: a few hundred gradient steps on a few hundred programs take well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stitchopt.models.ranker import FAILED_LOG_RATIO

STEPS = 400
LEARNING_RATE = 0.05
PENALTIES = (0.01, 0.1, 1.0)  # the L2 weights package-grouped cross-validation chooses from


def decision_costs(ratios: np.ndarray) -> np.ndarray:
    """programs x (lists + 1): each list's log size ratio to -Oz (failed: doubling) and 0 for -Oz (last)."""
    costs = np.where(np.isfinite(ratios), np.log(np.maximum(ratios, 1e-9)), FAILED_LOG_RATIO)
    return np.hstack([np.minimum(costs, FAILED_LOG_RATIO), np.zeros((ratios.shape[0], 1))])


@dataclass
class SoftmaxChooser:
    penalty: float = 0.01
    weights: np.ndarray | None = None  # (features + 1) x (lists + 1); the last row is the bias, the last column -Oz
    scale: float = 1.0  # costs are divided by it while fitting, so the penalty means the same on any labels

    def fit(self, features: np.ndarray, costs: np.ndarray) -> SoftmaxChooser:
        """`features`: programs x d, standardized; `costs`: `decision_costs` of the programs."""
        design = _design(features)
        self.scale = float(np.std(costs[:, :-1])) or 1.0
        scaled = costs / self.scale
        weights = np.zeros((design.shape[1], costs.shape[1]))
        first, second = np.zeros_like(weights), np.zeros_like(weights)  # Adam's moment estimates
        for step in range(1, STEPS + 1):
            probabilities = _softmax(design @ weights)
            expected = (probabilities * scaled).sum(axis=1, keepdims=True)
            gradient = design.T @ (probabilities * (scaled - expected)) / len(design)
            gradient[:-1] += self.penalty * weights[:-1]
            first = 0.9 * first + 0.1 * gradient
            second = 0.999 * second + 0.001 * gradient**2
            weights -= LEARNING_RATE * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
        self.weights = weights.astype(np.float32).astype(np.float64)  # what a saved model reads back
        return self

    @classmethod
    def constant(cls, preference: np.ndarray, features: int) -> SoftmaxChooser:
        """The same order for every program (the best single list first): bias only, `preference` per choice
        (lists, then -Oz), higher first."""
        weights = np.zeros((features + 1, len(preference)))
        weights[-1] = np.where(np.isfinite(preference), preference, np.nanmin(preference[np.isfinite(preference)]) - 1)
        return cls(0.0, weights.astype(np.float32).astype(np.float64), 1.0)

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """programs x (lists + 1): how likely each choice is the right one; the last column is -Oz."""
        assert self.weights is not None, "fit the chooser first"
        return _softmax(_design(features) @ self.weights)

    def order(self, features: np.ndarray) -> np.ndarray:
        """programs x (lists + 1), lowest tried first: the likeliest right choice first."""
        return -self.probabilities(features)

    def restricted_to(self, keep: list[int]) -> SoftmaxChooser:
        """The same chooser over lists `keep` (in that order) and -Oz."""
        assert self.weights is not None
        return SoftmaxChooser(self.penalty, self.weights[:, [*keep, self.weights.shape[1] - 1]], self.scale)


def _design(features: np.ndarray) -> np.ndarray:
    return np.hstack([features, np.ones((features.shape[0], 1))])


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return np.asarray(shifted / shifted.sum(axis=1, keepdims=True))
