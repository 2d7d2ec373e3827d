"""The margin of the plugin's `fast` policy: one pipeline per unit and no -Oz backup, so the model's choice is
built only where it is predicted to beat -Oz by more than a margin learned on held-out folds.

Without the backup every wrong prediction makes a unit larger; the margin trades the units a list would have
shrunk for the ones it would have grown. It is chosen on the package-grouped folds training already uses: for
each held-out program, static mode's choice and its (shrunk) predicted log ratio to -Oz, against the measured
ratio of that list. Only margins that grew at most `MAX_GROWN` of the held-out units qualify (a one-pipeline
compile that makes more units larger than -Oz is not safe to offer, whatever its geomean; the infinite margin,
plain -Oz, always qualifies). Ties go to the larger margin (fewer units built differently from -Oz).
"""

from __future__ import annotations

import numpy as np

from stitchopt.models.fast_policy import FastPolicy
from stitchopt.models.ranker import geomean_change

MARGINS = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, np.inf)
FAILED_RATIO = 2.0  # a list that fails on a unit counts as doubling it, as in training's scores
MAX_GROWN = 0.10  # the largest share of held-out units a fast policy may make larger than -Oz


def fit_fast_margin(predicted: np.ndarray, ratios: np.ndarray) -> FastPolicy:
    """`predicted`: each program's held-out predicted log ratio of its static choice (inf where the choice is
    -Oz); `ratios`: the measured size ratio of that choice (inf: the list failed)."""
    measured = np.where(np.isfinite(ratios), ratios, FAILED_RATIO)
    policies = []
    for margin in MARGINS:
        built = predicted < -margin
        outcome = np.where(built, measured, 1.0)
        policies.append(
            FastPolicy(float(margin), geomean_change(outcome), float(built.mean()), float((outcome > 1).mean()))
        )
    # The smallest geomean of the safe ones; among equals (to 1e-6) the last, i.e. the largest margin.
    safe = [policy for policy in policies if policy.grown <= MAX_GROWN]
    return min(reversed(safe), key=lambda policy: round(policy.change, 6))
