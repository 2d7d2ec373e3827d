"""Model builds: `stitchopt-cc` with STITCHOPT_MODEL, STITCHOPT_LIST or STITCHOPT_MODE set builds each unit as
`cc.plan` says (the user's clang and flags, only the pipeline chosen), tries the lists the mode allows
besides -Oz, and keeps the smallest object whose list passes the unit's guards (`validate.guards`, which include
the security guard); objects are cached by everything that decides them.

When a unit cannot be built this way (the user's own list among them: `STITCHOPT_LIST` that `opt` rejects), the
real compiler runs the command as asked; unless that was the user's own compile error, one line on stderr names
the unit and the cause and the build log gets a `failed` entry. A searching mode whose search fails keeps the
model's choice and -Oz, with one warning. The build never depends on a model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stitchopt.cache.store import EvaluationStore
from stitchopt.cc.build_log import BuildEntry, append_entry
from stitchopt.cc.compiler import run_compiler
from stitchopt.cc.plan import CompilePlan, PassThrough, Unit, plan_command
from stitchopt.cc.settings import LOG_ENV, BuildSettings
from stitchopt.core import MEASUREMENT_VERSION, CompileOptions, IRModule
from stitchopt.datasets.recording import wrapper_toolchain
from stitchopt.diagnostics import exception_line, first_error
from stitchopt.errors import InputError
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.toolchain.baselines import OPT_FLAGS, clang_pipeline
from stitchopt.toolchain.commands import CXX_DRIVER, IR_TIMEOUT_S, Source, is_cxx_driver
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import disassemble, module_from_text
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.process import run_tool
from stitchopt.validate.guards import GUARDS_VERSION, Guard

OBJECT_KIND = "object"  # artifacts of the evaluation store: bounded and evicted with it
# Part of an object's cache key: bumped when the rules that choose a unit's object change, so that an object
# cached under the old rules (e.g. a user's list opt rejects, once silently -Oz; C++ compiled from a `.c` file,
# once answered as C) is built again.
CHOICE_RULES_VERSION = "3"


class UnitFailed(Exception):
    """A unit could not be built the model's way. `frontend`: the -Oz front end itself failed, which is the
    user's own compile error unless the command as asked succeeds."""

    def __init__(self, reason: str, *, frontend: bool = False) -> None:
        super().__init__(reason)
        self.frontend = frontend


class _PlanFailed(Exception):
    def __init__(self, entry: BuildEntry, cause: UnitFailed) -> None:
        super().__init__(f"{entry.unit}: {cause}")
        self.entry = entry
        self.cause = cause


@dataclass(frozen=True)
class BuiltObject:
    """One candidate's object file and what building it printed."""

    pipeline: str | None  # None: -Oz
    path: Path
    size: int
    stderr: str
    seconds: float


def model_build(
    env: Mapping[str, str], compiler: Sequence[str], args: Sequence[str], clang: str, cxx: bool
) -> int | None:
    """Run `compiler args` as a model build and return its exit status; None leaves the command to the real
    compiler. The compiler's own extra words (`STITCHOPT_REAL_CC="clang-19 -m32"`) count as the user's flags."""
    start = time.perf_counter()
    try:
        settings = BuildSettings.from_env(env, DEFAULT_MODEL_DIR)
    except InputError as error:  # a bad setting: say so on every compile, but build
        print(f"stitchopt: {error}; building as asked", file=sys.stderr)
        return None
    if settings is None:
        return None
    words = [*compiler[1:], *args]
    cxx = cxx or is_cxx_driver(compiler[0]) or CXX_DRIVER in compiler
    plan = plan_command(words, cxx_driver=cxx, clang=clang, real_compiler_is_clang=_same_file(compiler[0], clang))
    if plan is None:
        return None
    if isinstance(plan, PassThrough):
        for source in plan.sources:
            entry = _entry(source, "passed_through", settings.mode, plan.output, reason=plan.reason)
            _log(settings, entry)
        return None
    try:
        return _run_plan(plan, settings, compiler[0], start)
    except _PlanFailed as failed:
        status = run_compiler([*compiler, *args])
        if status == 0 or not failed.cause.frontend:  # not the user's own compile error
            outcome = "the compiler built it as asked" if status == 0 else f"the compiler failed too (exit {status})"
            print(f"stitchopt: {failed}; {outcome}", file=sys.stderr)
            _log(settings, failed.entry)
        return status
    except Exception as error:  # the cache, the toolchain, the linker: the real compiler redoes the command
        print(f"stitchopt: {exception_line(error)}; building as asked", file=sys.stderr)
        for unit in plan.units:
            output = str(unit.output) if unit.output is not None else None
            _log(settings, _entry(unit.source, "failed", settings.mode, output, reason=exception_line(error)))
        return None


