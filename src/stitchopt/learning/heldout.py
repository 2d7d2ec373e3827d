"""The evaluation protocol of learned flag tuning on held-out programs, with the baselines in the same table.

Per program every coreset list, -Oz, -Os and -O3 are measured once (through the evaluation cache), so each
method is read off the same measurements (a list more than 10% below -Oz on a program counts as failed there
unless the program's IR guards pass): `static` (the top-1 list alone, zero-shot), `static + backup` (top-1
and -Oz compiled, the smaller kept), `fast` (the clang plugin's one pipeline: static's list where predicted
past the model's learned margin, else -Oz; models with a margin), `jit k` (the top-k lists and -Oz), `best
single list` (the coreset's first list, the best one list for the whole training set, with the backup: LLM
Compiler's broadcast baseline), the oracle over the coreset, and the autotuner when its run record for the same
programs is given. `seeded search k=K b=B` (the top K lists seeding a local search of B evaluations,
`apply.search`) compiles what it proposes; every best it keeps has passed the program's IR guards.

A win of 10% or more without run evidence (`verification`) counts as -Oz in the method table and is reported
apart, per method, with the geomean it would give if counted.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from stitchopt.apply.choose import Choice
from stitchopt.apply.modes import SEARCH_K
from stitchopt.apply.search import search_ranked
from stitchopt.core import EvalResult, IRModule
from stitchopt.datasets.benchmarks import Benchmark, select_benchmarks
from stitchopt.errors import DatasetError
from stitchopt.evaluation.comparison import geomean
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.labels.measure import distrust_suspicious
from stitchopt.learning.train import size_errors
from stitchopt.learning.verification import RunEvidence, counted, unverified_wins
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.list_model import Proposer, RankedList
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.frontend import load_module, module_language
from stitchopt.tune.record import RunRecord

DEFAULT_KS = (5, 10)
SEARCH_KS = (SEARCH_K,)  # seeded search rows: one per (k, budget)
SEARCH_BUDGETS = (50,)
FAST = "fast (one pipeline)"  # the clang plugin's policy: static's list or -Oz, never both
CLANG_LEVELS = ("-Os", "-O3")  # clang's own levels: baselines, not wins of ours to verify


def fast_ratio(built: float) -> float:
    """`fast`'s size ratio to -Oz from its list's (1.0 for -Oz): a list that fails makes the plugin build -Oz."""
    return built if math.isfinite(built) else 1.0


@dataclass(frozen=True)
class ProgramOutcome:
    uri: str
    oz_size: int
    ratios: dict[str, float]  # method -> object size / -Oz size, as measured
    compilations: dict[str, int]
    inference_ms: float
    package: str = ""  # evaluations written before it: empty
    pipelines: dict[str, str] = field(default_factory=dict)  # method -> the pipeline behind its win, where known
    unverified: tuple[str, ...] = ()  # methods whose ratio is a win without run evidence (`verification`)

    @property
    def counted_ratios(self) -> dict[str, float]:
        """The ratios the method table uses: unverified wins as -Oz."""
        return counted(self.ratios, self.unverified)


@dataclass(frozen=True)
class MethodSummary:
    method: str
    geomean_change: float  # -0.05: 5% smaller than -Oz
    improved: float  # fraction of programs smaller than -Oz
    unchanged: float
    regressed: float
    compilations: float | None  # mean per program; None for the autotuner (its budget, not compilations)
    of_autotuner: float | None  # fraction of the autotuner's geomean gain
    unverified: int = 0  # programs whose win was counted as -Oz for want of run evidence
    geomean_if_counted: float | None = None  # geomean_change had those wins counted; None without any


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
    autotuner: Mapping[str, tuple[float, str]] | None = None,
    proposers: Mapping[str, Proposer] | None = None,
    on_program: Callable[[int], None] | None = None,
    verified: RunEvidence | None = None,
    search_ks: Sequence[int] = SEARCH_KS,
    search_budgets: Sequence[int] = SEARCH_BUDGETS,
) -> Evaluation:
    """`autotuner` maps a benchmark path (as in a `stitchopt tune` run record) to its size ratio to -Oz and its
    pipeline; `proposers` are other methods that propose one list per program (e.g. LLM Compiler), each
    measured with the -Oz backup as "<name> + backup"; `verified` is the run evidence that lets large wins
    count."""
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
        ranked = model.rank_features(features, [module_language(module)])[0]
        inference_ms = 1000 * (time.perf_counter() - start)
        requests = [EvalRequest(module, b.pipeline, b.options) for b in baselines]
        requests += [EvalRequest(module, p, options) for p in pipelines]
        results = evaluator.evaluate_many(requests)
        o0, oz, os_, o3 = results[:4]
        if not (oz.ok and oz.size_bytes):
            skipped[benchmark.uri] = f"-Oz {oz.status.value}" if not oz.ok else "-Oz gives an empty object"
            continue
        measured = dict(
            zip(model.lists, distrust_suspicious(evaluator, module, results[4:], oz.size_bytes), strict=True)
        )
        ratio: dict[PassNames | None, float] = {None: 1.0}
        for passes, result in measured.items():
            ratio[passes] = result.size_bytes / oz.size_bytes if result.ok and result.size_bytes else math.inf
        ratios, compilations = _methods([e.passes for e in ranked], model.lists[0], ratio, ks)
        if model.fast is not None:  # without a margin the plugin's fast is static + backup, already a row
            ratios[FAST] = fast_ratio(ratio[model.fast_choices(features, [ranked])[0]])
            compilations[FAST] = 1
        behind = _lists_behind(ratios, [e.passes for e in ranked], ratio, catalogue)
        for name, result in zip(CLANG_LEVELS, (os_, o3), strict=True):
            ratios[name] = result.size_bytes / oz.size_bytes if result.ok and result.size_bytes else math.inf
            compilations[name] = 1
        for name, choice in _seeded(evaluator, catalogue, module, ranked, search_ks, search_budgets):
            ratios[name], compilations[name] = choice.size_bytes / oz.size_bytes, choice.compilations
            if choice.passes is not None:
                behind[name] = choice.pipeline
        if autotuner is not None and str(benchmark.path) in autotuner:
            tuned, behind["autotuner"] = autotuner[str(benchmark.path)]
            ratios["autotuner"] = min(tuned, 1.0)
        for name, propose in (proposers or {}).items():
            proposed = propose(module)
            ratios[f"{name} + backup"], compilations[f"{name} + backup"] = _proposed(
                evaluator, catalogue, module, proposed, oz
            )
            if proposed:
                behind[f"{name} + backup"] = tuned_pipeline(proposed, catalogue)
        outcome = ProgramOutcome(
            benchmark.uri, oz.size_bytes, ratios, compilations, inference_ms, benchmark.package, behind
        )
        outcomes.append(judged(outcome, verified or RunEvidence(), (benchmark.uri, str(benchmark.path))))
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
    (trusted,) = distrust_suspicious(evaluator, module, [result], oz.size_bytes)
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


def _seeded(
    evaluator: Evaluator,
    catalogue: Catalogue,
    module: IRModule,
    ranked: Sequence[RankedList],
    ks: Sequence[int],
    budgets: Sequence[int],
) -> list[tuple[str, Choice]]:
    """Seeded search for each (k, budget), from the ranking the other methods read."""
    return [
        (f"seeded search k={k} b={budget}", search_ranked(evaluator, catalogue, module, ranked, k=k, budget=budget))
        for k in ks
        for budget in budgets
    ]


def _lists_behind(
    ratios: Mapping[str, float],
    lists: Sequence[PassNames | None],
    ratio: Mapping[PassNames | None, float],
    catalogue: Catalogue,
) -> dict[str, str]:
    """The pipeline behind each model-driven method's win: each such ratio is the smallest over some ranked
    lists, so the first ranked list with exactly that ratio is the one the method builds."""
    behind = {}
    for method, value in ratios.items():
        passes = next((p for p in lists if p is not None and ratio[p] == value), None)
        if value < 1.0 and passes is not None:
            behind[method] = tuned_pipeline(passes, catalogue)
    return behind


def judged(outcome: ProgramOutcome, evidence: RunEvidence, programs: Iterable[str]) -> ProgramOutcome:
    """`outcome` with its unverified wins named; `programs` are the names evidence may use for it (its URI, its
    file). Clang's own levels are not judged."""
    ratios = {m: r for m, r in outcome.ratios.items() if m not in CLANG_LEVELS}
    return replace(outcome, unverified=unverified_wins(ratios, outcome.pipelines, programs, evidence))


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
    """Per method over all programs, unverified wins counted as -Oz (and, apart, what counting them would give);
    the share of the autotuner's gain is taken over the programs it ran on."""
    if not outcomes:
        return ()
    methods = list(dict.fromkeys(m for o in outcomes for m in o.ratios))
    headline = [o.counted_ratios for o in outcomes]
    tuned = [h for h in headline if "autotuner" in h]
    autotuner_gain = _gain([h["autotuner"] for h in tuned])
    summaries = []
    for method in methods:
        ratios = np.array([h[method] for h in headline if method in h])
        compilations = [o.compilations[method] for o in outcomes if method in o.compilations]
        share = None
        if autotuner_gain and method != "autotuner":
            share = (_gain([h[method] for h in tuned if method in h]) or 0.0) / autotuner_gain
        unverified = sum(method in o.unverified for o in outcomes)
        measured = [o.ratios[method] for o in outcomes if method in o.ratios]
        summaries.append(
            MethodSummary(
                method,
                -(_gain(list(ratios)) or 0.0) if ratios.size else 0.0,
                float((ratios < 1).mean()),
                float((ratios == 1).mean()),
                float((ratios > 1).mean()),
                float(np.mean(compilations)) if compilations else None,
                share,
                unverified,
                -(_gain(measured) or 0.0) if unverified else None,
            )
        )
    return tuple(summaries)


