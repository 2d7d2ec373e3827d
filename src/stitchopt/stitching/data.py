"""Training data for the experts: each representation's output as a tensor, coreset targets, splits.

Count vectors are standardized with statistics fitted on the training split only; token sequences are padded
with 0 (the padding id) to the longest sequence. Targets are the ranker's clipped log ratios to -Oz.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from stitchopt.errors import InputError
from stitchopt.features.base import AnyRepresentation, Standardizer
from stitchopt.features.by_name import default_representations
from stitchopt.features.tokens import IRTokens
from stitchopt.labels.labelset import LabelSet
from stitchopt.models.ranker import log_ratio_targets
from stitchopt.passes.pipeline import PassNames


@dataclass(frozen=True)
class ExpertData:
    inputs: dict[str, torch.Tensor]  # representation name -> programs x features (float) or x tokens (int)
    standardizers: dict[str, Standardizer]  # for the count representations
    targets: torch.Tensor  # programs x lists, log ratios to -Oz (clipped; failures count as doubling)
    ratios: np.ndarray  # programs x lists, measured size ratios to -Oz (inf = the list failed)
    splits: tuple[str, ...]
    packages: tuple[str, ...]

    def rows(self, split: str) -> torch.Tensor:
        return torch.tensor([i for i, s in enumerate(self.splits) if s == split], dtype=torch.long)

    def select(self, split: str) -> ExpertData:
        """The programs of one split (standardization statistics unchanged)."""
        index = self.rows(split)
        return ExpertData(
            {name: x[index] for name, x in self.inputs.items()},
            self.standardizers,
            self.targets[index],
            self.ratios[index.numpy()],
            tuple(self.splits[i] for i in index),
            tuple(self.packages[i] for i in index),
        )


def expert_representations() -> list[AnyRepresentation]:
    """What the experts read: the shipped model's three count representations and the IR tokens."""
    return [*default_representations(), IRTokens()]


def expert_data(
    labels: LabelSet,
    outputs: dict[str, list[npt.NDArray[Any]]],
    lists: Sequence[PassNames],
    fit_split: str = "train",
    standardizers: dict[str, Standardizer] | None = None,
) -> ExpertData:
    """`outputs`: each representation's output per labeled program (`labels.labelset.labeled_features`);
    `lists`: the coreset, each of which `labels` must have measured. Count vectors are standardized with
    `standardizers` when given (held-out labels), else with statistics fitted on `fit_split`."""
    missing = [",".join(passes) for passes in lists if passes not in labels.lists]
    if missing:
        raise InputError(
            f"the labels did not measure {len(missing)} coreset lists (first: {missing[0]}): "
            "label these programs with the same list pool (`stitchopt labels pool --lists-from`)"
        )
    splits = tuple(p.split for p in labels.programs)
    fit_rows = [i for i, s in enumerate(splits) if s == fit_split]
    if standardizers is None and not fit_rows:
        raise InputError(f"no labeled program is in the {fit_split!r} split")
    fitted = dict(standardizers or {})
    inputs: dict[str, torch.Tensor] = {}
    for name, rows in outputs.items():
        if rows and np.issubdtype(rows[0].dtype, np.integer):
            inputs[name] = pad_sequences(rows)
            continue
        matrix = np.array(rows, dtype=np.float64)
        if name not in fitted:
            fitted[name] = Standardizer.fit(matrix[fit_rows], log=True)
        inputs[name] = torch.tensor(fitted[name].transform(matrix), dtype=torch.float32)
    ratios = labels.ratios()[:, [labels.lists.index(passes) for passes in lists]]
    targets = torch.tensor(log_ratio_targets(ratios), dtype=torch.float32)
    return ExpertData(inputs, fitted, targets, ratios, splits, tuple(p.package for p in labels.programs))


def pad_sequences(sequences: Sequence[npt.NDArray[Any]]) -> torch.Tensor:
    """programs x longest, int64, 0-padded (0 is the tokens' padding id)."""
    longest = max((len(s) for s in sequences), default=1)
    padded = torch.zeros((len(sequences), max(longest, 1)), dtype=torch.long)
    for i, sequence in enumerate(sequences):
        padded[i, : len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
    return padded
