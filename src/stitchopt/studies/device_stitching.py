"""The device model's question answered by stitched experts, as on the host (`stitching/`): one expert per
representation of the kernel (Autophase, opcode/type histograms, function properties, IR tokens) predicts every
pool list's cost, and an ensemble grown on the validation families stitches their hidden vectors into one
receiver. Benchmark-only (`benchmarks/gpu_model.py --stitched`): it needs PyTorch, and the closed-form chooser
is what ships unless this wins on held-out families.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from stitchopt.core import IRModule
from stitchopt.features.base import Standardizer, compute
from stitchopt.features.module import FeatureModule
from stitchopt.features.tokens import IRTokens
from stitchopt.labels.device import DeviceLabels
from stitchopt.models.device_model import device_costs, device_ratios
from stitchopt.models.ranker import geomean_change
from stitchopt.stitching.data import ExpertData, expert_representations, pad_sequences
from stitchopt.stitching.experts import TrainConfig, predict
from stitchopt.stitching.study import fit_experts, grow_ensembles
from stitchopt.toolchain.discovery import Toolchain


def device_expert_data(toolchain: Toolchain, labels: DeviceLabels, modules: Sequence[IRModule]) -> ExpertData:
    """Every labelled kernel read by every expert representation; targets are the device model's costs of the
    pool lists (what the -O3 backup keeps), counts standardized on the train split."""
    views = [FeatureModule.from_bytes(toolchain, m.bitcode, m.name) for m in modules]
    train = labels.rows(["train"])
    inputs: dict[str, torch.Tensor] = {}
    standardizers: dict[str, Standardizer] = {}
    for representation in expert_representations():
        rows = [compute(representation, view) for view in views]
        if np.issubdtype(rows[0].dtype, np.integer):
            inputs[representation.name] = pad_sequences(rows)
            continue
        matrix = np.array(rows, dtype=np.float64)
        standardizers[representation.name] = Standardizer.fit(matrix[train])
        inputs[representation.name] = torch.tensor(
            standardizers[representation.name].transform(matrix), dtype=torch.float32
        )
    ratios = device_ratios(labels.o3, labels.lists)
    targets = torch.tensor(device_costs(labels.o3, labels.lists)[:, :-1], dtype=torch.float32)
    return ExpertData(inputs, standardizers, targets, ratios, tuple(labels.splits), tuple(labels.families))


def stitched_orders(data: ExpertData, pool: Sequence[str], config: TrainConfig) -> tuple[list[list[str | None]], str]:
    """Per kernel, the pool lists by the chosen ensemble's predicted cost, -O3 (None) where the predictions reach
    0; the ensemble (its members, receiver first) is the size whose static choice is best on validation."""
    train, validation = data.select("train"), data.select("validation")
    tokens = IRTokens()
    experts = fit_experts(train, validation, config, vocabulary={tokens.name: tokens.vocabulary_size})
    grown = grow_ensembles({name: e for name, (e, _) in experts.items()}, train, validation, config)
    best = min(grown, key=lambda g: geomean_change(np.array(g.validation)))
    predicted = predict(best.ensemble, tuple(data.inputs[n] for n in best.members)).double().numpy()
    orders: list[list[str | None]] = []
    for row in predicted:
        ranked = [pool[j] for j in np.argsort(row, kind="stable")]
        keep = int((np.sort(row) < 0).sum())  # lists predicted to beat -O3 come before it
        orders.append([*ranked[:keep], None, *ranked[keep:]])
    return orders, " + ".join(best.members)
