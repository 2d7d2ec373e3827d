"""Stitched ensembles: k experts read the program each their own way; every hidden vector is stitched into the
receiving expert's hidden space, the stitched vectors are averaged, and the receiver's head predicts.

Only the stitching layers train (jointly, on the ensemble's task loss); the experts and the head stay frozen.
Each layer starts from its closed-form least-squares map (or its optimal-transport map), so the untrained
ensemble is already the average of the stitched pairs and training only has to make them complementary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import torch
from torch import nn

from stitchopt.stitching.alignment import align, transport_map
from stitchopt.stitching.experts import Expert, Inputs, Loss, TrainConfig, TrainResult, fit, hidden
from stitchopt.stitching.layers import StitchingLayer, least_squares


class StitchedEnsemble(nn.Module):
    """`members[0]` is the receiver (its own hidden vector enters unchanged); inputs are one batch per member."""

    def __init__(self, members: Sequence[Expert], layers: Sequence[StitchingLayer]) -> None:
        super().__init__()
        if len(layers) != len(members) - 1:
            raise ValueError("an ensemble needs one stitching layer per member after the receiver")
        self.members = nn.ModuleList(members)
        self.layers = nn.ModuleList(layers)

    def experts(self) -> list[Expert]:
        return [cast(Expert, member) for member in self.members]

    def forward(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        receiver, *others = self.experts()
        vectors = [receiver.encoder(inputs[0])]
        vectors += [layer(e.encoder(x)) for e, layer, x in zip(others, self.layers, inputs[1:], strict=True)]
        out: torch.Tensor = receiver.head(torch.stack(vectors).mean(dim=0))
        return out

    def train(self, mode: bool = True) -> StitchedEnsemble:
        super().train(mode)
        self.members.eval()  # frozen experts never use dropout
        return self


def initial_layer(
    source: Expert, target: Expert, source_inputs: Inputs, target_inputs: Inputs, init: str
) -> StitchingLayer:
    """A stitching layer set from the two experts' hidden vectors on the same (training) programs:
    `lstsq` (closed form), `ot` (transport map) or `random` (PyTorch's default initialization)."""
    layer = StitchingLayer(source.hidden_size, target.hidden_size)
    if init == "random":
        return layer
    h_source, h_target = hidden(source, source_inputs), hidden(target, target_inputs)
    if init == "lstsq":
        return layer.set(*least_squares(h_source, h_target))
    if init == "ot":
        return layer.set(*transport_map(align(h_source, h_target), h_source, h_target))
    raise ValueError(f"unknown initialization {init!r}: use lstsq, ot or random")


def stitch_ensemble(
    members: Sequence[Expert],
    inputs: Sequence[torch.Tensor],
    targets: torch.Tensor,
    config: TrainConfig,
    validation: tuple[Sequence[torch.Tensor], torch.Tensor] | None = None,
    init: str = "lstsq",
    loss: Loss = nn.functional.mse_loss,
) -> tuple[StitchedEnsemble, TrainResult]:
    """Stitch `members[1:]` into `members[0]`'s hidden space and train the layers on `loss` (the receiver's
    task loss); `inputs[i]` is member i's batch of the training programs (every member sees the same programs,
    in the same order)."""
    layers = [initial_layer(m, members[0], x, inputs[0], init) for m, x in zip(members[1:], inputs[1:], strict=True)]
    ensemble = StitchedEnsemble(members, layers)
    if not layers:  # the receiver alone: nothing to train
        return ensemble, TrainResult(0, 0, float("nan"), 0.0)
    for member in members:
        member.requires_grad_(False)
    try:
        check: tuple[Inputs, torch.Tensor] | None = (
            None if validation is None else (tuple(validation[0]), validation[1])
        )
        result = fit(ensemble, tuple(inputs), targets, config, check, list(ensemble.layers.parameters()), loss)
    finally:
        for member in members:
            member.requires_grad_(True)
    return ensemble, result
