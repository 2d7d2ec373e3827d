"""The evaluation protocol of learned flag tuning on held-out programs, with the baselines in the same table.

Per program every coreset list, -Oz, -Os and -O3 are measured once (through the evaluation cache), so each
method is read off the same measurements (a list more than 10% below -Oz on a program counts as failed there
unless the program's IR guards pass): `static` (the top-1 list alone, zero-shot), `static + backup` (top-1
and -Oz compiled, the smaller kept), `jit k` (the top-k lists and -Oz), `best single list` (the coreset's first
list, the best one list for the whole training set, with the backup: LLM Compiler's broadcast baseline), the
oracle over the coreset, and the autotuner when its run record for the same programs is given.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from stitchopt.core import EvalResult, IRModule
from stitchopt.datasets.benchmarks import Benchmark, select_benchmarks
from stitchopt.evaluation.comparison import geomean
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.learning.labels import distrust_suspicious
from stitchopt.learning.train import size_errors
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.list_model import Proposer
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.record import RunRecord

DEFAULT_KS = (5, 10)


@dataclass(frozen=True)
class ProgramOutcome:
    uri: str
    oz_size: int
    ratios: dict[str, float]  # method -> object size / -Oz size
    compilations: dict[str, int]
    inference_ms: float


@dataclass(frozen=True)
class MethodSummary:
    method: str
    geomean_change: float  # -0.05: 5% smaller than -Oz
    improved: float  # fraction of programs smaller than -Oz
    unchanged: float
    regressed: float
    compilations: float | None  # mean per program; None for the autotuner (its budget, not compilations)
    of_autotuner: float | None  # fraction of the autotuner's geomean gain


@dataclass(frozen=True)
class Evaluation:
    programs: tuple[ProgramOutcome, ...]
    methods: tuple[MethodSummary, ...]
    size_mape: dict[str, float]
    inference_ms_median: float
    inference_ms_max: float
    skipped: dict[str, str] = field(default_factory=dict)  # uri -> why (e.g. -Oz failed)
    sources: dict[str, str] = field(default_factory=dict)  # toolchain, catalogue, model, dataset identities


def evaluate_model(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: FlagModel,
    benchmarks: Sequence[Benchmark],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    autotuner: dict[str, float] | None = None,
    proposers: Mapping[str, Proposer] | None = None,
    on_program: Callable[[int], None] | None = None,
) -> Evaluation:
    """`autotuner` maps a benchmark path (as in a `stitchopt tune` run record) to its size ratio to -Oz;
    `proposers` are other methods that propose one list per program (e.g. LLM Compiler), each measured with
    the -Oz backup as "<name> + backup"."""
    extra = load_baselines(evaluator.toolchain, ("Os",))["Os"]
    baselines = [evaluator.baselines["O0"], evaluator.baselines["Oz"], extra, evaluator.baselines["O3"]]
    options = evaluator.baselines["Oz"].options
    pipelines = [tuned_pipeline(passes, catalogue) for passes in model.lists]
    outcomes: list[ProgramOutcome] = []
    skipped: dict[str, str] = {}
    predicted_sizes, actual_sizes = [], []
    for index, benchmark in enumerate(benchmarks):
        module = load_module(evaluator.toolchain, benchmark.path)
        start = time.perf_counter()
        features = model.features(evaluator.toolchain, module)
        ranked = model.rank_features(features)[0]
        inference_ms = 1000 * (time.perf_counter() - start)
        requests = [EvalRequest(module, b.pipeline, b.options) for b in baselines]
        requests += [EvalRequest(module, p, options) for p in pipelines]
        results = evaluator.evaluate_many(requests)
        o0, oz, os_, o3 = results[:4]
        if not (oz.ok and oz.size_bytes):
            skipped[benchmark.uri] = f"-Oz {oz.status.value}"
            continue
        measured = dict(zip(model.lists, distrust_suspicious(evaluator, module, results[4:], oz), strict=True))
        ratio: dict[PassNames | None, float] = {None: 1.0}
        for passes, result in measured.items():
            ratio[passes] = result.size_bytes / oz.size_bytes if result.ok and result.size_bytes else math.inf
        ratios, compilations = _methods([e.passes for e in ranked], model.lists[0], ratio, ks)
        for name, result in (("-Os", os_), ("-O3", o3)):
            ratios[name] = result.size_bytes / oz.size_bytes if result.ok and result.size_bytes else math.inf
            compilations[name] = 1
        if autotuner is not None and str(benchmark.path) in autotuner:
            ratios["autotuner"] = min(autotuner[str(benchmark.path)], 1.0)
        for name, propose in (proposers or {}).items():
            ratios[f"{name} + backup"], compilations[f"{name} + backup"] = _proposed(
                evaluator, catalogue, module, propose(module), oz
            )
        outcomes.append(ProgramOutcome(benchmark.uri, oz.size_bytes, ratios, compilations, inference_ms))
        predicted_sizes.append(model.predict_sizes(features)[0])
        actual_sizes.append(_actual_sizes(o0, oz, o3, [measured[p] for p in model.lists]))
        if on_program is not None:
            on_program(index)
    errors = size_errors(np.array(predicted_sizes), np.array(actual_sizes)) if outcomes else {}
    times = [o.inference_ms for o in outcomes]
    sources = {"toolchain": evaluator.toolchain.identity, "catalogue": catalogue.identity, "model": model.identity}
    return Evaluation(
        tuple(outcomes),
        summarize(outcomes),
        errors,
        float(np.median(times)) if times else 0.0,
        max(times, default=0.0),
        skipped,
        sources,
    )


def _proposed(
    evaluator: Evaluator, catalogue: Catalogue, module: IRModule, passes: PassNames | None, oz: EvalResult
) -> tuple[float, int]:
    """A proposed list's size ratio to -Oz with the backup (failures and suspicious wins count as -Oz), and
    its compilations."""
    if not passes or oz.size_bytes is None:
        return 1.0, 1
    options = evaluator.baselines["Oz"].options
    result = evaluator.evaluate(module, tuned_pipeline(passes, catalogue), options)
    (trusted,) = distrust_suspicious(evaluator, module, [result], oz)
    ratio = trusted.size_bytes / oz.size_bytes if trusted.ok and trusted.size_bytes else 1.0
    return min(ratio, 1.0), 2


def _methods(
    lists: list[PassNames | None], first: PassNames, ratio: Mapping[PassNames | None, float], ks: Sequence[int]
) -> tuple[dict[str, float], dict[str, int]]:
    """Ratios to -Oz and compilations of each model-driven method, from the ranked lists (None: -Oz)."""
    top = lists[0]
    ratios = {"static": ratio[top], "static + backup": min(ratio[top], 1.0)}
    compilations = {"static": 1, "static + backup": 1 if top is None else 2}
    for k in ks:
        tried = lists[:k]
        ratios[f"jit k={k}"] = min([1.0, *(ratio[p] for p in tried)])
        compilations[f"jit k={k}"] = len(tried) + (None not in tried)
    ratios["best single list + backup"] = min(ratio[first], 1.0)
    compilations["best single list + backup"] = 2
    coreset = [p for p in lists if p is not None]
    oracle = f"coreset oracle (k={len(coreset)})"
    ratios[oracle] = min([1.0, *(ratio[p] for p in coreset)])
    compilations[oracle] = len(coreset) + 1
    return ratios, compilations


def _actual_sizes(o0: EvalResult, oz: EvalResult, o3: EvalResult, lists: list[EvalResult]) -> list[float]:
    """Measured values in the size model's target order (NaN where a build failed)."""

    def value(number: int | None) -> float:
        return float(number) if number else math.nan

    return [
        value(o0.size_bytes),
        value(o0.ir_instruction_count),
        value(oz.size_bytes),
        value(oz.ir_instruction_count),
        value(o3.size_bytes),
        *(value(r.size_bytes) for r in lists),
    ]


