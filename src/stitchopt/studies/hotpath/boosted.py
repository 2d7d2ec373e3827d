"""The gradient-boosted tree baseline: the LSTM's block features, one block at a time (no sequence), with
scikit-learn's histogram gradient boosting (the `stitch` extra). A benchmark baseline; it does not ship."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

from stitchopt.hotpath.blocks import ProgramBlocks
from stitchopt.hotpath.evaluate import Prediction, Predictor, best_threshold, from_probabilities
from stitchopt.hotpath.labels import DEFAULT_SHARE, hot_blocks


def train_boosted(
    programs: Sequence[ProgramBlocks],
    validation: Sequence[ProgramBlocks],
    seed: int = 0,
    share: float = DEFAULT_SHARE,
) -> Predictor:
    """Fit on `programs`; the hot cut-off is chosen on `validation`, as for the LSTM."""
    features = np.concatenate([f.features for p in programs for f in p.functions])
    labels = np.concatenate([hot_blocks(p, share) for p in programs])
    classifier = HistGradientBoostingClassifier(random_state=seed).fit(features, labels)

    def probabilities(program: ProgramBlocks) -> list[np.ndarray]:
        return [classifier.predict_proba(f.features)[:, 1] for f in program.functions]

    threshold = (
        best_threshold(
            [np.concatenate(probabilities(p)) for p in validation], [hot_blocks(p, share) for p in validation]
        )
        if validation
        else 0.5
    )

    def predict(program: ProgramBlocks) -> Prediction:
        return from_probabilities(program, probabilities(program), threshold)

    return predict
