"""Stitching layers: an affine map from expert A's hidden space into expert B's, so that A's encoder can feed
B's head. Both experts stay frozen; only the map is fitted, either in closed form (least squares onto B's own
hidden vectors for the same programs) or by Adam on the task loss through B's head, optionally starting from
an optimal-transport alignment of the two hidden spaces (`alignment.py`).

The *stitching penalty* (loss of the stitched model minus B's own loss) says how much of what B needs A's
hidden space already holds.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from stitchopt.stitching.experts import Expert, Loss, TrainConfig, TrainResult, fit


class StitchingLayer(nn.Module):
    """h_B ~ h_A @ weight + bias, as a torch module so it can be trained through a frozen head."""

    def __init__(self, source: int, target: int) -> None:
        super().__init__()
        self.linear = nn.Linear(source, target)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.linear(h)
        return out

    def set(self, weight: np.ndarray, bias: np.ndarray) -> StitchingLayer:
        """Load a `source x target` matrix and a bias (closed form or OT initialization)."""
        with torch.no_grad():
            self.linear.weight.copy_(torch.as_tensor(weight.T, dtype=torch.float32))
            self.linear.bias.copy_(torch.as_tensor(bias, dtype=torch.float32))
        return self


class Stitched(nn.Module):
    """A's encoder -> stitching layer -> B's head: the model whose loss gives the stitching penalty."""

    def __init__(self, source: Expert, layer: StitchingLayer, target: Expert) -> None:
        super().__init__()
        self.source, self.layer, self.target = source, layer, target

    def train(self, mode: bool = True) -> Stitched:
        """Only the layer trains: the frozen experts stay in evaluation mode (no dropout)."""
        super().train(mode)
        self.source.eval()
        self.target.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.target.head(self.layer(self.source.encoder(x)))
        return out


def least_squares(h_source: np.ndarray, h_target: np.ndarray, ridge: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """The affine map minimizing ||h_source W + b - h_target||^2 + ridge ||W||^2 (ridge keeps it solvable
    when A has dead or duplicate units); returns (W, b)."""
    mean_s, mean_t = h_source.mean(axis=0), h_target.mean(axis=0)
    centered = h_source - mean_s
    gram = centered.T @ centered + ridge * len(h_source) * np.eye(h_source.shape[1])
    weight = np.linalg.solve(gram, centered.T @ (h_target - mean_t))
    return weight, mean_t - mean_s @ weight


def train_layer(
    stitched: Stitched,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    config: TrainConfig,
    validation: tuple[torch.Tensor, torch.Tensor] | None = None,
    loss: Loss = nn.functional.mse_loss,
) -> TrainResult:
    """Adam on the stitched model's task loss, updating only the stitching layer (both experts frozen)."""
    for expert in (stitched.source, stitched.target):
        expert.requires_grad_(False)
    try:
        return fit(stitched, inputs, targets, config, validation, list(stitched.layer.parameters()), loss)
    finally:
        for expert in (stitched.source, stitched.target):
            expert.requires_grad_(True)
