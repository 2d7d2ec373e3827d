"""Function-level vulnerability detectors: one expert per representation the flag-tuning experts read, with the
same encoders, whose head says whether a function is bad (one logit) and which CWE its case is about (one logit
per CWE). Reusing the encoders is what lets the optimization experts' hidden spaces be stitched into a
detector's (`security.study`).

The CWE head is trained on every function with its case's CWE (good functions of a CWE-190 case still look like
integer arithmetic); its accuracy is reported on bad functions, where a guess is shown to a user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from stitchopt.errors import InputError
from stitchopt.features.base import AnyRepresentation, FeatureCache, Standardizer, compute
from stitchopt.features.module import FeatureModule
from stitchopt.features.tokens import IRTokens
from stitchopt.security.results import LabeledFunction
from stitchopt.stitching.data import pad_sequences
from stitchopt.stitching.experts import DEFAULT_HIDDEN, Expert, Inputs, count_expert, predict, sequence_expert
from stitchopt.toolchain.discovery import Toolchain

Outputs = dict[str, list[npt.NDArray[Any]]]  # representation name -> one output per function


class DetectedFunction(LabeledFunction, Protocol):
    """A function a detector trains or is scored on (`datasets.juliet.JulietFunction` is one)."""

    @property
    def bitcode(self) -> bytes: ...  # the function alone, symbols renamed, no debug info

    @property
    def case(self) -> str: ...  # the test case it belongs to (functions of one case share code)

    @property
    def split(self) -> str: ...


def detector_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of the bad logit (column 0) plus cross-entropy of the CWE logits (columns 1:);
    `targets` column 0 is 1.0 for bad, column 1 the CWE's index."""
    bad = nn.functional.binary_cross_entropy_with_logits(outputs[:, 0], targets[:, 0])
    return bad + nn.functional.cross_entropy(outputs[:, 1:], targets[:, 1].long())


def function_outputs(
    toolchain: Toolchain,
    bitcodes: Sequence[bytes],
    representations: Sequence[AnyRepresentation],
    cache: FeatureCache | None = None,
    jobs: int = 1,
) -> Outputs:
    """Each representation's output for each function's bitcode. The tools run in `jobs` threads (the work is
    in `llvm-dis`/`opt` processes); the cache is read and written in this thread only (one SQLite connection)."""
    modules = [FeatureModule.from_bytes(toolchain, b, f"function {i}") for i, b in enumerate(bitcodes)]
    found: dict[tuple[str, int], npt.NDArray[Any]] = {}
    if cache is not None:
        for r in representations:
            for i, module in enumerate(modules):
                if (hit := cache.get(r, module)) is not None:
                    found[r.name, i] = hit
    missing = [i for i, _ in enumerate(modules) if any((r.name, i) not in found for r in representations)]

    def run(i: int) -> dict[str, npt.NDArray[Any]]:
        return {r.name: compute(r, modules[i]) for r in representations if (r.name, i) not in found}

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for i, computed in zip(missing, pool.map(run, missing), strict=True):
            for r in representations:
                if r.name in computed:
                    found[r.name, i] = computed[r.name]
                    if cache is not None:
                        cache.put(r, modules[i], computed[r.name])
    return {r.name: [found[r.name, i] for i in range(len(modules))] for r in representations}


def batch(rows: Sequence[npt.NDArray[Any]], standardizer: Standardizer | None) -> torch.Tensor:
    """One representation's outputs as a batch: token ids 0-padded (no standardizer), counts standardized."""
    if standardizer is None:
        return pad_sequences(rows)
    if not rows:
        return torch.zeros((0, len(standardizer.mean)), dtype=torch.float32)
    return torch.tensor(standardizer.transform(np.array(rows, dtype=np.float64)), dtype=torch.float32)


def is_sequence(rows: Sequence[npt.NDArray[Any]]) -> bool:
    return bool(rows) and np.issubdtype(rows[0].dtype, np.integer)


