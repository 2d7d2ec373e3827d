"""The stitching study: train one expert per representation, stitch every ordered pair (closed form, Adam from
a random start, Adam from the optimal-transport map), and grow stitched ensembles one expert at a time.

Experts and layers are fitted on the training split, stopped and chosen on the validation split, and scored on
the held-out split (the test split of labels made for evaluation only), so no choice ever sees the test split.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from stitchopt.errors import InputError
from stitchopt.features.base import FeatureCache, Representation
from stitchopt.features.tokens import IRTokens
from stitchopt.labels.labelset import LabelSet, labeled_features
from stitchopt.models.ranker import BLENDS, NEIGHBORS, RIDGES, SHRINKS, ListRanker, geomean_change, static_choices
from stitchopt.passes.pipeline import PassNames
from stitchopt.stitching.alignment import align
from stitchopt.stitching.data import ExpertData, expert_data, expert_representations
from stitchopt.stitching.ensemble import StitchedEnsemble, initial_layer, stitch_ensemble
from stitchopt.stitching.experts import (
    DEFAULT_HIDDEN,
    Expert,
    TrainConfig,
    TrainResult,
    count_expert,
    fit,
    loss_on,
    predict,
    sequence_expert,
)
from stitchopt.stitching.experts import hidden as hidden_vectors
from stitchopt.stitching.layers import Stitched, train_layer
from stitchopt.stitching.results import (
    INITIALIZATIONS,
    Choices,
    CurveRow,
    ExpertRow,
    PairAlignment,
    PairRow,
    StudyReport,
)
from stitchopt.toolchain.discovery import Toolchain


def choices(predicted: torch.Tensor | np.ndarray, data: ExpertData) -> Choices:
    values = predicted.numpy() if isinstance(predicted, torch.Tensor) else predicted
    return tuple(float(r) for r in static_choices(values, data.ratios))


def make_expert(name: str, inputs: torch.Tensor, lists: int, hidden: int = DEFAULT_HIDDEN, seed: int = 0) -> Expert:
    """A sequence expert for token ids, a count expert for feature vectors."""
    if inputs.dtype == torch.long:
        return sequence_expert(name, int(inputs.max()) + 1 if inputs.numel() else 1, lists, hidden, seed)
    return count_expert(name, inputs.shape[1], lists, hidden, seed)


def fit_experts(
    train: ExpertData,
    validation: ExpertData,
    config: TrainConfig,
    hidden: int = DEFAULT_HIDDEN,
    vocabulary: dict[str, int] | None = None,
) -> dict[str, tuple[Expert, TrainResult]]:
    """One expert per representation in `train.inputs`, stopped on `validation`; `vocabulary` gives sequence
    experts their embedding size (default: the largest id seen plus one)."""
    experts = {}
    lists = train.targets.shape[1]
    for name, inputs in train.inputs.items():
        if vocabulary and name in vocabulary:
            expert = sequence_expert(name, vocabulary[name], lists, hidden, config.seed)
        else:
            expert = make_expert(name, inputs, lists, hidden, config.seed)
        result = fit(expert, inputs, train.targets, config, (validation.inputs[name], validation.targets))
        experts[name] = (expert, result)
    return experts


def train_experts(
    train: ExpertData,
    validation: ExpertData,
    test: ExpertData,
    config: TrainConfig,
    hidden: int = DEFAULT_HIDDEN,
    vocabulary: dict[str, int] | None = None,
) -> tuple[dict[str, Expert], list[ExpertRow]]:
    """`fit_experts`, each scored on the validation and held-out splits."""
    fitted = fit_experts(train, validation, config, hidden, vocabulary)
    rows = [
        ExpertRow(
            name,
            loss_on(expert, test.inputs[name], test.targets),
            choices(predict(expert, test.inputs[name]), test),
            choices(predict(expert, validation.inputs[name]), validation),
            result.epochs,
            result.seconds,
        )
        for name, (expert, result) in fitted.items()
    ]
    return {name: expert for name, (expert, _) in fitted.items()}, rows


def ranker_row(train: ExpertData, validation: ExpertData, test: ExpertData) -> ExpertRow:
    """The closed-form ranker of `models.ranker` on every count representation at once, its hyper-parameters
    chosen on the validation split: the baseline a stitched model has to beat."""
    start = time.monotonic()

    def counts(data: ExpertData) -> np.ndarray:
        return np.hstack([x.numpy() for x in data.inputs.values() if x.dtype != torch.long]).astype(np.float64)

    x_train, x_validation, targets = counts(train), counts(validation), train.targets.numpy().astype(np.float64)
    best: tuple[float, ListRanker, Choices] | None = None
    for neighbors, ridge, blend, shrink in itertools.product(NEIGHBORS, RIDGES, BLENDS, SHRINKS):
        ranker = ListRanker(neighbors, ridge, blend, shrink).fit(x_train, targets)
        picked = choices(ranker.predict(x_validation), validation)
        if best is None or geomean_change(np.array(picked)) < best[0]:
            best = (geomean_change(np.array(picked)), ranker, picked)
    assert best is not None
    predicted = best[1].predict(counts(test))
    loss = float(np.mean((predicted - test.targets.numpy()) ** 2))
    return ExpertRow("ranker (kNN + ridge)", loss, choices(predicted, test), best[2], 0, time.monotonic() - start)


def stitching_table(
    experts: dict[str, Expert],
    train: ExpertData,
    validation: ExpertData,
    test: ExpertData,
    config: TrainConfig,
    initializations: Sequence[str] = INITIALIZATIONS,
) -> list[PairRow]:
    """Every ordered pair A -> B of distinct experts, with each initialization."""
    rows = []
    for source, target in itertools.permutations(experts, 2):
        a, b = experts[source], experts[target]
        own_loss = loss_on(b, test.inputs[target], test.targets)
        own_top = predict(b, test.inputs[target]).argmin(dim=1)
        for init in initializations:
            start = time.monotonic()
            layer = initial_layer(a, b, train.inputs[source], train.inputs[target], init)
            stitched = Stitched(a, layer, b)
            if init != "lstsq":
                train_layer(
                    stitched,
                    train.inputs[source],
                    train.targets,
                    config,
                    (validation.inputs[source], validation.targets),
                )
            seconds = time.monotonic() - start
            predicted = predict(stitched, test.inputs[source])
            rows.append(
                PairRow(
                    source,
                    target,
                    init,
                    loss_on(stitched, test.inputs[source], test.targets) - own_loss,
                    float((predicted.argmin(dim=1) == own_top).float().mean()),
                    choices(predicted, test),
                    seconds,
                )
            )
    return rows


ALIGNMENT_BLOCKS = 32  # the plans a study keeps are summed to at most this many blocks on a side


def alignments(experts: dict[str, Expert], train: ExpertData) -> list[PairAlignment]:
    """The exact transport plan between every two experts' hidden units (one direction per pair: the other
    is its transpose)."""
    rows = []
    for source, target in itertools.combinations(experts, 2):
        h_source = hidden_vectors(experts[source], train.inputs[source])
        h_target = hidden_vectors(experts[target], train.inputs[target])
        start = time.monotonic()
        found = align(h_source, h_target)
        seconds = time.monotonic() - start
        correlation = 1.0 - found.cost[np.arange(len(found.plan)), found.plan.argmax(axis=1)] / 2.0
        rows.append(
            PairAlignment(
                source,
                target,
                found.transport_cost,
                float(correlation.mean()),
                _blocks(found.plan).tolist(),
                seconds,
            )
        )
    return rows


def _blocks(plan: np.ndarray) -> np.ndarray:
    """Sum a plan over a grid of at most ALIGNMENT_BLOCKS x ALIGNMENT_BLOCKS blocks of units."""
    rows = np.array_split(np.arange(plan.shape[0]), min(ALIGNMENT_BLOCKS, plan.shape[0]))
    columns = np.array_split(np.arange(plan.shape[1]), min(ALIGNMENT_BLOCKS, plan.shape[1]))
    return np.array([[plan[np.ix_(r, c)].sum() for c in columns] for r in rows])


@dataclass(frozen=True)
class GrownEnsemble:
    ensemble: StitchedEnsemble
    members: tuple[str, ...]  # receiver first
    validation: Choices
    seconds: float


def grow_ensembles(
    experts: dict[str, Expert], train: ExpertData, validation: ExpertData, config: TrainConfig, init: str = "lstsq"
) -> list[GrownEnsemble]:
    """Greedy growth on the validation split: the best single expert receives; at each step the expert whose
    addition gives the best validation result joins. One ensemble per size k = 1..all."""

    def grown(members: list[str]) -> GrownEnsemble:
        start = time.monotonic()
        ensemble, _ = stitch_ensemble(
            [experts[n] for n in members],
            [train.inputs[n] for n in members],
            train.targets,
            config,
            ([validation.inputs[n] for n in members], validation.targets),
            init,
        )
        picked = choices(predict(ensemble, _batch(validation, members)), validation)
        return GrownEnsemble(ensemble, tuple(members), picked, time.monotonic() - start)

    sizes: list[GrownEnsemble] = []
    chosen: list[str] = []
    while len(chosen) < len(experts):
        best = min(
            (grown([*chosen, n]) for n in experts if n not in chosen),
            key=lambda g: geomean_change(np.array(g.validation)),
        )
        chosen = list(best.members)
        sizes.append(best)
    return sizes


def ensemble_curve(
    experts: dict[str, Expert],
    train: ExpertData,
    validation: ExpertData,
    test: ExpertData,
    config: TrainConfig,
    init: str = "lstsq",
) -> list[CurveRow]:
    """`grow_ensembles`, each size scored on the held-out split."""
    rows = []
    for grown in grow_ensembles(experts, train, validation, config, init):
        predicted = predict(grown.ensemble, _batch(test, grown.members))
        rows.append(
            CurveRow(
                grown.members,
                grown.validation,
                choices(predicted, test),
                float(torch.nn.functional.mse_loss(predicted, test.targets)),
                grown.seconds,
            )
        )
    return rows


def run_study(
    toolchain: Toolchain,
    labels: LabelSet,
    held_out: LabelSet,
    lists: Sequence[PassNames],
    config: TrainConfig,
    *,
    hidden: int = DEFAULT_HIDDEN,
    cache: FeatureCache | None = None,
    pairs: bool = True,
    extra: Sequence[Representation] = (),
) -> StudyReport:
    """Experts, pair table and ensemble curve for the coreset `lists` (a flag-tuning model's, so validated)
    from `labels` (train and validation splits) and `held_out` (labels of other programs, measured with the
    same list pool, for scoring only). `extra` representations (e.g. LLM Compiler's) get experts too."""
    tokens = IRTokens()
    representations = [*expert_representations(), *extra]
    known = labeled_features(toolchain, labels, representations, cache)
    scored = labeled_features(toolchain, held_out, representations, cache)
    data = expert_data(known.labels, known.outputs, lists)
    train, validation = data.select("train"), data.select("validation")
    if not validation.splits or not scored.labels.programs:
        raise InputError(
            "the study needs labeled programs of the validation split (to stop and choose) and held-out ones (to "
            "score): label with `stitchopt labels pool --split train,validation` and `--split test`"
        )
    test = expert_data(scored.labels, scored.outputs, lists, standardizers=data.standardizers)
    experts, expert_rows = train_experts(train, validation, test, config, hidden, {tokens.name: tokens.vocabulary_size})
    expert_rows.append(ranker_row(train, validation, test))
    return StudyReport(
        {"train": len(train.splits), "validation": len(validation.splits), "held out": len(test.splits)},
        len(lists),
        tuple(float(r) for r in np.minimum(test.ratios.min(axis=1), 1.0)),
        test.packages,
        validation.packages,
        expert_rows,
        stitching_table(experts, train, validation, test, config) if pairs else [],
        ensemble_curve(experts, train, validation, test, config),
        alignments(experts, train),
    )


def _batch(data: ExpertData, members: Sequence[str]) -> tuple[torch.Tensor, ...]:
    return tuple(data.inputs[n] for n in members)
