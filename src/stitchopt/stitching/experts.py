"""Experts: one small network per program representation, encoder -> hidden vector -> head.

Each expert reads the program its own way (count vectors through an MLP, IR token sequences through a
convolution) and predicts the log size ratio to -Oz of every coreset list, like the closed-form ranker. The
hidden vector is what stitching layers connect: the encoder is the part of an expert that a stitched model
borrows, the head the part that receives.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

DEFAULT_HIDDEN = 256
Inputs = torch.Tensor | tuple[torch.Tensor, ...]  # one representation's batch, or one per stitched expert
Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (outputs, targets) -> mean loss of the batch


@dataclass(frozen=True)
class TrainConfig:
    """Adam on the task loss (`fit`'s `loss`); `patience` epochs without a better validation loss stop it."""

    epochs: int = 300
    lr: float = 1e-3
    batch: int = 32
    weight_decay: float = 1e-4
    patience: int = 30
    seed: int = 0


class CountEncoder(nn.Module):
    """Standardized feature counts -> hidden: two ReLU layers."""

    def __init__(self, inputs: int, hidden: int = DEFAULT_HIDDEN, dropout: float = 0.1) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(inputs, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, hidden), nn.ReLU()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.layers(x)
        return out


class SequenceEncoder(nn.Module):
    """Token ids (0 = padding) -> hidden: embedding, one strided convolution (windows of 8 tokens, step 4,
    cheap on a CPU for 4,096-token modules), mean and max pooling over the windows that start on a real
    token, a ReLU layer. Padding never changes the output: a batch pads short modules to its longest."""

    KERNEL, STRIDE = 8, 4

    def __init__(self, vocabulary: int, hidden: int = DEFAULT_HIDDEN, embedding: int = 32, channels: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocabulary, embedding, padding_idx=0)
        self.conv = nn.Conv1d(embedding, channels, kernel_size=self.KERNEL, stride=self.STRIDE)
        self.out = nn.Sequential(nn.Linear(2 * channels, hidden), nn.ReLU())

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        # every window that starts on a real token must exist, even where it runs past the last one: pad every
        # sequence by KERNEL - 1, however long its batch, so a module alone and in a longer batch read the same
        extra = self.KERNEL - 1
        tokens = nn.functional.pad(tokens, (0, extra))
        windows = torch.relu(self.conv(self.embed(tokens).transpose(1, 2)))  # batch x channels x positions
        starts = tokens[:, : self.STRIDE * windows.shape[2] : self.STRIDE]
        real = (starts != 0).float().unsqueeze(1)  # batch x 1 x positions
        mean = (windows * real).sum(dim=2) / real.sum(dim=2).clamp(min=1.0)
        peak = (windows * real).amax(dim=2)
        out: torch.Tensor = self.out(torch.cat([mean, peak], dim=1))
        return out


class Expert(nn.Module):
    """encoder -> hidden -> linear head: one predicted log ratio to -Oz per coreset list."""

    def __init__(self, name: str, encoder: nn.Module, hidden: int, lists: int) -> None:
        super().__init__()
        self.name = name
        self.encoder = encoder
        self.hidden_size = hidden
        self.head = nn.Linear(hidden, lists)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(self.encoder(x))
        return out


def count_expert(name: str, inputs: int, lists: int, hidden: int = DEFAULT_HIDDEN, seed: int = 0) -> Expert:
    torch.manual_seed(seed)
    return Expert(name, CountEncoder(inputs, hidden), hidden, lists)


def sequence_expert(name: str, vocabulary: int, lists: int, hidden: int = DEFAULT_HIDDEN, seed: int = 0) -> Expert:
    torch.manual_seed(seed)
    return Expert(name, SequenceEncoder(vocabulary, hidden), hidden, lists)


@dataclass(frozen=True)
class TrainResult:
    epochs: int  # run before stopping
    best_epoch: int
    validation_loss: float
    seconds: float


def fit(
    model: nn.Module,
    inputs: Inputs,
    targets: torch.Tensor,
    config: TrainConfig,
    validation: tuple[Inputs, torch.Tensor] | None = None,
    parameters: list[nn.Parameter] | None = None,
    loss: Loss = nn.functional.mse_loss,
) -> TrainResult:
    """Train `parameters` (default: all of `model`'s) by Adam on `loss` (default: the mean squared error of the
    experts' log ratios; a detector passes its classification loss), batches shuffled by `config.seed`; keep
    the weights of the epoch with the lowest validation loss (training loss without a validation set)."""
    start = time.monotonic()
    trained = parameters if parameters is not None else list(model.parameters())
    optimizer = torch.optim.Adam(trained, lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator().manual_seed(config.seed)
    best_loss, best_epoch, best_state = float("inf"), 0, _state(model)
    epoch = 0
    for epoch in range(1, config.epochs + 1):
        model.train()
        order = torch.randperm(len(targets), generator=generator)
        for batch in (order[i : i + config.batch] for i in range(0, len(order), config.batch)):
            optimizer.zero_grad()
            batch_loss = loss(model(take(inputs, batch)), targets[batch])
            batch_loss.backward()  # type: ignore[no-untyped-call]
            optimizer.step()
        check_inputs, check_targets = validation if validation is not None else (inputs, targets)
        current = loss_on(model, check_inputs, check_targets, loss)
        if current < best_loss - 1e-6:
            best_loss, best_epoch, best_state = current, epoch, _state(model)
        elif epoch - best_epoch >= config.patience:
            break
    model.load_state_dict(best_state)
    model.eval()
    return TrainResult(epoch, best_epoch, best_loss, time.monotonic() - start)


def loss_on(model: nn.Module, inputs: Inputs, targets: torch.Tensor, loss: Loss = nn.functional.mse_loss) -> float:
    """`loss` of the model's outputs in evaluation mode (default: mean squared error of the log ratios)."""
    return float(loss(predict(model, inputs), targets))


def predict(model: nn.Module, inputs: Inputs, batch: int = 256) -> torch.Tensor:
    """Outputs in evaluation mode (no dropout), in batches so that long sequences fit in memory."""
    model.eval()
    rows = count(inputs)
    with torch.no_grad():
        chunks = [model(take(inputs, torch.arange(i, min(i + batch, rows)))) for i in range(0, rows, batch)]
    return torch.cat(chunks) if chunks else torch.empty(0)


def take(inputs: Inputs, index: torch.Tensor) -> Inputs:
    """The rows `index` of a batch, of each representation's batch for a tuple."""
    return inputs[index] if isinstance(inputs, torch.Tensor) else tuple(x[index] for x in inputs)


def count(inputs: Inputs) -> int:
    return len(inputs) if isinstance(inputs, torch.Tensor) else len(inputs[0])


def hidden(expert: Expert, inputs: Inputs, batch: int = 256) -> np.ndarray:
    """The expert's hidden vectors (programs x hidden) as float64, for alignment and least squares."""
    return np.asarray(predict(expert.encoder, inputs, batch).double().numpy())


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
