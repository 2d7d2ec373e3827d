"""`stitchopt gpu`: GPU device code measured without a GPU (ptxas's SASS size, registers, spills, occupancy),
clang's own `-O3` device compile beside the pass lists given."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from stitchopt.apply.device import (
    DEVICE_JIT_K,
    DEVICE_MODES,
    DEVICE_OBJECTIVES,
    DeviceChoice,
    choose_device_list,
    sass_and_registers,
)
from stitchopt.cli.exit_codes import NEGATIVE
from stitchopt.cli.options import (
    EXE,
    AddressOption,
    BackendOption,
    CacheDirOption,
    JobsOption,
    JsonOption,
    KOption,
    LlvmOption,
    console,
    open_evaluator,
    output_option,
    passes_option,
    print_table,
    progress_bar,
    refuse_ignored,
    run_arguments,
    run_option,
    status_console,
)
from stitchopt.core import CompileOptions, IRModule
from stitchopt.datasets.benchmarks import benchmark_module
from stitchopt.datasets.kernels import KERNELS_URI, OPENMP_PREFIX, kernel_uri_source
from stitchopt.datasets.uri import is_benchmark_uri
from stitchopt.errors import InputError, StitchoptError
from stitchopt.labels.commit import shard_committer
from stitchopt.labels.device import KernelUnit, kernel_units, label_kernels, require_device_source
from stitchopt.models.device_model import load_device_model
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import check_pipeline, pipeline_from_text
from stitchopt.toolchain.cuda import (
    OFFLOAD_INSTALL_HINT,
    CudaToolkit,
    find_cuda,
    openmp_offload_bitcode,
    require_ptxas_arch,
)
from stitchopt.toolchain.device import (
    CUDA_SUFFIXES,
    DEFAULT_ARCH,
    DEVICE_LEVEL,
    DEVICE_TRIPLE,
    DeviceBuild,
    build_device,
    check_arch,
    cuda_device_ir,
    device_arch,
    device_baseline,
    device_options,
    is_device_triple,
    kernel_unit,
    openmp_device_ir,
    openmp_runtime_linked,
    printed_device_pipeline,
)
from stitchopt.toolchain.device_time import TIME_MARGIN, TIME_UNROLL_COUNTS
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.elf import SASS_WORD
from stitchopt.toolchain.frontend import (
    C_SUFFIXES,
    CXX_SUFFIXES,
    IR_SUFFIXES,
    disassemble,
    load_module,
    module_from_bitcode,
)
from stitchopt.toolchain.llvm import passes_option as opt_passes_option
from stitchopt.toolchain.offload import DIRECTIONS, OffloadConstruct, offload_constructs, openmp_host_ir
from stitchopt.toolchain.offload_build import HOISTING_PIPELINE, HOST_AS_DEVICE, HOST_BASELINE, hoisting_report
from stitchopt.toolchain.plugin_library import plugin_path
from stitchopt.tune.device import tune_device
from stitchopt.tune.driver import Budget, TuningRun
from stitchopt.tune.strategies import STRATEGIES
from stitchopt.validate.device_run import DeviceRunner, RunCheck, read_launches
from stitchopt.validate.offload import HostListCheck, check_host_list

PLUGIN_PASS_PREFIX = "stitchopt-"  # passes of stitchopt's pass plugin
_GPU_SUFFIXES = CUDA_SUFFIXES | C_SUFFIXES | CXX_SUFFIXES | IR_SUFFIXES
DEVICE_INPUT_HELP = (
    "A .cu file, a C/C++ file with OpenMP target regions, bench://kernels-v1/<family>[#<kernel>], an entry of a "
    "built device dataset (bench://ggml-cuda-v1/<file>.cu[#<kernel>]), or device IR (.ll/.bc for nvptx64)."
)
ArchOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--arch", help=f"GPU architecture a source file is compiled for (sm_XX; default {DEFAULT_ARCH})."),
]
LaunchOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        help="A launch file (JSON: kernel, grid, block, arguments; docs/gpu.md): the kernels are run on the CPU "
        "and a list whose outputs differ from -O3's is refused (a launch that cannot run here decides nothing)."
    ),
]
ClangArgs = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Argument(help="Extra clang arguments for a source file (include paths, defines), after --."),
]
gpu_app = typer.Typer(
    help="GPU device code: measure pass lists against clang's -O3 device compile.", no_args_is_help=True
)


@gpu_app.command("measure")
def measure_command(
    file: Annotated[str, typer.Argument(help=DEVICE_INPUT_HELP)],
    passes: Annotated[
        Optional[str],  # noqa: UP045 (typer needs Optional on Python 3.10)
        passes_option("Flat list 'sroa,instcombine' or a pipeline to measure beside -O3 (device catalogue)"),
    ] = None,
    arch: ArchOption = None,
    ptx: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the PTX of the list (of -O3 without -p) here."),
    ] = None,
    json_output: JsonOption = False,
    llvm: LlvmOption = None,
    clang_args: ClangArgs = None,
) -> None:
    """Per kernel: SASS bytes, registers, spills, stack and occupancy, for -O3 and the list."""
    toolchain = find_toolchain(llvm)
    cuda = find_cuda()
    module, options, runtime_linked = _device_input(toolchain, cuda, file, arch, clang_args or [])
    catalogue = load_catalogue(toolchain, device=True)
    reference = device_baseline(options)
    pipelines = {f"-{DEVICE_LEVEL}": reference.pipeline}
    if passes is not None:
        pipelines[passes] = pipeline_from_text(passes, catalogue)
        check_pipeline(toolchain, pipelines[passes], triple=DEVICE_TRIPLE)
    builds: dict[str, DeviceBuild | str] = {
        f"-{DEVICE_LEVEL}": build_device(toolchain, module.bitcode, reference.pipeline, options)
    }
    if passes is not None:
        try:
            builds[passes] = build_device(toolchain, module.bitcode, pipelines[passes], options)
        except StitchoptError as exc:  # the list's failure is the answer: reported, exit 1
            builds[passes] = str(exc)
    last = builds[list(pipelines)[-1]]
    if ptx is not None and isinstance(last, DeviceBuild):
        ptx.write_text(last.ptx)
    elif ptx is not None:
        note(f"{ptx} not written: the list built no PTX")
    document = _document(file, device_arch(options), cuda.version, pipelines, builds, runtime_linked)
    if json_output:
        print(json.dumps(document, indent=2))
    else:
        _print(document)
    if any(isinstance(build, str) for build in builds.values()):  # the list could not build the program
        raise typer.Exit(NEGATIVE)


@gpu_app.command("tune")
def tune_command(
    file: Annotated[str, typer.Argument(help=DEVICE_INPUT_HELP)],
    budget: Annotated[int, typer.Option(min=1, help="Evaluations.")] = 200,
    strategy: Annotated[str, typer.Option(help=f"One of {', '.join(STRATEGIES)}.")] = "local",
    seed: Annotated[int, typer.Option(min=0, help="Random seed; same seed + same cache = same result.")] = 0,
    no_minimize: Annotated[bool, typer.Option("--no-minimize", help="Report the best list as found.")] = False,
    launch: LaunchOption = None,
    arch: ArchOption = None,
    output: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the result (as --json prints it) here."),
    ] = None,
    json_output: JsonOption = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    backend: BackendOption = None,
    address: AddressOption = None,
    llvm: LlvmOption = None,
    clang_args: ClangArgs = None,
) -> None:
    """Search a pass list that makes the kernels' code smaller than clang's -O3 device compile (ptxas's cubin),
    keeping every kernel; -O3 is the backup."""
    if strategy not in STRATEGIES:
        raise StitchoptError(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    toolchain = find_toolchain(llvm)
    cuda = find_cuda()
    module, options, runtime_linked = _device_input(toolchain, cuda, file, arch, clang_args or [])
    catalogue = load_catalogue(toolchain, device=True)
    reference = device_baseline(options)
    start = printed_device_pipeline(toolchain, device_arch(options))
    with (
        _run_check(toolchain, launch) as run_check,
        open_evaluator(toolchain, cache_dir, jobs, backend, address) as evaluator,
        progress_bar(disable=json_output) as progress,
    ):
        bar = progress.add_task(file, total=budget)

        def show(run: TuningRun) -> None:
            best = f"{file}: best {100 * (run.best_score - 1):+.2f}% vs -{DEVICE_LEVEL}"
            progress.update(bar, completed=run.evaluations, description=best)

        found = tune_device(
            evaluator,
            module,
            catalogue,
            reference,
            start,
            strategy=strategy,
            seed=seed,
            budget=Budget(budget),
            minimize_best=not no_minimize,
            on_progress=show,
            run_check=run_check,
        )
    pipelines = {f"-{DEVICE_LEVEL}": reference.pipeline}
    builds: dict[str, DeviceBuild | str] = {f"-{DEVICE_LEVEL}": found.reference}
    if found.passes is not None:
        pipelines["best"], builds["best"] = found.pipeline, found.answer
    document = _document(file, device_arch(options), cuda.version, pipelines, builds, runtime_linked)
    document["search"] = {
        "strategy": strategy,
        "seed": seed,
        "evaluations": found.run.evaluations,
        "cubin_change": found.score - 1,
        "passes": None if found.passes is None else list(found.passes),
        "rejected": found.rejected,
        "runs": found.runs,
    }
    if output is not None:
        output.write_text(json.dumps(document, indent=2) + "\n")
    if json_output:
        print(json.dumps(document, indent=2))
        return
    _print(document)
    if found.rejected:
        say(f"kept -{DEVICE_LEVEL}: {found.rejected}")
    for name, verdict in found.runs.items():
        say(f"run on the CPU beside -{DEVICE_LEVEL}: {name}: {verdict}")
    answer = (
        f"'{opt_passes_option(found.pipeline)}'" if found.passes is not None else f"-{DEVICE_LEVEL} stays the answer"
    )
    say(f"cubin {100 * (found.score - 1):+.2f}% vs -{DEVICE_LEVEL} after {found.run.evaluations} evaluations: {answer}")


@gpu_app.command("optimize")
def optimize_command(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help=DEVICE_INPUT_HELP)],
    mode: Annotated[str, typer.Option(help=f"One of {', '.join(DEVICE_MODES)}.")] = "static",
    k: KOption = DEVICE_JIT_K,
    objective: Annotated[
        str,
        typer.Option(
            help="size: keep the smallest list no worse than -O3 in SASS, registers, spills and stack; time: also "
            "no worse in the loop shapes that went with slower kernels on a GPU (unrolling, rotation), or with "
            "--launch, the build (the model's lists, -O3 with unroll counts "
            f"{', '.join(map(str, TIME_UNROLL_COUNTS))}) whose launches execute the fewest instructions on the CPU, "
            f"{TIME_MARGIN:.0%} fewer than -O3's."
        ),
    ] = "size",
    model_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--model", help="A device model directory (default: the shipped one)."),
    ] = None,
    run: Annotated[
        str,
        run_option(
            "For a C/C++ offload program: check the host pipeline in a run, with the host CPU as the offload "
            "device (copies counted, output compared with -O3's)"
        ),
    ] = "",
    launch: LaunchOption = None,
    arch: ArchOption = None,
    ptx: Annotated[
        Optional[Path],  # noqa: UP045
        output_option("Write the chosen build's PTX here."),
    ] = None,
    json_output: JsonOption = False,
    llvm: LlvmOption = None,
    clang_args: ClangArgs = None,
) -> None:
    """The device model's pass list for a GPU program, chosen for size (SASS and registers; -O3 stays where it is
    no better); for an OpenMP offload program, its host pipeline too (data kept on the device where the hoisting
    pass proves the program cannot tell; with --run, only where a run copies fewer bytes with the same output).
    Smaller is not faster: on an H200 the model's size choices ran slower than -O3 (docs/results.md); --objective
    time keeps only lists whose loops keep -O3's shape, or with --launch, the build whose launches execute the
    fewest instructions on the CPU (unroll counts included)."""
    if mode not in DEVICE_MODES:
        raise InputError(f"unknown mode {mode!r}: use one of {', '.join(DEVICE_MODES)}")
    if objective not in DEVICE_OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}: use one of {', '.join(DEVICE_OBJECTIVES)}")
    if mode != "jit":
        refuse_ignored(ctx, ("k",), "with --mode jit")
    program = _offload_program(file)
    if run and program is None:
        raise InputError(
            f"--run chooses an OpenMP program's host pipeline: {file} is not a whole C/C++ program (give a C/C++ file "
            f"or {KERNELS_URI}{OPENMP_PREFIX}<family> without #<region>)"
        )
    program_args = list(run_arguments(run)) if run else []
    toolchain = find_toolchain(llvm)
    cuda = find_cuda()
    model = load_device_model(model_dir)
    if model.llvm_version != toolchain.version_string:
        note(
            f"warning: the device model was trained with LLVM {model.llvm_version}, this is "
            f"{toolchain.version_string}: its lists may not build or mean the same"
        )
    if mode == "jit" and k > len(model.lists):
        note(f"--k {k}: the device model has {len(model.lists)} lists; all are built")
    module, options, runtime_linked = _device_input(toolchain, cuda, file, arch, clang_args or [])
    with (
        _run_check(toolchain, launch) as run_check,
        status_console.status(f"{file}: building the model's choice ({mode}) and -{DEVICE_LEVEL}"),
    ):
        choice = choose_device_list(toolchain, model, module, options, mode, k, objective, run_check)
    reference = device_baseline(options).pipeline
    pipelines, builds = {f"-{DEVICE_LEVEL}": reference}, {f"-{DEVICE_LEVEL}": choice.reference}
    if choice.kept_list:
        pipelines["chosen"], builds["chosen"] = choice.pipeline, choice.answer
    document = _document(file, device_arch(options), cuda.version, pipelines, dict(builds), runtime_linked)
    for row in document["builds"]:  # what opt takes beside a build's pipeline (the time objective's unroll count)
        row["opt_flags"] = list(choice.opt_flags) if row["build"] == "chosen" else []
    document["device"] = {
        "mode": mode,
        **({"k": min(k, len(model.lists))} if mode == "jit" else {}),  # lists built beside -O3
        "objective": objective,
        "pipeline": choice.pipeline,
        "opt_flags": list(choice.opt_flags),
        "kept_list": choice.kept_list,
        "tried": choice.tried,
        "runs": choice.runs,
        "executed": choice.executed,
    }
    check = None
    if program is not None:
        try:
            hoisting = hoisting_report(toolchain, program, plugin_path(), clang_args or [])
            document["host"] = {"pipeline": hoisting.pipeline, "kept": hoisting.kept, "not_kept": hoisting.not_kept}
            if run and hoisting.kept:
                check = _host_check(toolchain, program, HOISTING_PIPELINE, program_args, clang_args or [])
                document["host"].update(check.to_dict(), pipeline=check.chosen)
        except StitchoptError as exc:  # the device answer stands; the host side says why it has none
            document["host"] = {"pipeline": HOST_BASELINE, "error": str(exc)}
    if ptx is not None:
        ptx.write_text(choice.answer.ptx)
    host_failed = "error" in document.get("host", {})
    if json_output:
        print(json.dumps(document, indent=2))
    else:
        _say_optimized(document, choice, mode, check, bool(run), launch is not None)
    if host_failed and run:  # what --run asked for could not be done
        raise InputError(document["host"]["error"])


def _say_optimized(
    document: dict[str, Any],
    choice: DeviceChoice,
    mode: str,
    check: HostListCheck | None,
    ran: bool,
    launched_any: bool,
) -> None:
    """`gpu optimize`'s table and lines: the device answer, then the host's."""
    _print(document)
    for pipeline, reason in choice.tried.items():
        if reason is not None:
            say(f"not kept: {pipeline}: {reason}")
    for launch, verdict in choice.runs.get(choice.label, {}).items():
        say(f"run on the CPU beside -{DEVICE_LEVEL}: {launch}: {verdict}")
    (sass, registers), (o3_sass, o3_registers) = sass_and_registers(choice.answer), sass_and_registers(choice.reference)
    change = f"SASS {100 * (sass / o3_sass - 1):+.2f}%, registers {o3_registers} -> {registers} (all kernels)"
    flags = "".join(f" {flag}" for flag in choice.opt_flags)
    answer = (
        f"'{opt_passes_option(choice.pipeline)}'{flags}" if choice.kept_list else f"-{DEVICE_LEVEL} stays the answer"
    )
    objective = document["device"]["objective"]
    if choice.label in choice.executed:
        change = f"instructions executed on the CPU {100 * (choice.executed[choice.label] - 1):+.2f}%, {change}"
    say(f"device ({mode}{', time objective' if objective == 'time' else ''}): {change} vs -{DEVICE_LEVEL}: {answer}")
    launched = choice.runs.get(choice.label, {})
    unlaunched = sorted(set(choice.answer.kernels) - {launch.rsplit(" #", 1)[0] for launch in launched})
    without = f"; kernels without a launch did not run: {', '.join(unlaunched)}" if unlaunched else ""
    if choice.kept_list and choice.label in choice.executed:
        say(
            f"its launches ran on the CPU with -{DEVICE_LEVEL}'s outputs and fewer instructions executed (the IR llc "
            "selects instructions from). The count ordered 88% of the pairs of an H200's timed builds as their "
            "times, but it is not a time: unverified until timed on a GPU"
        )
        if unlaunched:
            say(
                f"kernels without a launch did not run; the chosen build leaves them as -{DEVICE_LEVEL}'s: "
                + ", ".join(unlaunched)
            )
    elif launched and all(verdict == "same" for verdict in launched.values()):
        say(
            f"its launches ran on the CPU with -{DEVICE_LEVEL}'s outputs (the list's IR; NVPTX's code generator and "
            f"ptxas run only on a GPU){without}; the speed is unmeasured"
        )
    elif choice.kept_list and objective == "time":
        say("static measures (ptxas, PTX loops): kept with -O3's loop shape; unverified until the kernels run on a GPU")
    elif choice.kept_list:
        say(
            "static measures (ptxas): less SASS can be slower code (e.g. a loop -O3 unrolls left rolled; "
            "--objective time refuses that); unverified until the kernels run on a GPU"
        )
    if objective == "time" and not launched_any:
        say(
            "without --launch the time objective refuses slower loop shapes but finds no faster code: with a launch "
            "file it counts each build's instructions on the CPU, unroll counts included (docs/gpu.md)"
        )
    if "host" in document:
        _say_host(document["host"], check, ran)


def _say_host(host: dict[str, Any], check: HostListCheck | None, ran: bool) -> None:
    """The host side's lines: what the hoisting pass keeps and why not elsewhere, then the run's count."""
    if "error" in host:
        say(f"host: not chosen ({host['error']}): -O3 stays the host pipeline")
        return
    for remark in host["not_kept"]:
        say(f"host: not kept: {remark}")
    for remark in host["kept"]:
        say(f"host: {remark}")
    if not host["kept"]:
        unchecked = " (nothing for --run to check)" if ran else ""
        say(f"host: the hoisting pass keeps no data on the device: -O3 stays the answer{unchecked}")
        return
    if check is None:
        say(f"host (static): use {HOISTING_PIPELINE}; --run '{EXE} ARGS' counts the copies and checks the output")
    else:
        say(
            f"host (run): bytes copied {_bytes_moved(check)} with {HOISTING_PIPELINE}"
            f"{'' if check.same_output else f' (OUTPUT DIFFERS: {check.difference})'}: use {check.chosen}"
        )
    if host["pipeline"] == HOISTING_PIPELINE:
        say(
            "in clang: STITCHOPT_OFFLOAD=keep clang -O3 -fopenmp --offload-arch=... -foffload-lto "
            "-fpass-plugin=$(stitchopt plugin path) (docs/gpu.md)"
        )


@gpu_app.command("labels")
def labels_command(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="bench://kernels-v1 (the project's CUDA kernels and OpenMP programs' target regions) and built "
            "device datasets (bench://ggml-cuda-v1)."
        ),
    ],
    output: Annotated[Path, output_option("The label directory (shards are added to it).", directory=True)],
    per_file: Annotated[int, typer.Option(min=1, help="At most this many kernels of a file.")] = 8,
    budget: Annotated[int, typer.Option(min=1, help="Evaluations of each kernel's search.")] = 100,
    pool: Annotated[int, typer.Option(min=1, help="Lists measured on every kernel.")] = 40,
    seed: Annotated[int, typer.Option(min=0, help="Random seed of the searches.")] = 0,
    no_minimize: Annotated[
        bool,
        typer.Option(
            "--no-minimize",
            help="Keep each search's best as found: several times faster (minimizing is most of a search's builds), "
            "with longer lists.",
        ),
    ] = False,
    commit: Annotated[
        bool, typer.Option("--commit", help="Commit each shard to the git repository holding the directory.")
    ] = False,
    jobs: JobsOption = 0,
    cache_dir: CacheDirOption = None,
    llvm: LlvmOption = None,
) -> None:
    """Device labels: each kernel searched, then the train kernels' best lists measured on every kernel; one
    shard per kernel and stage, so a rerun resumes."""
    for source in sources:  # before looking for the tools: a wrong source is the first thing to fix
        require_device_source(source)
    toolchain = find_toolchain(llvm)
    cuda = find_cuda()
    committer = shard_committer(output) if commit else None
    units = kernel_units(toolchain, cuda, sources, per_file, jobs=jobs)
    catalogue = load_catalogue(toolchain, device=True)
    note(f"{len(units)} kernels of {len({u.family for u in units})} families")

    def skipped(unit: KernelUnit, reason: str) -> None:
        note(f"{unit.uri}: {reason}; not labelled")

    def written(path: Path) -> None:
        note(f"wrote {path}")
        if committer is not None:
            committer(path)

    with open_evaluator(toolchain, cache_dir, jobs, None, None) as evaluator:
        done = label_kernels(
            evaluator,
            cuda,
            catalogue,
            printed_device_pipeline(toolchain),
            units,
            output,
            budget=budget,
            seed=seed,
            pool_size=pool,
            minimize=not no_minimize,
            on_shard=written,
            on_skip=skipped,
        )
    if not done.pool:
        note(
            "warning: no train kernel's search kept a list, so the pool is empty and no model can learn from these "
            "labels: label more kernels (--per-file) or search longer (--budget)"
        )
    if done.unsearched_train:
        note(
            f"warning: {done.unsearched_train} train kernels have no search (see above); the pool is made without "
            "them, and a rerun that searches them changes it (and measures the matrix again)"
        )
    lists = f"{len(done.pool)} list" + ("" if len(done.pool) == 1 else "s")
    say(f"{done.searched} kernels searched, {done.measured} measured with a pool of {lists}: {output}")


@gpu_app.command("transfers")
def transfers_command(
    target: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="A C/C++ file with OpenMP target regions (#pragma omp target), or the project's OpenMP program of a "
            "kernel family: bench://kernels-v1/omp/<family>.",
        ),
    ],
    arch: Annotated[
        str, typer.Option("--arch", help="GPU architecture the regions are offloaded to (sm_XX).")
    ] = DEFAULT_ARCH,
    clang_args: Annotated[Optional[list[str]], typer.Argument(help="Extra clang arguments after --.")] = None,  # noqa: UP045
    run: Annotated[
        str,
        run_option(
            "Build the program (its main) and run it so, with the host CPU as the offload device: the runtime "
            "counts the copies, and the output is compared with -O3's"
        ),
    ] = "",
    passes: Annotated[
        Optional[str],  # noqa: UP045
        passes_option(f"Host pipeline run beside -O3 with --run (default: {HOISTING_PIPELINE})"),
    ] = None,
    json_output: JsonOption = False,
    llvm: LlvmOption = None,
) -> None:
    """The data each OpenMP offload construct maps to and from the device: read statically from host IR, or
    (--run) counted in a run, for -O3 and a host pipeline that keeps data on the device."""
    file = _transfers_program(target)
    toolchain = find_toolchain(llvm)
    if passes is not None and not run:
        raise InputError(f"-p/--passes chooses the host pipeline of a run: add --run '{EXE}'")
    if run:
        program_args = list(run_arguments(run))
        _run_transfers(
            toolchain, file, target, passes or HOISTING_PIPELINE, program_args, clang_args or [], json_output
        )
        return
    lines = [*(clang_args or []), "-gline-tables-only"]  # each construct's source line, in its runtime call
    text = disassemble(toolchain, openmp_host_ir(toolchain, file, arch, lines), file.name)
    constructs = offload_constructs(text)
    if not constructs:
        raise InputError(f"{file}: no OpenMP construct maps data to a device (no #pragma omp target with map clauses)")
    rows = [_construct(c) for c in constructs]
    document: dict[str, Any] = {"file": target, "arch": arch, "constructs": rows, "total": _total(constructs)}
    if json_output:
        print(json.dumps(document, indent=2))
        return
    table = Table(title=f"{target}: data mapped to and from the device (static; items inside a data region count)")
    for column in ("construct", "to device", "from device"):
        table.add_column(column, justify="left" if column == "construct" else "right")
    for row in [*rows, {"construct": "total", **document["total"]}]:
        table.add_row(str(row["construct"]), _moved(row["to_device"]), _moved(row["from_device"]))
    print_table(table)


def _run_transfers(
    toolchain: Toolchain,
    file: Path,
    target: str,
    pipeline: str,
    args: list[str],
    clang_args: list[str],
    json_output: bool,
) -> None:
    """`gpu transfers --run`: -O3's build and `pipeline`'s, run; NEGATIVE when their outputs differ (`target`: the
    program as given, a file or a bench:// URI)."""
    check = _host_check(toolchain, file, pipeline, args, clang_args)
    document = {
        "file": target,
        "device": f"{HOST_AS_DEVICE} (the host CPU as the offload device)",
        **check.to_dict(),
    }
    if json_output:
        print(json.dumps(document, indent=2))
    else:
        table = Table(title=f"{target}: copies between host and device in a run")
        for column in ("build", "to device", "from device", "exit"):
            table.add_column(column, justify="left" if column == "build" else "right")
        for label, done in (("-O3", check.baseline), ("list", check.candidate)):
            moved = done.transfers
            table.add_row(
                label,
                f"{moved.to_device} ({moved.to_device_bytes} B)",
                f"{moved.from_device} ({moved.from_device_bytes} B)",
                done.outcome.describe(),
            )
        print_table(table)
        ran = check.candidate.outcome
        if ran.returncode != 0 or ran.timed_out:
            verdict = f"the list's build failed its run ({ran.describe()}): the list is rejected"
        elif check.same_output:
            verdict = f"bytes copied {_bytes_moved(check)}; output identical"
        else:
            verdict = f"bytes copied {_bytes_moved(check)}; OUTPUT DIFFERS ({check.difference}): the list is rejected"
        say(f"list {pipeline}: {verdict}")
    if not check.same_output:
        raise typer.Exit(NEGATIVE)


def _bytes_moved(check: HostListCheck) -> str:
    before, after = check.baseline.transfers.total_bytes, check.candidate.transfers.total_bytes
    return f"{before:,} -> {after:,} ({100 * check.bytes_change:+.2f}% vs -O3)"


def say(line: str) -> None:
    """One line of a command's result, as written (no markup, no wrapping)."""
    console.print(line, markup=False, highlight=False, soft_wrap=True)


def note(line: str) -> None:
    """One line of status or warning on stderr, as written."""
    status_console.print(line, markup=False, highlight=False)


def _host_check(
    toolchain: Toolchain, file: Path, pipeline: str, args: list[str], clang_args: list[str]
) -> HostListCheck:
    """-O3's build and `pipeline`'s of an offload program, run with the host as the offload device."""
    plugins = [plugin_path()] if PLUGIN_PASS_PREFIX in pipeline else []
    with status_console.status(f"{file}: building and running -O3 and {pipeline}"):
        return check_host_list(toolchain, [file], pipeline, pass_plugins=plugins, args=args, clang_args=clang_args)


def _construct(construct: OffloadConstruct) -> dict[str, Any]:
    """One construct's row: what it is (`target data, line 11`; its maptypes array where no call names it) and
    what it maps in each direction."""
    where = f"{construct.kind}, line {construct.line}" if construct.kind and construct.line else construct.kind
    return {
        "construct": where or construct.name,
        "kind": construct.kind,
        "line": construct.line,
        **{d: _direction(construct, d) for d in DIRECTIONS},
    }


def _direction(construct: OffloadConstruct, direction: str) -> dict[str, int]:
    return {
        "items": construct.count(direction),
        "static_bytes": construct.static_bytes(direction),
        "runtime_sized": construct.dynamic(direction),
    }


def _total(constructs: list[OffloadConstruct]) -> dict[str, dict[str, int]]:
    return {
        direction: {
            key: sum(_direction(c, direction)[key] for c in constructs)
            for key in ("items", "static_bytes", "runtime_sized")
        }
        for direction in DIRECTIONS
    }


def _moved(moved: Any) -> str:
    sized = f" + {moved['runtime_sized']} sized at run time" if moved["runtime_sized"] else ""
    return f"{moved['items']} ({moved['static_bytes']} B{sized})"


@contextmanager
def _run_check(toolchain: Toolchain, launch: Path | None) -> Iterator[RunCheck | None]:
    """The launch file's run check (None without one), its CPU programs removed when the command ends."""
    if launch is None:
        yield None
        return
    launches = read_launches(launch)
    runner = DeviceRunner(toolchain)
    try:
        yield RunCheck(runner, launches, str(launch))
    finally:
        runner.close()


def _device_input(
    toolchain: Toolchain, cuda: CudaToolkit, target: str, arch: str | None, clang_args: list[str]
) -> tuple[IRModule, CompileOptions, bool | None]:
    """The device module of a .cu file, of a C/C++ file's OpenMP target regions or of
    `bench://kernels-v1/<family>[#<kernel>]` (compiled for `arch` with `clang_args`), of device IR or of a built
    device dataset's entry (`bench://ggml-cuda-v1/<file>.cu[#<kernel>]`: built already, for sm_90), how clang
    would build it, and whether the OpenMP device runtime is linked in (None: no target regions)."""
    kernel = None
    if is_benchmark_uri(target) and not target.startswith(KERNELS_URI):
        return _built_device_input(toolchain, cuda, target, benchmark_module(toolchain, target), arch, clang_args)
    if is_benchmark_uri(target):
        source, kernel = kernel_uri_source(target)
    else:
        source = _not_a_directory(Path(target))
    if source.suffix not in _GPU_SUFFIXES:
        suffixes = ", ".join(sorted(_GPU_SUFFIXES))
        raise InputError(f"{source}: unsupported file type {source.suffix!r} for a GPU; use one of {suffixes}")
    if source.suffix not in CUDA_SUFFIXES | C_SUFFIXES | CXX_SUFFIXES:
        return _built_device_input(toolchain, cuda, target, load_module(toolchain, source, []), arch, clang_args)
    require_ptxas_arch(cuda, check_arch(arch or DEFAULT_ARCH))
    if source.suffix in CUDA_SUFFIXES:
        bitcode = cuda_device_ir(toolchain, cuda, source, arch or DEFAULT_ARCH, clang_args)
    else:
        runtime = _openmp_runtime(toolchain, arch or DEFAULT_ARCH)
        bitcode = openmp_device_ir(toolchain, cuda, source, arch or DEFAULT_ARCH, clang_args, runtime)
    module = module_from_bitcode(toolchain, kernel_unit(toolchain, bitcode, kernel) if kernel else bitcode, target)
    text = disassemble(toolchain, module.bitcode, source.name)
    return module, device_options(text, cuda, target), openmp_runtime_linked(text)


def _openmp_runtime(toolchain: Toolchain, arch: str) -> Path | None:
    """LLVM's OpenMP device runtime bitcode for `arch`, which a program's build links into its target regions
    before optimizing them; None (and a note) where it is not installed."""
    library = openmp_offload_bitcode(toolchain, arch)
    if library is None:
        note(
            f"note: no OpenMP device runtime for {arch} (libomptarget-nvptx-{arch}.bc; {OFFLOAD_INSTALL_HINT}): "
            "the target regions are built without it and libdevice, which a program's build links in"
        )
    return library


def _transfers_program(target: str) -> Path:
    """The program `gpu transfers` reads: a file, or the OpenMP program a `bench://kernels-v1/omp/<family>` URI
    names."""
    if not is_benchmark_uri(target):
        return _not_a_directory(Path(target))
    program = _offload_program(target)
    if program is None:
        raise InputError(
            f"{target}: gpu transfers reads a whole OpenMP program: a C/C++ file or "
            f"{KERNELS_URI}{OPENMP_PREFIX}<family>"
        )
    return program


def _not_a_directory(path: Path) -> Path:
    if path.is_dir():
        raise InputError(f"{path} is a directory: give one file (.cu, C/C++ with OpenMP target regions, device IR)")
    return path


def _offload_program(target: str) -> Path | None:
    """The C/C++ program whose host side `gpu optimize` chooses too: a C/C++ file, or the OpenMP program a
    `bench://kernels-v1/omp/<family>` URI names (not one of its regions alone)."""
    if is_benchmark_uri(target):
        if not target.startswith(KERNELS_URI):
            return None
        source, kernel = kernel_uri_source(target)
        return source if kernel is None and source.suffix in C_SUFFIXES else None
    return Path(target) if Path(target).suffix in C_SUFFIXES | CXX_SUFFIXES else None


def _built_device_input(
    toolchain: Toolchain, cuda: CudaToolkit, target: str, module: IRModule, arch: str | None, clang_args: list[str]
) -> tuple[IRModule, CompileOptions, bool | None]:
    """Device IR as it is: its own sm_XX; --arch and clang arguments, which would change nothing, are refused."""
    if not is_device_triple(module.triple):
        if Path(target).is_file() and not Path(target).read_bytes().strip():
            raise InputError(f"{target} is empty: give device IR (clang --cuda-device-only -emit-llvm) or a .cu file")
        raise InputError(
            f"{target}: IR for {module.triple} (IR without a target triple is taken as the host's), not GPU device "
            "code (nvptx64): `stitchopt eval` measures host IR; device IR comes from clang --cuda-device-only"
        )
    text = disassemble(toolchain, module.bitcode, module.name)
    options = device_options(text, cuda, target)
    require_ptxas_arch(cuda, device_arch(options))
    if arch is not None and check_arch(arch) != device_arch(options):
        raise InputError(f"{target} is device IR for {device_arch(options)}: --arch applies to source files; drop it")
    if clang_args:
        raise InputError(f"{target} is device IR: clang arguments apply to source files; drop them")
    return module, options, openmp_runtime_linked(text)


def _document(
    file: str,
    arch: str,
    ptxas: str,
    pipelines: dict[str, str],
    builds: dict[str, DeviceBuild | str],
    runtime_linked: bool | None,
) -> dict[str, Any]:
    """Every build's kernels and their measures; for OpenMP target regions, whether the device runtime was linked
    in before optimizing (the measures include the runtime code the regions call only then)."""
    rows = []
    for label, build in builds.items():
        entry: dict[str, Any] = {"build": label, "pipeline": pipelines[label]}
        if isinstance(build, str):
            entry["error"] = build
        else:
            entry["kernels"] = {
                name: {
                    "sass_bytes": k.sass_bytes,
                    "sass_instructions": k.sass_bytes // SASS_WORD,
                    "ptx_instructions": k.ptx_instructions,
                    "loops": asdict(k.loops),
                    "registers": k.resources.registers,
                    "spill_store_bytes": k.resources.spill_store_bytes,
                    "spill_load_bytes": k.resources.spill_load_bytes,
                    "stack_bytes": k.resources.stack_bytes,
                    "occupancy": round(k.resources.occupancy(arch), 4),
                }
                for name, k in build.kernels.items()
            }
        rows.append(entry)
    document = {"file": str(file), "arch": arch, "ptxas": ptxas, "builds": rows}
    return document if runtime_linked is None else {**document, "openmp_runtime_linked": runtime_linked}


def _print(document: dict[str, Any]) -> None:
    table = Table(title=f"{document['file']} for {document['arch']} (ptxas {document['ptxas']})")
    for column in ("kernel", "build", "SASS bytes", "vs -O3", "registers", "spills (st/ld)", "stack", "occupancy"):
        table.add_column(column, justify="left" if column in ("kernel", "build") else "right")
    reference = document["builds"][0].get("kernels", {})
    for build in document["builds"]:
        if "error" in build:
            say(f"{build['build']}: {build['error']}")
            continue
        for name, k in build["kernels"].items():
            base = reference.get(name, {}).get("sass_bytes")
            change = f"{100 * (k['sass_bytes'] / base - 1):+.1f}%" if base else ""
            spills = f"{k['spill_store_bytes']}/{k['spill_load_bytes']}"
            table.add_row(
                name, build["build"], str(k["sass_bytes"]), change, str(k["registers"]), spills,
                str(k["stack_bytes"]), f"{100 * k['occupancy']:.0f}%",
            )  # fmt: skip
    print_table(table)
