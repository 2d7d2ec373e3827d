"""A detector's risks on what calibrates it (`security.calibration`): every function of benign programs, read as
`security check` reads them, and the bad and good functions of Juliet's test split, families it never saw."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.juliet import (
    extract_support,
    family_splits,
    juliet_functions,
    juliet_path,
    read_cases,
    select_cases,
)
from stitchopt.features.base import FeatureCache
from stitchopt.security.functions import program_functions
from stitchopt.security.model import DetectorModel
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module


def program_risks(
    toolchain: Toolchain, detector: DetectorModel, programs: Sequence[Path], cache: FeatureCache | None = None
) -> list[np.ndarray]:
    """Per program, the risk of every function it defines (each cut out alone, as `security check` reads it)."""
    functions = [[f.bitcode for f in program_functions(toolchain, load_module(toolchain, path))] for path in programs]
    risks = np.array([found.risk for found in detector.predict(toolchain, [b for f in functions for b in f], cache)])
    ends = np.cumsum([len(f) for f in functions])
    return [risks[end - len(f) : end] for f, end in zip(functions, ends, strict=True)]


def juliet_test_risks(
    toolchain: Toolchain,
    detector: DetectorModel,
    data_dir: Path | None,
    per_family: int,
    scratch: Path,
    store: EvaluationStore | None = None,
    jobs: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """The risks of the bad and the good functions of Juliet's test split (`per_family` cases per family)."""
    path = juliet_path(data_dir)
    cases = read_cases(path)
    chosen = select_cases(cases, ["test"], per_family)
    support = extract_support(path.parent, scratch)
    functions = juliet_functions(toolchain, chosen, family_splits(cases), support, store, jobs)
    cache = FeatureCache(store) if store is not None else None
    risks = np.array([found.risk for found in detector.predict(toolchain, [f.bitcode for f in functions], cache)])
    bad = np.array([f.label == "bad" for f in functions])
    return risks[bad], risks[~bad]
