"""`stitchopt doctor` and `stitchopt --version`: what stitchopt would use here, and what is missing for what."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import typer

from stitchopt import __version__
from stitchopt.cli.options import SUCCESS, LlvmOption, console
from stitchopt.diagnostics import exception_line
from stitchopt.errors import ToolchainError
from stitchopt.evaluation.evaluator import BACKEND_ENV, select_backend
from stitchopt.evaluation.native.pool import probe_native
from stitchopt.models.directory import model_identity, read_model_directory
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.runtimes import profile_runtime_package, profile_runtime_problem
from stitchopt.validate.sandbox import probe_isolation


def version_lines() -> list[str]:
    """stitchopt's version, the LLVM it would use (or why none) and the shipped model, without loading a model."""
    try:
        toolchain = find_toolchain()
        llvm = f"LLVM {toolchain.version_string} ({toolchain.tool('opt')}, from {toolchain.source})"
    except ToolchainError as exc:
        llvm = f"LLVM: not found ({exception_line(exc)})"
    config, arrays = read_model_directory(DEFAULT_MODEL_DIR)
    model = (
        f"model: shipped {DEFAULT_MODEL_DIR.name} model {model_identity(config, arrays)}, made by stitchopt "
        f"{config.get('stitchopt', '?')} for LLVM {config.get('llvm', '?')} (format {config.get('format', '?')})"
    )
    return [f"stitchopt {__version__}", llvm, model]


def show_version(shown: bool) -> None:
    """The eager `--version` callback: the version lines, then exit before any command runs."""
    if shown:
        for line in version_lines():
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(SUCCESS)


def doctor_command(llvm: LlvmOption = None) -> None:
    """Show the LLVM toolchain stitchopt will use and which optional parts are available."""
    toolchain = find_toolchain(llvm)
    console.print(f"[bold]LLVM {toolchain.version_string}[/bold] chosen from {toolchain.source}")
    for step in toolchain.searched:
        console.print(f"  skipped: {step}")
    for name, path in sorted(toolchain.tools.items()):
        console.print(f"  {name:<14} {path}")
    console.print(f"  target triple  {toolchain.default_triple}")
    console.print(f"  identity       {toolchain.identity}")
    for name, (present, purpose) in _system_parts().items():
        console.print(
            f"  {name:<14} {'found' if present else 'missing':<8} {purpose}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    problem = profile_runtime_problem(toolchain)
    console.print(
        "  profile rt     found"
        if problem is None
        else f"  profile rt     missing: install {profile_runtime_package(toolchain)} (hot-path profiles and"
        f" `optimize --mode hybrid --run` link it; {problem})"
    )
    isolation = probe_isolation()
    console.print(
        f"  sandbox        {'isolated' if isolation.available else 'warning: NOT isolated'}: {isolation.reason}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    probe = probe_native(toolchain)
    console.print(f"  native eval    {'available' if probe.available else 'unavailable'}: {probe.reason}")
    backend = select_backend(toolchain)
    console.print(f"  evaluator      [bold]{backend.name}[/bold] (override with --backend or ${BACKEND_ENV})")
    backend.close()


def _system_parts() -> dict[str, tuple[bool, str]]:
    """System tools and extras, each with whether it is found (without importing anything heavy) and what it is
    for."""
    found = shutil.which
    return {
        "prlimit": (found("prlimit") is not None, "required: resource limits of tools and test programs (util-linux)"),
        "valgrind": (found("valgrind") is not None, "optional: instruction counts for the perf objective"),
        "csmith": (found("csmith") is not None, "optional: the csmith validation suite"),
        "csmith.h": (
            any(Path(p).is_file() for p in ("/usr/include/csmith/csmith.h", "/usr/include/csmith.h")),
            "optional: building csmith programs (libcsmith-dev)",
        ),
        "cppcheck": (found("cppcheck") is not None, "optional: an anchor of `stitchopt security study` (cppcheck)"),
        "chromium": (
            found("chromium") is not None and found("chromedriver") is not None,
            "optional: the HTML reports' browser test (chromium, chromium-driver)",
        ),
        "stitch extra": (
            all(importlib.util.find_spec(m) is not None for m in ("torch", "ot", "sklearn")),
            "optional: stitchopt stitch and security (stitchopt[stitch])",
        ),
        "lift extra": (
            all(importlib.util.find_spec(m) is not None for m in ("transformers", "sacrebleu", "rapidfuzz")),
            "optional: stitchopt lift-eval (stitchopt[lift])",
        ),
    }
