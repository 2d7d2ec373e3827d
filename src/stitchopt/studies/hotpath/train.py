"""Training the hot-block LSTM with PyTorch (the `stitch` extra): per-block binary cross-entropy over padded
batches of functions, Adam, early stopping on a validation set; deterministic given the seed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from stitchopt.hotpath.blocks import FEATURES, ProgramBlocks
from stitchopt.hotpath.evaluate import best_threshold
from stitchopt.hotpath.labels import DEFAULT_SHARE, hot_blocks, split_by_function
from stitchopt.hotpath.model import HotPathModel


@dataclass(frozen=True)
class LSTMConfig:
    hidden: int = 32
    epochs: int = 60
    batch: int = 32
    learning_rate: float = 3e-3
    patience: int = 10
    seed: int = 0
    share: float = DEFAULT_SHARE


class _Net(nn.Module):
    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, 1)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        padded, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        logits: torch.Tensor = self.head(padded).squeeze(-1)
        return logits


def function_examples(programs: Sequence[ProgramBlocks], share: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """(features, hot labels) per function of profiled programs."""
    examples = []
    for program in programs:
        labels = split_by_function(program, hot_blocks(program, share).astype(np.float64))
        examples += [(f.features, y) for f, y in zip(program.functions, labels, strict=True) if len(y)]
    return examples


def _batches(
    examples: list[tuple[np.ndarray, np.ndarray]], mean: np.ndarray, scale: np.ndarray, order: Sequence[int], size: int
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    batches = []
    for start in range(0, len(order), size):
        chosen = [examples[i] for i in order[start : start + size]]
        longest = max(len(x) for x, _ in chosen)
        x = np.zeros((len(chosen), longest, len(FEATURES)))
        y = np.full((len(chosen), longest), -1.0)
        for row, (features, labels) in enumerate(chosen):
            x[row, : len(features)] = (features - mean) / scale
            y[row, : len(labels)] = labels
        lengths = torch.tensor([len(f) for f, _ in chosen])
        batches.append((torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32), lengths))
    return batches


def _loss(net: _Net, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, y, lengths = batch
    logits = net(x, lengths)
    mask = y >= 0
    return nn.functional.binary_cross_entropy_with_logits(logits[mask], y[mask])


def train_lstm(
    train: Sequence[ProgramBlocks], validation: Sequence[ProgramBlocks], config: LSTMConfig = LSTMConfig()
) -> HotPathModel:
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    examples = function_examples(train, config.share)
    held = function_examples(validation, config.share)
    stacked = np.concatenate([x for x, _ in examples])
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0) + 1e-6
    net = _Net(len(FEATURES), config.hidden)
    optimizer = torch.optim.Adam(net.parameters(), lr=config.learning_rate)
    held_batches = _batches(held, mean, scale, range(len(held)), 256) if held else []
    best, best_state, waited = float("inf"), None, 0
    for _ in range(config.epochs):
        net.train()
        for batch in _batches(examples, mean, scale, rng.permutation(len(examples)).tolist(), config.batch):
            optimizer.zero_grad()
            _loss(net, batch).backward()  # type: ignore[no-untyped-call]
            optimizer.step()
        net.eval()
        with torch.no_grad():
            score = float(sum(_loss(net, b) for b in held_batches)) if held_batches else 0.0
        if score < best - 1e-4 or best_state is None:
            best, waited = score, 0
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        else:
            waited += 1
            if waited >= config.patience:
                break
    assert best_state is not None
    weights = {k: v.numpy().astype(np.float64) for k, v in best_state.items()}
    trained_on = {
        "programs": len(train),
        "functions": len(examples),
        "validation_programs": len(validation),
        "share": config.share,
        "hidden": config.hidden,
        "seed": config.seed,
    }
    model = HotPathModel(mean, scale, weights, trained_on)
    if validation:
        model.threshold = best_threshold(
            [np.concatenate(model.predict(p)) for p in validation], [hot_blocks(p, config.share) for p in validation]
        )
        model.trained_on["threshold chosen on"] = "validation F1"
    return model
