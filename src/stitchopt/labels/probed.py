"""Values of the objective's probed terms for labeled programs, so that a model can be trained for them.

Labels hold what an evaluation measures (sizes, instructions, times); the `security` term is read from the
optimized module of each (program, list) pair instead (`validate.security_guard.SecurityMeter`: one `opt -S` per
pair, cached in the evaluation store, so a second training costs nothing). `perf` would need every labeled
program run under every list and is refused.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import benchmark_module
from stitchopt.errors import InputError
from stitchopt.labels.labelset import LabelSet
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.security_guard import SecurityMeter


def probed_values(
    toolchain: Toolchain,
    catalogue: Catalogue,
    labels: LabelSet,
    objective: Objective,
    store: EvaluationStore | None,
    jobs: int = 1,
) -> dict[str, np.ndarray]:
    """term -> programs x (lists + 1), -Oz last, NaN where the module could not be read (the list then fails)."""
    if "perf" in objective.probed_terms:
        raise InputError("labels hold no runtimes and training cannot run every program: drop the perf term")
    if "security" not in objective.probed_terms:
        return {}
    oz = load_baselines(toolchain, ("Oz",))["Oz"]
    pipelines = [*(tuned_pipeline(passes, catalogue) for passes in labels.lists), oz.pipeline]

    def row(index: int) -> list[float]:
        program = labels.programs[index]
        meter = SecurityMeter(toolchain, store, benchmark_module(toolchain, program.uri), oz.options)
        values = (meter.value(pipeline) for pipeline in pipelines)
        return [np.nan if value is None else value for value in values]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return {"security": np.array(list(pool.map(row, range(len(labels.programs)))), dtype=float)}