def restricted(evaluation: Evaluation, keep: Callable[[ProgramOutcome], bool]) -> Evaluation:
    """The evaluation over the programs `keep` accepts, its method table computed again over them (e.g. without
    numpy, whose few large wins carry the geomean)."""
    programs = tuple(o for o in evaluation.programs if keep(o))
    return replace(evaluation, programs=programs, methods=summarize(programs))


def without_packages(evaluation: Evaluation, packages: Iterable[str]) -> Evaluation:
    excluded = set(packages)
    return restricted(evaluation, lambda outcome: outcome.package not in excluded)


def _gain(ratios: list[float]) -> float | None:
    """Geomean reduction vs -Oz (positive: smaller; a failed build counts as doubling), None without data."""
    mean = geomean(r if math.isfinite(r) else 2.0 for r in ratios)
    return None if mean is None else 1.0 - mean


def autotuner_answers(record: RunRecord) -> dict[str, tuple[float, str]]:
    """Program path -> the autotuner's size ratio to -Oz and its pipeline, from a `stitchopt tune` run record."""
    return {
        p.program: (p.size_bytes / p.oz_size_bytes, p.pipeline)
        for p in record.programs
        if p.size_bytes is not None and p.oz_size_bytes
    }


def evaluate_benchmarks(
    evaluator: Evaluator,
    benchmarks: Sequence[Benchmark],
    model_dir: Path,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    search_ks: Sequence[int] = SEARCH_KS,
    autotuner: Path | None = None,
    llm_compiler: Path | None = None,
    verified: Path | None = None,
) -> Evaluation:
    """`evaluate_model` with the model, the autotuner's run record, LLM Compiler and the run evidence read from
    their files."""
    catalogue = load_catalogue(evaluator.toolchain)
    model = FlagModel.from_pretrained(model_dir, catalogue)
    answers = autotuner_answers(RunRecord.load(autotuner)) if autotuner is not None else None
    evidence = RunEvidence.load(verified) if verified is not None else None
    proposers: dict[str, Proposer] = {}
    if llm_compiler is not None:
        from stitchopt.lifting.flag_tuning import llm_compiler_proposer  # the lift extra, only when asked
        from stitchopt.lifting.llm_compiler import LLMCompiler

        proposers["LLM Compiler"] = llm_compiler_proposer(evaluator.toolchain, catalogue, LLMCompiler(llm_compiler))
    return evaluate_model(
        evaluator,
        catalogue,
        model,
        benchmarks,
        ks=ks,
        search_ks=search_ks,
        autotuner=answers,
        proposers=proposers,
        verified=evidence,
    )


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
    search_ks: Sequence[int] = SEARCH_KS,
    autotuner: Path | None = None,
    llm_compiler: Path | None = None,
    verified: Path | None = None,
    packages: Collection[str] = (),
) -> tuple[Evaluation, str]:
    """`evaluate_model` on one split of a built dataset (round-robin over packages; only `packages` when given);
    returns a title too."""
    chosen = select_benchmarks(dataset, [split], max_ir_kb=max_ir_kb, per_package=per_package)
    if packages:
        chosen = [b for b in chosen if b.package in packages]
        if missing := set(packages) - {b.package for b in chosen}:
            raise DatasetError(f"no {split}-split units of {', '.join(sorted(missing))} in {dataset} (built here?)")
    chosen = chosen[: programs or None]
    evaluation = evaluate_benchmarks(
        evaluator,
        chosen,
        model_dir,
        ks=ks,
        search_ks=search_ks,
        autotuner=autotuner,
        llm_compiler=llm_compiler,
        verified=verified,
    )
    title = (
        f"{dataset} split={split}: {len(evaluation.programs)} programs from {len({b.package for b in chosen})} packages"
    )
    return replace(evaluation, sources={**evaluation.sources, "dataset": title}), title


def evaluate_paths(
    evaluator: Evaluator,
    paths: Sequence[Path],
    model_dir: Path,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    autotuner: Path | None = None,
    llm_compiler: Path | None = None,
    verified: Path | None = None,
) -> tuple[Evaluation, str]:
    """`evaluate_model` on the user's own C/C++/IR files, each named by its path and grouped by its directory
    (its "package"); returns a title too."""
    chosen = [Benchmark(str(path), path, path.resolve().parent.name, "") for path in paths]
    evaluation = evaluate_benchmarks(
        evaluator, chosen, model_dir, ks=ks, autotuner=autotuner, llm_compiler=llm_compiler, verified=verified
    )
    directories = sorted({str(path.parent) for path in paths})
    where = directories[0] if len(directories) == 1 else f"{len(directories)} directories"
    title = f"{len(evaluation.programs)} programs in {where}"
    return replace(evaluation, sources={**evaluation.sources, "inputs": title}), title
