"""Hybrid mode: hot functions are tuned one by one (each tries the model's top k lists on its own, jit-style),
the rest of the module gets the static choice; the parts are optimized apart, relinked (`toolchain.split`) and
compiled once. The result is kept only when it is smaller than the whole module at -Oz, so hybrid mode is never
worse than -Oz either. With a validation, every list in the answer passed it (a part whose lists all fail
gets -Oz), and every list passed the guards of its part (the static list those of the whole module), as in
static and jit mode.

Hotness comes from a profile of the user's run command (`-fprofile-instr-generate`, `llvm-profdata`): the
fewest functions that together take `share` of all function entries.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.apply.choose import oz_backup_size
from stitchopt.apply.modes import RANKED_K
from stitchopt.core import IRModule
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.hotpath.profile import instrumented_run
from stitchopt.models.list_model import ListModel
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import FRONTEND_TIMEOUT_S, module_from_bitcode
from stitchopt.toolchain.llvm import llc_command, opt_command
from stitchopt.toolchain.process import run_tool
from stitchopt.toolchain.split import extract_function, relink, symbols, without_functions
from stitchopt.tune.acceptance import ListValidation, program_guard
from stitchopt.tune.session import first_valid

_COUNT_RE = re.compile(r"^  (\S.*):\n(?:    .*\n)*?    Function count: (\d+)", re.M)
REST = "<rest of the module>"


@dataclass(frozen=True)
class HybridChoice:
    lists: dict[str, str]  # hot function (and REST) -> the pipeline its part was optimized with
    size_bytes: int  # the object kept: the relinked parts, or -Oz when that was smaller
    oz_size_bytes: int
    split_kept: bool  # False when -Oz of the whole module was at least as small
    compilations: int
    notes: tuple[str, ...] = ()  # what validation said, per part


def profile_counts(
    toolchain: Toolchain,
    source: Path,
    run_args: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    timeout: float = 120.0,
) -> dict[str, int]:
    """Function entry counts of one run of the program with `run_args`."""
    with tempfile.TemporaryDirectory(prefix="stitchopt-profile-") as scratch:
        done = instrumented_run(
            toolchain,
            [toolchain.tool("clang"), *extra_args],
            source,
            ["-lm"],
            ["{exe}", *run_args],
            Path(scratch),
            timeout=timeout,
        )
        if done.timed_out or done.profile is None:
            raise InputError(f"{source}: the profiling run {'timed out' if done.timed_out else 'wrote no profile'}")
        shown = run_tool(
            [toolchain.tool("llvm-profdata"), "show", "--all-functions", str(done.profile)], timeout=FRONTEND_TIMEOUT_S
        )
        if shown.returncode != 0:
            raise InputError(f"llvm-profdata show failed: {first_error(shown.stderr_text)}")
    text = shown.stdout.decode(errors="replace")
    # static functions are shown as `file.c:name`
    return {name.rpartition(":")[2]: int(count) for name, count in _COUNT_RE.findall(text)}


def hot_functions(counts: Mapping[str, int], share: float = 0.9, limit: int = 8) -> list[str]:
    """The fewest functions whose entries add up to `share` of all entries (at most `limit`; none if no entries)."""
    total = sum(counts.values())
    chosen: list[str] = []
    covered = 0
    for name, count in sorted(counts.items(), key=lambda item: -item[1]):
        if total == 0 or covered >= share * total or len(chosen) == limit or count == 0:
            break
        chosen.append(name)
        covered += count
    return chosen


def optimize_hybrid(
    evaluator: Evaluator,
    catalogue: Catalogue,
    model: ListModel,
    module: IRModule,
    hot: Sequence[str],
    k: int = RANKED_K,
    validation: ListValidation | None = None,
) -> tuple[bytes, HybridChoice]:
    """The object bytes and what was chosen. `hot` names must be functions the module defines."""
    toolchain = evaluator.toolchain
    original = symbols(toolchain, module.bitcode, module.name)
    unknown = [f for f in hot if f not in original.functions]
    if unknown:
        raise InputError(f"{module.name}: no function {unknown[0]!r} is defined here (hot functions must be)")
    oz = evaluator.baselines["Oz"]
    ranked = cached_rank(model, toolchain, module, evaluator.store)
    static = oz.pipeline if ranked[0].passes is None else tuned_pipeline(ranked[0].passes, catalogue)
    notes: list[str] = []
    reasons = program_guard(evaluator, module)(static) if ranked[0].passes is not None else []
    if reasons:
        notes.append(f"{REST}: static list failed the guards: {'; '.join(reasons)}")
        static = oz.pipeline
    elif validation is not None and ranked[0].passes is not None:
        verified = validation.check(static)
        notes.append(f"{REST}: static list {verified.note}")
        static = static if verified.passed else oz.pipeline
    candidates = [e.passes for e in ranked[:k] if e.passes is not None]
    tried = [oz.pipeline, *(tuned_pipeline(passes, catalogue) for passes in candidates)]
    chosen = {REST: static}
    compilations = 2  # the rest with the static list, the whole module at -Oz
    extracted = {f: extract_function(toolchain, module.bitcode, f) for f in hot}
    for function, bitcode in extracted.items():
        part = module_from_bitcode(toolchain, bitcode, function)
        part_oz, *results = evaluator.evaluate_many([EvalRequest(part, p, oz.options) for p in tried])
        compilations += len(tried)
        baseline = part_oz.size_bytes if part_oz.ok and part_oz.size_bytes else math.inf  # any list beats a failure
        sizes = sorted(
            ((p, r.size_bytes) for p, r in zip(candidates, results, strict=True) if r.ok and r.size_bytes),
            key=lambda item: item[1],
        )
        ratios = [(p, size / baseline) for p, size in sizes]
        passes, said = first_valid(ratios, catalogue, validation, program_guard(evaluator, part))
        chosen[function] = oz.pipeline if passes is None else tuned_pipeline(passes, catalogue)
        notes += [f"{function}: {note}" for note in said]
    parts = [_optimized(toolchain, bitcode, chosen[f], oz.options.opt_args()) for f, bitcode in extracted.items()]
    parts.append(
        _optimized(toolchain, without_functions(toolchain, module.bitcode, hot), static, oz.options.opt_args())
    )
    joined = _object(toolchain, relink(toolchain, parts, original.exported), oz.options.llc_flags())
    size = object_sizes(joined).size_bytes
    oz_size = oz_backup_size(module, evaluator.evaluate(module, oz.pipeline, oz.options))
    if size < oz_size:
        return joined, HybridChoice(chosen, size, oz_size, True, compilations, tuple(notes))
    whole = _object(
        toolchain, _optimized(toolchain, module.bitcode, oz.pipeline, oz.options.opt_args()), oz.options.llc_flags()
    )
    return whole, HybridChoice(chosen, oz_size, oz_size, False, compilations, tuple(notes))


def _optimized(toolchain: Toolchain, bitcode: bytes, pipeline: str, opt_args: Sequence[str]) -> bytes:
    run = run_tool(
        opt_command(toolchain.tool("opt"), pipeline, flags=opt_args),
        stdin=bitcode,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if run.returncode != 0 or run.timed_out:
        raise InputError(f"opt failed on a part: {'timed out' if run.timed_out else first_error(run.stderr_text)}")
    return run.stdout


def _object(toolchain: Toolchain, bitcode: bytes, llc_flags: Sequence[str]) -> bytes:
    run = run_tool(
        llc_command(toolchain.tool("llc"), flags=llc_flags),
        stdin=bitcode,
        timeout=FRONTEND_TIMEOUT_S,
    )
    if run.returncode != 0 or run.timed_out:
        raise InputError(f"llc failed: {'timed out' if run.timed_out else first_error(run.stderr_text)}")
    return run.stdout
