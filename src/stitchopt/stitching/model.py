"""A stitched ensemble as a model directory, trained by `stitchopt stitch train` and used by `stitch predict`.

`config.json` says what the model was made with and for (members and their representations, sizes, the
coreset lists, standardization statistics, LLVM and pass-catalogue versions); `weights.npz` holds the
ensemble's parameters as plain arrays (loaded with `allow_pickle=False`). Unlike the shipped flag-tuning model
it needs PyTorch at inference (the `stitch` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from stitchopt.core import IRModule
from stitchopt.errors import InputError
from stitchopt.features.base import FeatureCache, Standardizer, compute
from stitchopt.features.module import FeatureModule
from stitchopt.features.tokens import IRTokens
from stitchopt.labels.labelset import LabelSet, labeled_features
from stitchopt.models.directory import CONFIG_NAME, WEIGHTS_NAME, SavedModel, read_model_directory, stamp
from stitchopt.models.list_model import RankedList
from stitchopt.models.ranker import geomean_change
from stitchopt.models.schema import STITCHED_MODEL_CONFIG, check_config
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames
from stitchopt.stitching.data import expert_data, expert_representations
from stitchopt.stitching.ensemble import StitchedEnsemble
from stitchopt.stitching.experts import DEFAULT_HIDDEN, TrainConfig, count_expert, predict, sequence_expert
from stitchopt.stitching.layers import StitchingLayer
from stitchopt.stitching.study import GrownEnsemble, fit_experts, grow_ensembles
from stitchopt.toolchain.discovery import Toolchain

KIND = "stitched"
FORMAT = 1


@dataclass
class StitchedModel(SavedModel):
    ensemble: StitchedEnsemble
    members: tuple[str, ...]  # representation names, receiver first
    sizes: dict[str, int]  # per member: count features, or the token vocabulary
    standardizers: dict[str, Standardizer]  # of the count members
    lists: tuple[PassNames, ...]
    hidden: int
    llvm_version: str
    catalogue: str

    def rank(self, toolchain: Toolchain, module: IRModule) -> list[RankedList]:
        """Every list and -Oz, best predicted first."""
        view = FeatureModule.from_bytes(toolchain, module.bitcode, module.name)
        known = {r.name: r for r in expert_representations()}
        batch = []
        for name in self.members:
            output = compute(known[name], view)
            if name in self.standardizers:
                batch.append(torch.tensor(self.standardizers[name].transform(output)[None, :], dtype=torch.float32))
            else:
                batch.append(torch.as_tensor(output, dtype=torch.long)[None, :])
        predicted = predict(self.ensemble, tuple(batch))[0].double().numpy()
        entries = [RankedList(p, float(np.exp(v))) for p, v in zip(self.lists, predicted, strict=True)]
        return sorted([*entries, RankedList(None, 1.0)], key=lambda e: e.predicted_ratio)

    def _config(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            **stamp(FORMAT, self.llvm_version, self.catalogue),
            "members": list(self.members),
            "sizes": self.sizes,
            "hidden": self.hidden,
            "standardizers": {n: s.to_dict() for n, s in self.standardizers.items()},
            "lists": [list(p) for p in self.lists],
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        return {k: v.detach().numpy() for k, v in self.ensemble.state_dict().items()}

    @classmethod
    def from_pretrained(cls, directory: Path, catalogue: Catalogue) -> StitchedModel:
        config, arrays = read_model_directory(directory, "stitched model")
        state = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in arrays.items()}
        if config.get("kind") != KIND or config.get("format") != FORMAT:
            raise InputError(f"{directory}: not a stitched model of format {FORMAT} (make one: stitchopt stitch train)")
        check_config(config, STITCHED_MODEL_CONFIG, directory / CONFIG_NAME)
        if config["catalogue"] != catalogue.identity:
            raise InputError(f"{directory}: made for LLVM {config['llvm']}'s pass catalogue; retrain it for this LLVM")
        lists = tuple(tuple(p) for p in config["lists"])
        ensemble = _ensemble(
            config["members"], config["sizes"], set(config["standardizers"]), len(lists), config["hidden"]
        )
        try:
            ensemble.load_state_dict(state)
        except RuntimeError as exc:  # missing, unexpected or mis-shaped tensors
            why = str(exc).strip().splitlines()[-1].strip()
            raise InputError(f"{directory / WEIGHTS_NAME}: the weights do not fit config.json ({why})") from exc
        ensemble.eval()
        return cls(
            ensemble,
            tuple(config["members"]),
            config["sizes"],
            {n: Standardizer.from_dict(d) for n, d in config["standardizers"].items()},
            lists,
            config["hidden"],
            config["llvm"],
            config["catalogue"],
        )


def _ensemble(
    members: Sequence[str], sizes: dict[str, int], counts: set[str], lists: int, hidden: int
) -> StitchedEnsemble:
    experts = [
        count_expert(n, sizes[n], lists, hidden) if n in counts else sequence_expert(n, sizes[n], lists, hidden)
        for n in members
    ]
    return StitchedEnsemble(experts, [StitchingLayer(hidden, hidden) for _ in members[1:]])


def train_stitched(
    toolchain: Toolchain,
    catalogue: Catalogue,
    labels: LabelSet,
    lists: Sequence[PassNames],
    config: TrainConfig,
    *,
    hidden: int = DEFAULT_HIDDEN,
    cache: FeatureCache | None = None,
) -> tuple[StitchedModel, list[GrownEnsemble]]:
    """Experts on the train split, ensembles grown on the validation split; the best of them becomes the model.
    Also returns every grown ensemble (one per size) for the curve."""
    outputs = labeled_features(toolchain, labels, expert_representations(), cache)
    data = expert_data(outputs.labels, outputs.outputs, lists)
    train, validation = data.select("train"), data.select("validation")
    if not train.splits or not validation.splits:
        raise InputError("stitch train needs labeled programs of both the train and the validation split")
    tokens = IRTokens()
    experts = fit_experts(train, validation, config, hidden, {tokens.name: tokens.vocabulary_size})
    grown = grow_ensembles({n: e for n, (e, _) in experts.items()}, train, validation, config)
    best = min(grown, key=lambda g: geomean_change(np.array(g.validation)))
    sizes = {n: tokens.vocabulary_size if n == tokens.name else int(train.inputs[n].shape[1]) for n in best.members}
    model = StitchedModel(
        best.ensemble,
        best.members,
        sizes,
        {n: data.standardizers[n] for n in best.members if n in data.standardizers},
        tuple(lists),
        hidden,
        catalogue.llvm_version,
        catalogue.identity,
    )
    return model, grown