def _run_plan(plan: CompilePlan, settings: BuildSettings, linker: str, start: float) -> int:
    """Build every unit, then link when the command links; diagnostics and log entries are held until the
    whole command succeeded, so that a fallback to the real compiler never repeats them."""
    toolchain = wrapper_toolchain()
    diagnostics: list[str] = []
    entries: list[BuildEntry] = []
    with EvaluationStore() as store, tempfile.TemporaryDirectory(prefix="stitchopt-build-") as scratch:
        objects = []
        for index, unit in enumerate(plan.units):
            target = unit.output or Path(scratch, f"unit{index}.o")
            try:
                entry, printed = _build_unit(
                    plan, unit, settings, toolchain, store, Path(scratch, f"unit{index}"), target
                )
            except Exception as error:
                cause = error if isinstance(error, UnitFailed) else UnitFailed(exception_line(error))
                output = str(unit.output) if unit.output is not None else None
                failed = _entry(unit.source, "failed", settings.mode, output, reason=str(cause))
                raise _PlanFailed(replace(failed, seconds=time.perf_counter() - start), cause) from error
            entries.append(replace(entry, seconds=time.perf_counter() - start))
            diagnostics.append(printed)
            start = time.perf_counter()
            objects.append(target)
        status = 0
        if plan.link is not None:  # the user's link: its stdout is theirs, its failure their own error
            link = subprocess.run(plan.link_argv([linker], objects), stderr=subprocess.PIPE)
            diagnostics.append(link.stderr.decode(errors="replace"))
            status = 128 - link.returncode if link.returncode < 0 else link.returncode
    sys.stderr.write("".join(diagnostics))
    for entry in entries:
        if entry.reason is not None:  # built, but not the way the mode asked: a search that failed
            warnings.warn(f"{entry.unit}: {entry.reason}", stacklevel=1)
        _log(settings, entry)
    return status


def _build_unit(
    plan: CompilePlan,
    unit: Unit,
    settings: BuildSettings,
    toolchain: Toolchain,
    store: EvaluationStore,
    scratch: Path,
    target: Path,
) -> tuple[BuildEntry, str]:
    """The unit's object at `target`, its log entry and what its compile printed."""
    scratch.mkdir()
    started = time.perf_counter()
    bitcode = scratch / "unit.bc"
    frontend = run_tool(plan.frontend_argv(unit, bitcode), timeout=IR_TIMEOUT_S)
    if frontend.returncode != 0 or frontend.timed_out:
        reason = "timed out" if frontend.timed_out else first_error(frontend.stderr_text)
        raise UnitFailed(f"the -Oz front end exited {frontend.returncode}: {reason}", frontend=True)
    frontend_seconds = time.perf_counter() - started
    bitcode_bytes = bitcode.read_bytes()
    flags = json.dumps(plan.clang[1:] + plan.flags)  # everything that reaches code generation
    digest = hashlib.sha256(bitcode_bytes).hexdigest()
    key = (
        digest,
        flags,
        unit.source.language,  # what the model answers the unit as: the same IR may come from C or C++
        toolchain.identity,
        settings.identity,
        str(MEASUREMENT_VERSION),
        GUARDS_VERSION,
        CHOICE_RULES_VERSION,
    )
    output = str(unit.output) if unit.output is not None else None  # None: an object for the link
    entry = _entry(unit.source, "oz", settings.mode, output)
    cached = store.get_artifact(OBJECT_KIND, *key)
    if cached is not None:
        header, _, data = cached.partition(b"\n")
        _write_atomically(target, data)
        stored: dict[str, Any] = json.loads(header)
        return _with_choice(entry, stored, cache="hit"), frontend.stderr_text + str(stored.get("stderr", ""))
    built, best, fallback = _build_candidates(plan, settings, toolchain, store, unit, bitcode, bitcode_bytes, scratch)
    oz = built[0]
    data = best.path.read_bytes()
    _write_atomically(target, data)
    choice: dict[str, Any] = {
        "outcome": "oz" if best.pipeline is None else "optimized",
        "pipeline": best.pipeline,
        "oz_bytes": oz.size,
        "bytes": best.size,
        "candidates": len(built) - 1,
        "stderr": best.stderr,  # code generation's warnings, replayed on a hit
    }
    if fallback is None:  # a search that failed is tried again by the next build
        store.put_artifact(OBJECT_KIND, json.dumps(choice).encode() + b"\n" + data, *key)
    entry = replace(
        _with_choice(entry, choice, cache="miss"), reason=fallback, plain_seconds=frontend_seconds + oz.seconds
    )
    return entry, frontend.stderr_text + best.stderr


