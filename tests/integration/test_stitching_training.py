"""Stitching on synthetic hidden spaces and targets: closed forms, OT alignment, frozen experts, determinism."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ot")

from stitchopt.stitching.alignment import align, transport_map, unit_correlations  # noqa: E402
from stitchopt.stitching.ensemble import stitch_ensemble  # noqa: E402
from stitchopt.stitching.experts import (  # noqa: E402
    TrainConfig,
    count_expert,
    fit,
    hidden,
    loss_on,
    predict,
    sequence_expert,
)
from stitchopt.stitching.layers import Stitched, StitchingLayer, least_squares, train_layer  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")  # torch on 2 threads made these tests 10x slower
CONFIG = TrainConfig(epochs=60, patience=60, seed=0)


def _task(programs: int = 96, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two views of the same programs (B's features are a mixed, noisy copy of A's) and smooth targets."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((programs, 6))
    b = a @ rng.standard_normal((6, 5)) + 0.05 * rng.standard_normal((programs, 5))
    targets = np.tanh(a @ rng.standard_normal((6, 4)) / 2)
    return (
        torch.tensor(a, dtype=torch.float32),
        torch.tensor(b, dtype=torch.float32),
        torch.tensor(targets, dtype=torch.float32),
    )


def test_least_squares_recovers_an_affine_map() -> None:
    rng = np.random.default_rng(1)
    source = rng.standard_normal((200, 8))
    weight, bias = rng.standard_normal((8, 5)), rng.standard_normal(5)
    found_weight, found_bias = least_squares(source, source @ weight + bias, ridge=0.0)
    assert np.allclose(found_weight, weight) and np.allclose(found_bias, bias)


def test_exact_transport_plan_finds_permuted_units_and_maps_them_back() -> None:
    rng = np.random.default_rng(2)
    source = np.maximum(rng.standard_normal((300, 16)), 0)
    permutation = rng.permutation(16)
    target = 3.0 * source[:, permutation] + 1.0  # the same units, shuffled, rescaled and shifted
    alignment = align(source, target, method="emd")
    assert alignment.method == "emd" and np.isclose(alignment.plan.sum(), 1.0)
    assert (alignment.plan.argmax(axis=0) == permutation).all()
    assert alignment.transport_cost < 1e-6
    weight, bias = transport_map(alignment, source, target)
    assert np.allclose(source @ weight + bias, target, atol=1e-2)


def test_correlations_are_the_same_in_chunks_and_sinkhorn_keeps_the_marginals() -> None:
    rng = np.random.default_rng(3)
    source, target = rng.standard_normal((50, 7)), rng.standard_normal((50, 9))
    assert np.allclose(unit_correlations(source, target, max_bytes=200), unit_correlations(source, target))
    plan = align(source, target, method="sinkhorn", reg=0.5).plan
    assert np.allclose(plan.sum(axis=1), 1 / 7, atol=1e-4) and np.allclose(plan.sum(axis=0), 1 / 9, atol=1e-4)
    with pytest.raises(ValueError, match="same programs"):
        align(source, target[:10])


def test_training_is_deterministic_given_the_seed() -> None:
    a, _, targets = _task()
    weights = []
    for _ in range(2):
        expert = count_expert("a", 6, 4, hidden=16, seed=7)
        fit(expert, a, targets, TrainConfig(epochs=5, seed=7))
        weights.append(expert.head.weight.detach().clone())
    assert torch.equal(weights[0], weights[1])


def test_a_stitched_pair_trains_only_its_layer_and_has_a_penalty() -> None:
    a, b, targets = _task()
    source, target = count_expert("a", 6, 4, hidden=16, seed=0), count_expert("b", 5, 4, hidden=16, seed=1)
    fit(source, a, targets, CONFIG)
    fit(target, b, targets, CONFIG)
    frozen = {k: v.clone() for k, v in [*source.state_dict().items(), *target.state_dict().items()]}
    stitched = Stitched(source, StitchingLayer(16, 16), target)
    untrained = loss_on(stitched, a, targets)
    train_layer(stitched, a, targets, CONFIG)
    penalty = loss_on(stitched, a, targets) - loss_on(target, b, targets)
    assert loss_on(stitched, a, targets) < untrained / 2
    assert penalty < untrained - loss_on(target, b, targets)
    after = {k: v for k, v in [*source.state_dict().items(), *target.state_dict().items()]}
    assert all(torch.equal(frozen[k], after[k]) for k in frozen)
    assert all(p.requires_grad for p in [*source.parameters(), *target.parameters()])  # unfrozen afterwards


def test_an_ensemble_of_one_is_its_receiver_and_larger_ones_start_from_least_squares() -> None:
    a, b, targets = _task()
    first, second = count_expert("a", 6, 4, hidden=16, seed=0), count_expert("b", 5, 4, hidden=16, seed=1)
    fit(first, a, targets, CONFIG)
    fit(second, b, targets, CONFIG)
    alone, _ = stitch_ensemble([first], [a], targets, CONFIG)
    assert torch.allclose(predict(alone, (a,)), predict(first, a))
    pair, result = stitch_ensemble([first, second], [a, b], targets, CONFIG, init="ot")
    assert result.epochs > 0 and np.isfinite(loss_on(pair, (a, b), targets))
    assert hidden(first, a).shape == (len(a), 16)


def test_sequence_expert_ignores_padding_and_reads_short_sequences() -> None:
    expert = sequence_expert("tokens", vocabulary=50, lists=3, hidden=8, seed=0)
    for length in (12, 13, 15):  # a window may start on the last tokens and run past them
        tokens = torch.arange(5, 5 + length)[None, :]
        padded = torch.nn.functional.pad(tokens, (0, 20))
        assert torch.allclose(predict(expert, tokens), predict(expert, padded), atol=1e-6)
    assert predict(expert, torch.tensor([[3, 4]])).shape == (1, 3)
