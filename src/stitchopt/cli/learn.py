"""`stitchopt train | predict | optimize`: learned flag tuning from the command line."""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from stitchopt.apply.modes import OPTIMIZE_MODES, RANKED_K, SEARCH_BUDGET, default_k, mode_named
from stitchopt.apply.optimize import hybrid_hot_functions, optimize
from stitchopt.cache.store import EvaluationStore
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
    TopOption,
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
    status_note,
    validation_choice,
)
from stitchopt.core import IRModule
from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR, program_path
from stitchopt.errors import InputError, PipelineError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.hotpath.predict import DEFAULT_HOTNESS_SOURCE
from stitchopt.labels.shards import load_matrix
from stitchopt.learning.kinds import load_model
from stitchopt.learning.train import JIT_K, TrainReport, train_from_labels
from stitchopt.models.coreset import DEFAULT_K
from stitchopt.models.list_model import OZ, RankedList
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import PassNames, split_top_level, tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import is_source, load_module, module_language
from stitchopt.toolchain.llvm import passes_option
from stitchopt.tune.acceptance import training_suites


def train_command(
    ctx: typer.Context,
    labels_file: Annotated[
        Path, typer.Argument(help="A labels file (`stitchopt labels pool`) or a label directory (`labels broadcast`).")
    ],
    output: Annotated[Path, output_option("Model directory to write.", directory=True)],
    coreset_size: Annotated[int, typer.Option(min=1, help="Lists the model keeps (its coreset).")] = DEFAULT_K,
    objective: Annotated[
        str,
        typer.Option(
            help="What the model minimizes, relative to -Oz: size, instructions, compile-time, security terms "
            "(security: one opt -S per labeled program and pool list, cached)."
        ),
    ] = "size=1",
    functions: Annotated[
        bool,
        typer.Option(
            help="Train on the label directory's function units (`<uri>#<function>`) too; --no-functions keeps "
            "the module units only, the kind of unit a build compiles."
        ),
    ] = True,
    finish: Annotated[
        str,
        typer.Option(
            help="Passes every list of the model ends with, comma-separated, e.g. mergefunc: passes that shrink "
            "some objects after any list and rarely grow one (docs/flag-tuning.md#finishing-passes)."
        ),
    ] = "",
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
    """Choose the coreset (each list validated, unless --no-validate: by default on HumanEval-X, else Csmith, and
    the demo programs), compare the best single list, the ranker and the chooser by package-grouped
    cross-validation, fit the winner and the size model, and save the model directory."""
    validation = validation_choice(ctx, validate, validate_limit, data_dir, no_validate)
    parsed_objective = parse_objective(objective)
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    finish_passes = finish_option(finish, catalogue)
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        labels = load_matrix(labels_file)
        if not functions:
            labels = labels.subset(lambda program: FUNCTION_SEPARATOR not in program.uri)
            if not labels.programs:
                raise InputError(f"{labels_file}: no module units to train on: drop --no-functions")
        if validation.enabled and not validation.suites:  # after every input is read: its note comes last
            validation = replace(validation, suites=training_suites(data_dir, status_note))
        model, report, skipped = train_from_labels(
            toolchain,
            catalogue,
            labels,
            k=coreset_size,
            store=evaluator.store,
            validation=validation.open(evaluator),
            objective=parsed_objective,
            jobs=evaluator.jobs,
            finish=finish_passes,
        )
    with_functions = any(FUNCTION_SEPARATOR in program.uri for program in labels.programs)
    model.trained_on["units"] = "modules and functions" if with_functions else "modules"
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


def finish_option(text: str, catalogue: Catalogue) -> PassNames:
    """`--finish`'s passes, each one this LLVM's catalogue has."""
    passes = tuple(split_top_level(text))
    if text.strip() and not passes:
        raise InputError(f"--finish {text!r} names no pass: give passes such as mergefunc, or leave it out")
    try:
        tuned_pipeline(passes, catalogue)
    except PipelineError as exc:
        raise InputError(f"--finish {text!r}: {exc}; name passes that `stitchopt passes` lists") from exc
    return passes


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
    top: TopOption = 10,
    json_output: JsonOption = False,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Rank the model's lists for one program: `-passes=` strings with predicted changes against its -Oz size,
    which is measured (one -Oz build, cached).

    The first is what static mode builds (the model's choice for this program, or -Oz); the rest follow in the
    order jit mode tries them. Predicted changes are the regression's, whichever way the model chooses."""
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir or DEFAULT_MODEL_DIR, catalogue)
    module = load_module(toolchain, program_path(program, toolchain))
    with open_store(cache_dir) as store:
        start = time.perf_counter()
        ranked = cached_rank(model, toolchain, module, store)
        elapsed_ms = 1000 * (time.perf_counter() - start)
        oz_size = _measured_oz_size(toolchain, module, store)
    language = module_language(module)
    print_ranking(program, ranked[:top], catalogue, elapsed_ms, json_output, oz_size, language)


def _measured_oz_size(toolchain: Toolchain, module: IRModule, store: EvaluationStore) -> int | None:
    """The program's -Oz object size, measured: the size model's estimate of it can be far off, and a table
    whose -Oz row is wrong misleads about every row. None (with a warning) when -Oz fails."""
    with Evaluator(toolchain, store, jobs=1) as evaluator:
        oz = evaluator.baselines["Oz"]
        result = evaluator.evaluate(module, oz.pipeline, oz.options)
    if not result.ok or result.size_bytes is None:
        warnings.warn(f"{module.name}: -Oz fails ({result.status.value}): sizes are not shown", stacklevel=2)
        return None
    return result.size_bytes


def print_ranking(
    program: str,
    ranked: list[RankedList],
    catalogue: Catalogue,
    elapsed_ms: float,
    json_output: bool,
    oz_size: int | None = None,
    language: str | None = None,
) -> None:
    """Ranked lists as `-passes=` strings with predicted changes, and the sizes they predict from the measured
    -Oz size when there is one. The order is the one the modes try, which need not be that of the predictions:
    the table says so where they differ. `language`: the source's, which a chooser per language answers from
    (None: no C or C++ source named, so all training units)."""
    rows = [
        {
            "rank": i + 1,
            "predicted_change_vs_oz": e.predicted_ratio - 1,
            "predicted_size_bytes": None if oz_size is None else e.predicted_ratio * oz_size,
            "passes": OZ if e.passes is None else tuned_pipeline(e.passes, catalogue),
        }
        for i, e in enumerate(ranked)
    ]
    if json_output:
        document = {
            "program": program,
            "language": language,
            "inference_ms": elapsed_ms,
            "oz_size_bytes": oz_size,
            "ranked": rows,
        }
        print(json.dumps(document, indent=1))
        return
    measured = "" if oz_size is None else f" (-Oz measured: {oz_size:,} B)"
    source = f", a {language.upper()} source" if language else ", no C or C++ source named in its IR"
    console.print(
        f"{program}{measured}{source}: lists in the order optimize tries them", highlight=False, soft_wrap=True
    )
    size_column = "" if oz_size is None else f"  {'predicted size':>14}"
    console.print(f"[dim]{'#':>3}  {'predicted vs -Oz':>16}{size_column}  pass list[/dim]")
    for i, e in enumerate(ranked):
        size = "" if oz_size is None else f"  {_predicted_size(e, oz_size):>14}"
        passes = OZ if e.passes is None else passes_option(tuned_pipeline(e.passes, catalogue))
        console.print(
            f"{i + 1:>3}  {100 * (e.predicted_ratio - 1):>+15.2f}%{size}  {passes}", highlight=False, soft_wrap=True
        )
    if ranked and ranked[0].predicted_ratio > min(e.predicted_ratio for e in ranked):
        console.print(
            "[dim]#1 is the model's choice (static builds it, jit tries #1 to #k), not made from these "
            "predictions alone[/dim]",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"[dim]inference {elapsed_ms:.1f} ms[/dim]")


def _predicted_size(entry: RankedList, oz_size: int) -> str:
    """-Oz's row is the measured size itself; a list's is its predicted ratio times it."""
    return f"{oz_size:,} B" if entry.passes is None else f"~{entry.predicted_ratio * oz_size:,.0f} B"


def optimize_command(
    ctx: typer.Context,
    program: Annotated[str, typer.Argument(help="A .c/.cc/.cpp/.ll/.bc file or a bench:// URI.")],
    output: Annotated[Path, output_option("Object file to write.")],
    mode: ModeOption = "static",
    k: KOption = RANKED_K,
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
    json_output: JsonOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Write the object file built with the model's choice (never larger than -Oz; with --validate, only lists that
    pass the suites)."""
    chosen = mode_named(mode, OPTIMIZE_MODES)
    if mode != "hybrid":
        refuse_ignored(ctx, ("hot", "run", "hot_from"), "with --mode hybrid")
    if chosen.k is None:
        refuse_ignored(ctx, ("k",), "with --mode jit, search or hybrid")
    if not chosen.searches:
        refuse_ignored(ctx, ("budget",), "with --mode search")
    if getattr(ctx.get_parameter_source("k"), "name", None) == "DEFAULT":  # not given: the mode's own default
        k = default_k(mode)
    if hot or run:
        refuse_ignored(ctx, ("hot_from",), "when hot functions are predicted (without --hot or --run)")
    validation = validation_choice(ctx, validate, validate_limit, data_dir, no_validate=None)
    toolchain = find_toolchain(llvm)
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir or DEFAULT_MODEL_DIR, catalogue)
    path = program_path(program, toolchain)
    module = load_module(toolchain, path)
    names = _hot_names(toolchain, module, path, hot, run, hot_from) if mode == "hybrid" else []
    with open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator:
        checks = validation.open(evaluator)
        answer = optimize(
            evaluator, catalogue, model, module, chosen, output, k=k, budget=budget, hot=names, validation=checks
        )
    _show_answer({"program": program, "output": str(output), "mode": mode, **answer}, json_output)
    exit_if_no_gain(fail_if_no_gain, not answer["oz_backup"])


def _show_answer(answer: dict[str, Any], json_output: bool) -> None:
    """The --json document, or a summary line and the list(s) on stdout; validation's notes go to stderr."""
    if json_output:
        print(json.dumps(answer, indent=1))
        return
    summary = (
        f"{answer['output']}: {answer['size_bytes']:,} B ({answer['size_change_vs_oz_percent']:+.2f}% vs -Oz "
        f"{answer['oz_size_bytes']:,} B), {answer['compilations']} compilations"
    )
    if "parts" in answer:  # hybrid: each part's list, whether the parts were kept or not
        kept = "-Oz (backup)" if answer["oz_backup"] else "per-function parts"
        lines = [f"{summary}, {kept}", *(f"  {part}: {_shown(p)}" for part, p in answer["parts"].items())]
    else:
        chosen = "-Oz (backup)" if answer["oz_backup"] else _shown(answer["passes"])
        lines = [f"{summary}, inference {answer['inference_ms']:.1f} ms", chosen]
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)
    for note in answer["notes"]:
        status_console.print(f"[dim]{note}[/dim]", highlight=False)


def _shown(passes: str) -> str:
    """A list as opt takes it; -Oz as itself (its expanded pipeline runs to thousands of characters)."""
    return passes if passes == OZ else passes_option(passes)


def _hot_names(toolchain: Toolchain, module: IRModule, source: Path, hot: str, run: str, hot_from: str) -> list[str]:
    """The functions hybrid mode tunes one by one, from --hot, --run or else --hot-from."""
    if hot and run:
        raise InputError("give the hot functions (--hot f,g) or a command to profile (--run), not both")
    if run and not is_source(source):
        raise InputError(f"{source}: --run profiles a C/C++ source; give --hot for IR files")
    given = hot.split(",") if hot else []
    run_args = run_arguments(run) if run else None
    names = hybrid_hot_functions(toolchain, module, source, hot=given, run=run_args, hot_from=hot_from)
    if not (hot or run):
        status_console.print(
            f"hot functions predicted by the {hot_from} estimate (no profile given): {', '.join(names) or 'none'}",
            highlight=False,
        )
    return names