def _entry(source: Source, outcome: str, mode: str, output: str | None, reason: str | None = None) -> BuildEntry:
    """A unit's log entry before its build: the source by absolute path, with the language it is compiled as
    (what the model reads it as)."""
    return BuildEntry(os.path.abspath(source.path), outcome, mode, output, reason=reason, language=source.language)


def _with_choice(entry: BuildEntry, choice: dict[str, Any], cache: str) -> BuildEntry:
    """The entry with what was chosen for the unit (stored beside a cached object)."""
    return replace(
        entry,
        outcome=str(choice["outcome"]),
        pipeline=choice["pipeline"],
        oz_bytes=int(choice["oz_bytes"]),
        bytes=int(choice["bytes"]),
        candidates=int(choice["candidates"]),
        cache=cache,
    )


def _build_candidates(
    plan: CompilePlan,
    settings: BuildSettings,
    toolchain: Toolchain,
    store: EvaluationStore,
    unit: Unit,
    bitcode: Path,
    bitcode_bytes: bytes,
    scratch: Path,
) -> tuple[list[BuiltObject], BuiltObject, str | None]:
    """-Oz first, then each list the mode chose that compiled (lists run in parallel with -Oz), the chosen
    object (`passing_guards`) and why a searching mode fell back to the model's choice (None: it did not)."""
    from stitchopt.cc.candidates import candidate_pipelines  # the model and numpy: only on a cache miss
    from stitchopt.passes.catalogue import load_catalogue

    text = disassemble(toolchain, bitcode_bytes, unit.source.path)
    module = module_from_text(toolchain, bitcode_bytes, text, Path(unit.source.path).name, unit.source.language)
    options = opt_options(plan, text)
    opt = toolchain.tool("opt")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        oz = pool.submit(_codegen, plan, bitcode, scratch / "oz.o", None)
        candidates = candidate_pipelines(settings, toolchain, load_catalogue(toolchain), module, store)
        futures = [
            pool.submit(object_with_pipeline, plan, opt, options, bitcode, scratch / f"list{i}", pipeline)
            for i, pipeline in enumerate(candidates.pipelines)
        ]
        built = [oz.result(), *_compiled(futures, required=settings.pass_list is not None)]
    chosen = passing_guards(built, lambda: unit_guard(toolchain, module, options))
    return built, chosen, candidates.fallback


def _compiled(futures: Iterable[Future[BuiltObject]], *, required: bool) -> list[BuiltObject]:
    """The candidates that compiled. A list the model chose may fail on a unit (-Oz stands in for it); the
    user's own list (`required`) failing fails the unit, with `opt`'s reason."""
    built = []
    for future in futures:
        try:
            built.append(future.result())
        except UnitFailed:
            if required:
                raise
    return built


def unit_guard(toolchain: Toolchain, module: IRModule, options: CompileOptions) -> Guard:
    """The unit's guards under the build's own `opt` options, against clang's -Oz pipeline."""
    return Guard(toolchain, module, options, clang_pipeline(toolchain, "Oz"), timeout=IR_TIMEOUT_S)


