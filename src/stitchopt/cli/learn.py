"""`stitchopt train | predict | optimize`: learned flag tuning from the command line."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from stitchopt.cli.options import (
    AddressOption,
    BackendOption,
    CacheDirOption,
    DataDirOption,
    FailIfNoGainOption,
    JobsOption,
    JsonOption,
    KOption,
    LlvmOption,
    ModelOption,
    ModeOption,
    NoValidateOption,
    ValidateLimitOption,
    ValidateOption,
    console,
    exit_if_no_gain,
    open_evaluator,
    open_store,
    output_option,
    parse_objective,
    refuse_ignored,
    run_arguments,
    run_option,
    status_console,
    validation_choice,
)
from stitchopt.core import IRModule
from stitchopt.datasets.benchmarks import program_path
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.hotpath.predict import DEFAULT_HOTNESS_SOURCE, predicted_hot_functions
from stitchopt.learning.hybrid import hot_functions, optimize_hybrid, profile_counts
from stitchopt.learning.kinds import load_model
from stitchopt.learning.optimize import MODES, choose
from stitchopt.learning.seeded_search import DEFAULT_BUDGET as SEARCH_BUDGET
from stitchopt.learning.seeded_search import DEFAULT_K as SEARCH_K
from stitchopt.learning.seeded_search import seeded_search
from stitchopt.learning.train import JIT_K, TrainReport, train_from_labels
from stitchopt.models.coreset import DEFAULT_K
from stitchopt.models.label_shards import load_matrix
from stitchopt.models.list_model import OZ, ListModel, RankedList
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import is_source, load_module, write_object
from stitchopt.tune.acceptance import ListValidation

OPTIMIZE_MODES = (*MODES, "search", "hybrid")


def train_command(
    ctx: typer.Context,
    labels_file: Annotated[
        Path, typer.Argument(help="A labels file (`stitchopt labels pool`) or a label directory (`labels broadcast`).")
    ],
    output: Annotated[Path, output_option("Model directory to write.")],
    coreset_size: Annotated[int, typer.Option(help="Lists the model keeps (its coreset).")] = DEFAULT_K,
    objective: Annotated[
        str,
        typer.Option(
            help="What the model minimizes, relative to -Oz: size, instructions, compile-time, security terms "
            "(security: one opt -S per labeled program and pool list, cached)."
        ),
    ] = "size=1",
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    no_validate: NoValidateOption = False,
    data_dir: DataDirOption = None,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Choose the coreset (each list validated, unless --no-validate), compare the best single list, the ranker and
    the chooser by package-grouped cross-validation, fit the winner and the size model, and save the model
    directory."""
    validation = validation_choice(ctx, validate, validate_limit, data_dir, no_validate)
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        model, report, skipped = train_from_labels(
            toolchain,
            catalogue,
            load_matrix(labels_file),
            k=coreset_size,
            store=evaluator.store,
            validation=validation.open(evaluator),
            objective=parse_objective(objective),
            jobs=evaluator.jobs,
        )
    model.save_pretrained(output)
    coreset = report.coreset
    curve = ", ".join(f"K={i + 1}: {100 * c:+.2f}%" for i, c in enumerate(coreset.curve) if i + 1 in (1, 5, 10, 20, 50))
    mape = ", ".join(f"{name} {value:.3f}" for name, value in report.size_mape.items())
    status_console.print(
        f"model -> {output}: {len(model.lists)} lists ({len(coreset.rejected)} rejected by validation), "
        f"{model.trained_on['programs']} programs ({len(skipped)} skipped)\n"
        f"coreset coverage (geomean vs -Oz, training programs): {curve}; pool {100 * coreset.pool_best:+.2f}%\n"
        f"cross-validated static + backup: {100 * report.cross_validated:+.2f}% with {report.hyper_parameters}\n"
        f"{_candidates(report)}"
        f"size model MAPE (in-sample): {mape}",
        highlight=False,
    )


