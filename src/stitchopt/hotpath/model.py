"""The hot-block predictor that ships: a bidirectional LSTM over each function's blocks in layout order
(each block a feature vector, `blocks.FEATURES`), a logistic head per block. Trained with PyTorch
(`studies.hotpath.train`), run here with NumPy alone, so hybrid mode and `stitchopt hot` need no extra.

Files: `config.json` and `weights.npz` (PyTorch's parameter names), never pickled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt import __version__
from stitchopt.errors import InputError
from stitchopt.hotpath.blocks import FEATURES, ProgramBlocks
from stitchopt.models.directory import read_model_directory, save_model_directory

FORMAT = 1
KIND = "hot-path-lstm"
DEFAULT_HOT_MODEL_DIR = Path(__file__).parent / "default"
DEFAULT_THRESHOLD = 0.5


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(x, -60, 60)))
    return out


def lstm_direction(inputs: np.ndarray, weights: dict[str, np.ndarray], suffix: str) -> np.ndarray:
    """One direction of a one-layer `torch.nn.LSTM` (gates i, f, g, o) over `inputs` (steps x features)."""
    w_ih, w_hh = weights[f"lstm.weight_ih_l0{suffix}"], weights[f"lstm.weight_hh_l0{suffix}"]
    bias = weights[f"lstm.bias_ih_l0{suffix}"] + weights[f"lstm.bias_hh_l0{suffix}"]
    hidden = w_hh.shape[1]
    h, c = np.zeros(hidden), np.zeros(hidden)
    projected = inputs @ w_ih.T + bias
    outputs = np.empty((len(inputs), hidden))
    for t in range(len(inputs)):
        gates = projected[t] + w_hh @ h
        i, f, o = (_sigmoid(gates[k * hidden : (k + 1) * hidden]) for k in (0, 1, 3))
        c = f * c + i * np.tanh(gates[2 * hidden : 3 * hidden])
        h = o * np.tanh(c)
        outputs[t] = h
    return outputs


@dataclass
class HotPathModel:
    mean: np.ndarray
    scale: np.ndarray
    weights: dict[str, np.ndarray]  # lstm.* (both directions) and head.weight / head.bias
    trained_on: dict[str, Any]
    threshold: float = DEFAULT_THRESHOLD  # P(hot) from which a block counts as hot (chosen on validation)

    @property
    def hidden(self) -> int:
        return int(self.weights["lstm.weight_hh_l0"].shape[1])

    def function_probabilities(self, features: np.ndarray) -> np.ndarray:
        """P(hot) for each block of one function."""
        if len(features) == 0:
            return np.zeros(0)
        x = (features - self.mean) / self.scale
        forward = lstm_direction(x, self.weights, "")
        backward = lstm_direction(x[::-1], self.weights, "_reverse")[::-1]
        logits = np.concatenate([forward, backward], axis=1) @ self.weights["head.weight"].T + self.weights["head.bias"]
        return _sigmoid(logits[:, 0])

    def predict(self, program: ProgramBlocks) -> list[np.ndarray]:
        return [self.function_probabilities(f.features) for f in program.functions]

    def save_pretrained(self, directory: Path) -> None:
        config = {
            "kind": KIND,
            "format": FORMAT,
            "stitchopt": __version__,
            "features": list(FEATURES),
            "hidden": self.hidden,
            "threshold": self.threshold,
            "trained_on": self.trained_on,
        }
        arrays = {"mean": self.mean, "scale": self.scale, **{k: v.astype(np.float32) for k, v in self.weights.items()}}
        save_model_directory(directory, config, arrays)

    @classmethod
    def from_pretrained(cls, directory: Path = DEFAULT_HOT_MODEL_DIR) -> HotPathModel:
        config, arrays = read_model_directory(directory, "hot-path model")
        if config.get("kind") != KIND or config.get("features") != list(FEATURES):
            raise InputError(
                f"{directory}: a hot-path model for other block features; retrain it with "
                "`python benchmarks/hot_paths.py --save-model DIR`"
            )
        mean, scale = arrays.pop("mean"), arrays.pop("scale")
        return cls(mean, scale, arrays, config.get("trained_on", {}), float(config.get("threshold", DEFAULT_THRESHOLD)))