def passing_guards(built: list[BuiltObject], guard: Callable[[], Guard]) -> BuiltObject:
    """The smallest candidate below -Oz (`built[0]`) that passes the unit's guards (no miscompile signs, no
    security-relevant code removed relative to -Oz), else -Oz; checked smallest first, so the guards (two or
    three `opt -S`) run only when some list beat -Oz. The rule is `stitchopt optimize`'s, on objects."""
    from stitchopt.tune.session import first_passing  # the search's modules: only on a cache miss

    oz = built[0]
    smaller = sorted((b for b in built[1:] if b.pipeline is not None and b.size < oz.size), key=lambda b: b.size)
    if not smaller:
        return oz
    try:
        checks = guard()
    except InputError:  # the module cannot be read for the guards: -Oz, which needs no guard
        return oz
    by_pipeline = {b.pipeline: b for b in reversed(smaller)}  # a pipeline built twice: its smallest object
    chosen, _ = first_passing(
        ((b.pipeline, b.size / oz.size) for b in smaller if b.pipeline is not None),
        str,
        checks.check,
        limit=None,
        label=str,
    )
    return oz if chosen is None else by_pipeline[chosen]


def opt_options(plan: CompilePlan, ir_text: str) -> CompileOptions:
    """`opt`'s options as clang's -Oz runs its pipeline on this unit: the relocation model its flags chose (read
    from the IR's module flags), the -Oz inliner threshold, and the user's `-mllvm` options."""
    relocation = "pic" if '"PIC Level"' in ir_text else "static"
    mllvm = [value for flag, value in zip(plan.flags, plan.flags[1:], strict=False) if flag == "-mllvm"]
    return CompileOptions(relocation_model=relocation, opt_flags=(*OPT_FLAGS["Oz"], *mllvm))


def object_with_pipeline(
    plan: CompilePlan, opt: str, options: CompileOptions, bitcode: Path, stem: Path, pipeline: str
) -> BuiltObject:
    """`stem.o`: `pipeline` run by `opt` with the unit's `options`, then the user's code generation; UnitFailed
    if either fails."""
    started = time.perf_counter()
    optimized = stem.with_suffix(".bc")
    argv = opt_command(opt, pipeline, flags=options.opt_args(), args=[str(bitcode), "-o", str(optimized)])
    run = run_tool(argv, timeout=IR_TIMEOUT_S)
    if run.returncode != 0 or run.timed_out:
        reason = "timed out" if run.timed_out else first_error(run.stderr_text)
        raise UnitFailed(f"opt exited {run.returncode}: {reason}")
    built = _codegen(plan, optimized, stem.with_suffix(".o"), pipeline)
    return replace(built, seconds=time.perf_counter() - started)


def _codegen(plan: CompilePlan, bitcode: Path, output: Path, pipeline: str | None) -> BuiltObject:
    """The object of `bitcode`: clang's whole -Oz when `pipeline` is None, else code generation only."""
    started = time.perf_counter()
    run = run_tool(plan.codegen_argv(bitcode, output, optimize=pipeline is None), timeout=IR_TIMEOUT_S)
    if run.returncode != 0 or run.timed_out:
        reason = "timed out" if run.timed_out else first_error(run.stderr_text)
        raise UnitFailed(f"code generation exited {run.returncode}: {reason}")
    size = object_sizes(output.read_bytes()).size_bytes
    return BuiltObject(pipeline, output, size, run.stderr_text, time.perf_counter() - started)


def _write_atomically(target: Path, data: bytes) -> None:
    """Readers (a parallel make, a crash) see the old object or the new one, never half of one."""
    try:
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:  # the user's output directory: named, not the scratch file's name
        raise UnitFailed(f"cannot write {target}: {error.strerror}") from error
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _same_file(command: str, clang: str) -> bool:
    """Whether the real compile runs the toolchain's own clang (a model object is a clang object)."""
    found = shutil.which(command)
    return found is not None and os.path.realpath(found) == os.path.realpath(clang)


def _log(settings: BuildSettings, entry: BuildEntry) -> None:
    if settings.log is None:
        return
    try:
        append_entry(settings.log, entry)
    except OSError as error:
        print(
            f"stitchopt: cannot write the build log {settings.log}: {error.strerror}; set {LOG_ENV} to a writable file",
            file=sys.stderr,
        )