def _candidates(report: TrainReport) -> str:
    """What cross-validation compared (held-out folds, geomean vs -Oz), the chosen first."""
    return "".join(
        f"  {c.name}: static {100 * c.static:+.2f}% ({100 * c.regressed:.0f}% of programs larger), "
        f"static + backup {100 * c.static_backup:+.2f}%, jit k={JIT_K} {100 * c.jit:+.2f}%\n"
        for c in report.candidates
    )


def predict_command(
    program: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    model_dir: ModelOption = None,
    top: Annotated[int, typer.Option(help="Show this many lists.")] = 10,
    json_output: JsonOption = False,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Rank the model's lists for one program: `-passes=` strings with predicted sizes.

    The first is what static mode builds (the model's choice for this program, or -Oz); the rest follow in the
    order jit mode tries them. Predicted changes are the regression's, whichever way the model chooses."""
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir or DEFAULT_MODEL_DIR, catalogue)
    module = load_module(toolchain, program_path(program))
    with open_store(cache_dir) as store:
        start = time.perf_counter()
        ranked = cached_rank(model, toolchain, module, store)
        elapsed_ms = 1000 * (time.perf_counter() - start)
    print_ranking(program, ranked[:top], catalogue, elapsed_ms, json_output)


def print_ranking(
    program: str, ranked: list[RankedList], catalogue: Catalogue, elapsed_ms: float, json_output: bool
) -> None:
    """Ranked lists as `-passes=` strings with predicted changes (and sizes when the model predicts them)."""
    rows = [
        {
            "rank": i + 1,
            "predicted_change_vs_oz": e.predicted_ratio - 1,
            "predicted_size_bytes": e.predicted_size,
            "passes": OZ if e.passes is None else tuned_pipeline(e.passes, catalogue),
        }
        for i, e in enumerate(ranked)
    ]
    if json_output:
        print(json.dumps({"program": program, "inference_ms": elapsed_ms, "ranked": rows}, indent=1))
        return
    for i, e in enumerate(ranked):
        size = "" if e.predicted_size is None else f"~{e.predicted_size:,.0f} B  "
        passes = OZ if e.passes is None else "-passes=" + tuned_pipeline(e.passes, catalogue)
        console.print(
            f"{i + 1:>3}  {100 * (e.predicted_ratio - 1):+6.2f}%  {size}{passes}", highlight=False, soft_wrap=True
        )
    console.print(f"[dim]inference {elapsed_ms:.1f} ms[/dim]")


def optimize_command(
    ctx: typer.Context,
    program: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    output: Annotated[Path, output_option("Object file to write.")],
    mode: ModeOption = "static",
    k: KOption = 5,
    budget: Annotated[
        int, typer.Option(min=1, help="search: evaluations, the seeds included (-Oz is compiled besides).")
    ] = SEARCH_BUDGET,
    validate: ValidateOption = None,
    validate_limit: ValidateLimitOption = None,
    hot: Annotated[str, typer.Option(help="hybrid: hot functions, comma-separated.")] = "",
    run: Annotated[str, run_option("hybrid: profile this run to find the hot functions")] = "",
    hot_from: Annotated[
        str,
        typer.Option(
            help="hybrid without --hot or --run: predict hot functions with the hot-path 'model' or "
            "LLVM's 'static' block frequencies."
        ),
    ] = DEFAULT_HOTNESS_SOURCE,
    data_dir: DataDirOption = None,
    model_dir: ModelOption = None,
    fail_if_no_gain: FailIfNoGainOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Write the object file built with the model's choice (never larger than -Oz; with --validate, only lists that
    pass the suites)."""
    if mode not in OPTIMIZE_MODES:
        raise InputError(f"unknown mode {mode!r}: use one of {', '.join(OPTIMIZE_MODES)}")
    if mode != "hybrid":
        refuse_ignored(ctx, ("hot", "run", "hot_from"), "with --mode hybrid")
    if mode == "static":
        refuse_ignored(ctx, ("k",), "with --mode jit, search or hybrid")
    if mode != "search":
        refuse_ignored(ctx, ("budget",), "with --mode search")
    elif getattr(ctx.get_parameter_source("k"), "name", None) == "DEFAULT":  # not given: search's own default
        k = SEARCH_K
    if hot or run:
        refuse_ignored(ctx, ("hot_from",), "when hot functions are predicted (without --hot or --run)")
    validation = validation_choice(ctx, validate, validate_limit, data_dir, no_validate=None)
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir or DEFAULT_MODEL_DIR, catalogue)
    path = program_path(program)
    module = load_module(toolchain, path)
    names = _hot_names(toolchain, module, path, hot, run, hot_from) if mode == "hybrid" else []
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        checks = validation.open(evaluator)
        if mode == "hybrid":
            exit_if_no_gain(
                fail_if_no_gain, _optimize_hybrid(evaluator, catalogue, model, module, names, output, k, checks)
            )
            return
        if mode == "search":
            choice = seeded_search(evaluator, catalogue, model, module, k=k, budget=budget, validation=checks)
        else:
            choice = choose(evaluator, catalogue, model, module, mode=mode, k=k, validation=checks)
        write_object(toolchain, module, choice.pipeline, evaluator.baselines["Oz"].options, output)
    change = 100 * (choice.size_bytes / choice.oz_size_bytes - 1)
    console.print(
        f"{output}: {choice.size_bytes:,} B ({change:+.2f}% vs -Oz {choice.oz_size_bytes:,} B), "
        f"{choice.compilations} compilations, inference {choice.inference_ms:.1f} ms\n"
        f"{'-Oz (backup)' if choice.passes is None else '-passes=' + choice.pipeline}",
        highlight=False,
        soft_wrap=True,
    )
    _show_notes(choice.notes)
    exit_if_no_gain(fail_if_no_gain, choice.passes is not None)


def _show_notes(notes: tuple[str, ...]) -> None:
    for note in notes:
        status_console.print(f"[dim]{note}[/dim]", highlight=False)


def _hot_names(toolchain: Toolchain, module: IRModule, source: Path, hot: str, run: str, hot_from: str) -> list[str]:
    """The functions hybrid mode tunes one by one: given, profiled, or else predicted."""
    if hot and run:
        raise InputError("give the hot functions (--hot f,g) or a command to profile (--run), not both")
    if run and not is_source(source):
        raise InputError(f"{source}: --run profiles a C/C++ source; give --hot for IR files")
    if hot or run:
        return hot.split(",") if hot else hot_functions(profile_counts(toolchain, source, run_arguments(run)))
    names = predicted_hot_functions(toolchain, module, hot_from)
    status_console.print(
        f"hot functions predicted by the {hot_from} estimate (no profile given): {', '.join(names) or 'none'}",
        highlight=False,
    )
    return names


def _optimize_hybrid(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    module: IRModule,
    names: list[str],
    output: Path,
    k: int,
    validation: ListValidation | None,
) -> bool:
    """Writes and shows the hybrid build; whether its parts beat -Oz (else the object is -Oz's)."""
    data, choice = optimize_hybrid(evaluator, catalogue, model, module, names, k, validation)
    output.write_bytes(data)
    change = 100 * (choice.size_bytes / choice.oz_size_bytes - 1)
    kept = "per-function parts" if choice.split_kept else "-Oz (backup)"
    console.print(
        f"{output}: {choice.size_bytes:,} B ({change:+.2f}% vs -Oz {choice.oz_size_bytes:,} B), "
        f"{choice.compilations} compilations, {kept}",
        highlight=False,
        soft_wrap=True,
    )
    for part, pipeline in choice.lists.items():
        console.print(f"  {part}: -passes={pipeline}", highlight=False, soft_wrap=True)
    _show_notes(choice.notes)
    return choice.split_kept
