"""The gain of seeded search against the compilations it costs, beside the autotuner's at the same numbers.

One seeded search per (program, k) runs to the largest budget, and its best-so-far curve gives every smaller
budget: the strategy is seeded and proposes in fixed batches, so a search stopped after b evaluations would have
tried exactly the first b lists of the longer one. A budget of b evaluations costs b + 1 compilations (-Oz
besides); budget 0 is static + backup (the model's top list, the first seed, and -Oz). The autotuner's row is read
off the best-so-far curves its run record keeps, after the same numbers of evaluations. `curve_rows` is its table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stitchopt.apply.search import search_ranked
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import Benchmark
from stitchopt.errors import InputError
from stitchopt.evaluation.comparison import geomean
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.models.list_model import ListModel
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import Catalogue
from stitchopt.reports.tables import Rows
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.record import RunRecord

CURVE_KS = (1, 5, 10, 50)
CURVE_BUDGETS = (0, 10, 25, 50, 100, 300)
AUTOTUNER = "autotuner"


@dataclass(frozen=True)
class GainCurve:
    """Geomean size change vs -Oz (-0.05: 5% smaller) of each method after each budget of evaluations."""

    budgets: tuple[int, ...]
    changes: dict[str, tuple[float, ...]]  # method -> one change per budget
    programs: dict[str, int]  # method -> programs measured


def seeded_search_curve(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    benchmarks: Sequence[Benchmark],
    *,
    ks: Sequence[int] = CURVE_KS,
    budgets: Sequence[int] = CURVE_BUDGETS,
    seed: int = 0,
    autotuner: RunRecord | None = None,
) -> GainCurve:
    """Seeded search's curve for each k over `benchmarks`, and the autotuner's over those of them its run record
    (of a size objective, with curves) covers."""
    ratios: dict[str, list[list[float]]] = {f"seeded search k={k}": [] for k in ks}
    longest = max([1, *budgets])  # at least one evaluation: the top list, for budget 0
    for benchmark in benchmarks:
        module = load_module(evaluator.toolchain, benchmark.path)
        ranked = cached_rank(model, evaluator.toolchain, module, evaluator.store)
        for k in ks:
            choice = search_ranked(evaluator, catalogue, module, ranked, k=k, budget=longest, seed=seed)
            static = choice.curve[0] if ranked[0].passes is not None else 1.0  # the top list is the first seed
            ratios[f"seeded search k={k}"].append(
                [static if budget == 0 else choice.curve[min(budget, len(choice.curve)) - 1] for budget in budgets]
            )
    if autotuner is not None:
        ratios[AUTOTUNER] = _recorded(autotuner, {str(b.path) for b in benchmarks}, budgets)
    changes = {
        method: tuple((geomean(column) or 1.0) - 1.0 for column in zip(*rows, strict=True))
        for method, rows in ratios.items()
        if rows
    }
    return GainCurve(tuple(budgets), changes, {method: len(rows) for method, rows in ratios.items() if rows})


def curve_rows(curve: GainCurve, title: str) -> Rows:
    """One row per method: its geomean change vs -Oz after each budget of b evaluations, which cost b + 1
    compilations (b=0: static + backup, or -Oz alone for the autotuner). Wins are as measured and guarded, not
    judged by run evidence."""
    rows = [
        [method, str(curve.programs[method]), *(f"{100 * change:+.2f}%" for change in changes)]
        for method, changes in curve.changes.items()
    ]
    headers = ["method", "programs", *(f"b={budget}" for budget in curve.budgets)]
    return Rows(f"{title}: geomean vs -Oz after b evaluations (b + 1 compilations)", headers, rows)


def _recorded(record: RunRecord, programs: set[str], budgets: Sequence[int]) -> list[list[float]]:
    """Per program of `programs` with a recorded curve: its best score after each budget (-Oz before any
    improvement; a run that stopped earlier keeps its last best)."""
    if not Objective.parse(record.objective).size_only:
        raise InputError(f"the run record's objective is {record.objective}: the curve compares sizes (size=1)")
    return [
        [min((score for at, score in p.curve if at <= budget), default=1.0) for budget in budgets]
        for p in record.programs
        if p.program in programs and p.curve
    ]