@dataclass(frozen=True)
class DetectorData:
    """The functions of a study as tensors: inputs per member (each expert reads one representation, counts
    standardized with that expert's own statistics), targets (bad, CWE index)."""

    inputs: dict[str, torch.Tensor]
    targets: torch.Tensor  # functions x 2: 1.0 for bad, the CWE's index in `cwes`
    functions: tuple[DetectedFunction, ...]
    cwes: tuple[str, ...]  # the CWE head's classes

    def select(self, split: str) -> DetectorData:
        index = torch.tensor([i for i, f in enumerate(self.functions) if f.split == split], dtype=torch.long)
        return DetectorData(
            {name: x[index] for name, x in self.inputs.items()},
            self.targets[index],
            tuple(self.functions[i] for i in index),
            self.cwes,
        )

    @property
    def bad(self) -> np.ndarray:
        return self.targets[:, 0].numpy() > 0.5

    def batch(self, members: Sequence[str]) -> tuple[torch.Tensor, ...]:
        """The inputs of these members (an ensemble's, receiver first)."""
        return tuple(self.inputs[m] for m in members)


def fit_standardizers(outputs: Outputs, rows: Sequence[int]) -> dict[str, Standardizer]:
    """Per count representation, z-scores (of log counts) fitted on `rows` (the training functions)."""
    return {
        name: Standardizer.fit(np.array([values[i] for i in rows], dtype=np.float64), log=True)
        for name, values in outputs.items()
        if not is_sequence(values)
    }


def detector_data(
    outputs: Outputs,
    functions: Sequence[DetectedFunction],
    cwes: Sequence[str],
    standardizers: Mapping[str, Standardizer],
) -> DetectorData:
    """`outputs` and `standardizers` by member name (token members have no standardizer)."""
    index = {cwe: i for i, cwe in enumerate(cwes)}
    unknown = sorted({f.cwe for f in functions} - set(index))
    if unknown:
        raise InputError(f"functions of {unknown[0]}, a CWE the detector has no class for: retrain it with them")
    targets = torch.tensor([[float(f.label == "bad"), float(index[f.cwe])] for f in functions], dtype=torch.float32)
    inputs = {name: batch(rows, standardizers.get(name)) for name, rows in outputs.items()}
    return DetectorData(inputs, targets.reshape(len(functions), 2), tuple(functions), tuple(cwes))


def detector_expert(
    name: str, inputs: torch.Tensor, classes: int, hidden: int = DEFAULT_HIDDEN, seed: int = 0
) -> Expert:
    """A flag-tuning expert's architecture with a detector's head: 1 + `classes` logits. Token experts get
    the tokens' whole vocabulary, like the optimization experts."""
    if inputs.dtype == torch.long:
        return sequence_expert(name, IRTokens().vocabulary_size, 1 + classes, hidden, seed)
    return count_expert(name, inputs.shape[1], 1 + classes, hidden, seed)


def scores(model: nn.Module, inputs: Inputs) -> tuple[np.ndarray, np.ndarray]:
    """Each function's risk (probability of bad) and the index of its most likely CWE."""
    out = predict(model, inputs)
    if not len(out):
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    return torch.sigmoid(out[:, 0]).double().numpy(), out[:, 1:].argmax(dim=1).numpy()


def best_threshold(risk: np.ndarray, bad: np.ndarray) -> tuple[float, float]:
    """The risk threshold (call bad at or above it) with the highest F1, and that F1. Ties go to the higher
    threshold (fewer false positives); with no bad function, nothing is called bad (threshold above 1)."""
    if not bad.any():
        return 1.0 + 1e-9, 0.0
    order = np.argsort(-risk, kind="stable")
    sorted_risk, sorted_bad = risk[order], bad[order]
    true_positives = np.cumsum(sorted_bad)
    called = np.arange(1, len(risk) + 1)
    last = np.r_[sorted_risk[1:] != sorted_risk[:-1], True]  # only cut between distinct risks
    f1 = np.where(last, 2 * true_positives / (called + bad.sum()), -1.0)
    best = int(np.argmax(f1))  # first maximum: the highest threshold
    return float(sorted_risk[best]), float(f1[best])