def summarize(outcomes: Sequence[ProgramOutcome]) -> tuple[MethodSummary, ...]:
    """Per method over all programs; the share of the autotuner's gain is taken over the programs it ran on."""
    if not outcomes:
        return ()
    methods = list(dict.fromkeys(m for o in outcomes for m in o.ratios))
    tuned = [o for o in outcomes if "autotuner" in o.ratios]
    autotuner_gain = _gain([o.ratios["autotuner"] for o in tuned])
    summaries = []
    for method in methods:
        ratios = np.array([o.ratios[method] for o in outcomes if method in o.ratios])
        compilations = [o.compilations[method] for o in outcomes if method in o.compilations]
        share = None
        if autotuner_gain and method != "autotuner":
            share = (_gain([o.ratios[method] for o in tuned if method in o.ratios]) or 0.0) / autotuner_gain
        summaries.append(
            MethodSummary(
                method,
                -(_gain(list(ratios)) or 0.0) if ratios.size else 0.0,
                float((ratios < 1).mean()),
                float((ratios == 1).mean()),
                float((ratios > 1).mean()),
                float(np.mean(compilations)) if compilations else None,
                share,
            )
        )
    return tuple(summaries)


def _gain(ratios: list[float]) -> float | None:
    """Geomean reduction vs -Oz (positive: smaller; a failed build counts as doubling), None without data."""
    mean = geomean(r if math.isfinite(r) else 2.0 for r in ratios)
    return None if mean is None else 1.0 - mean


def autotuner_ratios(record: RunRecord) -> dict[str, float]:
    """Program path -> the autotuner's size ratio to -Oz, from a `stitchopt tune` run record."""
    return {
        p.program: p.size_bytes / p.oz_size_bytes
        for p in record.programs
        if p.size_bytes is not None and p.oz_size_bytes
    }


def evaluate_dataset(
    evaluator: Evaluator,
    dataset: str,
    model_dir: Path,
    *,
    split: str = "test",
    programs: int = 0,
    max_ir_kb: float = 100.0,
    per_package: int | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    autotuner: Path | None = None,
    llm_compiler: Path | None = None,
) -> tuple[Evaluation, str]:
    """`evaluate_model` on one split of a built dataset (round-robin over packages); returns a title too."""
    chosen = select_benchmarks(dataset, [split], max_ir_kb=max_ir_kb, per_package=per_package, limit=programs or None)
    catalogue = load_catalogue(evaluator.toolchain)
    model = FlagModel.from_pretrained(model_dir, catalogue)
    ratios = autotuner_ratios(RunRecord.load(autotuner)) if autotuner is not None else None
    proposers: dict[str, Proposer] = {}
    if llm_compiler is not None:
        from stitchopt.lifting.flag_tuning import llm_compiler_proposer  # the lift extra, only when asked
        from stitchopt.lifting.llm_compiler import LLMCompiler

        proposers["LLM Compiler"] = llm_compiler_proposer(evaluator.toolchain, catalogue, LLMCompiler(llm_compiler))
    evaluation = evaluate_model(evaluator, catalogue, model, chosen, ks=ks, autotuner=ratios, proposers=proposers)
    packages = len({b.package for b in chosen})
    title = f"{dataset} split={split}: {len(evaluation.programs)} programs from {packages} packages"
    return replace(evaluation, sources={**evaluation.sources, "dataset": title}), title
