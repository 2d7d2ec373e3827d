"""A pass list side by side with clang's -O0, -Oz and -O3 on one program.

For a C/C++ source each baseline gets the IR of its own front end level, so the baselines equal what
`clang -O0/-Oz/-O3 -c` produce; the pass list runs on the -Oz front end's IR and is compared with -Oz.
For an IR file every row uses that same IR.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from stitchopt.core import EvalResult, IRModule
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.toolchain.baselines import REPORTED_BASELINES
from stitchopt.toolchain.frontend import is_source, load_module
from stitchopt.toolchain.llvm import FRONTEND_LEVEL

PASS_LIST_LABEL = "passes"


@dataclass(frozen=True)
class Comparison:
    name: str
    results: dict[str, EvalResult]  # "O0", "Oz", "O3" and, when given, "passes"
    pipeline: str | None = None

    def size_change_vs_oz(self, label: str) -> float | None:
        """Percent change in object size against -Oz (negative = smaller), None if either failed."""
        oz, other = self.results["Oz"].size_bytes, self.results[label].size_bytes
        if oz is None or other is None or oz == 0:
            return None
        return 100.0 * (other - oz) / oz


def load_levels(evaluator: Evaluator, path: Path, extra_args: Sequence[str] = ()) -> dict[str, IRModule]:
    """The IR each baseline starts from: one front end per level for sources, the file itself for IR."""
    toolchain = evaluator.toolchain
    if not is_source(path):
        module = load_module(toolchain, path)
        return dict.fromkeys(REPORTED_BASELINES, module)
    with ThreadPoolExecutor(max_workers=len(REPORTED_BASELINES)) as pool:
        modules = pool.map(lambda level: load_module(toolchain, path, extra_args, level=level), REPORTED_BASELINES)
        return dict(zip(REPORTED_BASELINES, modules, strict=True))


def compare(
    evaluator: Evaluator, path: Path, pipeline: str | None = None, extra_args: Sequence[str] = ()
) -> Comparison:
    return compare_many(evaluator, [path], pipeline, extra_args)[0]


def compare_many(
    evaluator: Evaluator, paths: Iterable[Path], pipeline: str | None = None, extra_args: Sequence[str] = ()
) -> list[Comparison]:
    """Evaluate all programs' rows in one batch, so every core is busy."""
    paths = list(paths)
    labels: list[tuple[int, str]] = []
    requests: list[EvalRequest] = []
    for program, path in enumerate(paths):
        modules = load_levels(evaluator, path, extra_args)
        for level in REPORTED_BASELINES:
            baseline = evaluator.baselines[level]
            labels.append((program, level))
            requests.append(EvalRequest(modules[level], baseline.pipeline, baseline.options))
        if pipeline is not None:
            labels.append((program, PASS_LIST_LABEL))
            requests.append(EvalRequest(modules[FRONTEND_LEVEL], pipeline, evaluator.baselines["Oz"].options))
    per_program: list[dict[str, EvalResult]] = [{} for _ in paths]
    for (program, label), result in zip(labels, evaluator.evaluate_many(requests), strict=True):
        per_program[program][label] = result
    return [Comparison(path.stem, rows, pipeline) for path, rows in zip(paths, per_program, strict=True)]


def geomean(values: Iterable[float]) -> float | None:
    positive = [v for v in values if v > 0]
    if not positive:
        return None
    return math.exp(sum(math.log(v) for v in positive) / len(positive))
