"""`stitchopt doctor` and `stitchopt --version`: what stitchopt would use here, and what is missing for what."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import typer

from stitchopt import __version__
from stitchopt.cli.exit_codes import SUCCESS
from stitchopt.cli.options import JsonOption, LlvmOption, console
from stitchopt.diagnostics import exception_line
from stitchopt.errors import ToolchainError
from stitchopt.evaluation.evaluator import BACKEND_ENV, select_backend
from stitchopt.evaluation.native.pool import probe_native
from stitchopt.models.directory import model_identity, read_model_directory
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.toolchain.cuda import (
    CUDA_INSTALL_HINT,
    OFFLOAD_INSTALL_HINT,
    find_cuda,
    nvptx_registered,
    openmp_offload_bitcode,
)
from stitchopt.toolchain.device import DEFAULT_ARCH
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.offload_build import RUNTIME_LIBRARY, runtime_directory
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


def doctor_command(json_output: JsonOption = False, llvm: LlvmOption = None) -> None:
    """Show the LLVM toolchain stitchopt will use and which optional parts are available."""
    found = diagnosis(find_toolchain(llvm))
    if json_output:
        print(json.dumps(found, indent=2))
    else:
        _print_diagnosis(found)


def diagnosis(toolchain: Toolchain) -> dict[str, Any]:
    """Everything doctor checks, as one document (--json prints it, the text view reads it)."""
    llvm = {
        "version": toolchain.version_string,
        "source": toolchain.source,
        "skipped": list(toolchain.searched),
        "tools": {name: str(path) for name, path in sorted(toolchain.tools.items())},
        "target_triple": toolchain.default_triple,
        "identity": toolchain.identity,
    }
    parts = {name: {"found": present, "purpose": purpose} for name, (present, purpose) in _system_parts().items()}
    problem = profile_runtime_problem(toolchain)
    isolation = probe_isolation()
    native = probe_native(toolchain)
    backend = select_backend(toolchain)
    backend.close()
    return {
        "stitchopt": __version__,
        "llvm": llvm,
        "parts": parts,
        "profile_runtime": {
            "found": problem is None,
            "problem": problem,
            "package": profile_runtime_package(toolchain),
        },
        "sandbox": {"isolated": isolation.available, "reason": isolation.reason},
        "native_evaluator": {"available": native.available, "reason": native.reason},
        "evaluator": backend.name,
        "gpu": gpu_diagnosis(toolchain),
    }


def gpu_diagnosis(toolchain: Toolchain, arch: str = DEFAULT_ARCH) -> dict[str, Any]:
    """What GPU device code needs: the NVPTX back end, a CUDA toolkit, the OpenMP offload runtime; each part
    missing comes with what to install."""
    try:
        cuda = find_cuda()
        toolkit: dict[str, Any] = {
            "found": True,
            "ptxas": str(cuda.ptxas),
            "version": cuda.version,
            "headers": str(cuda.root) if cuda.root is not None else None,
            "source": cuda.source,
            "problem": None
            if cuda.headers
            else f"ptxas without CUDA's headers: .cu files need them; {CUDA_INSTALL_HINT}",
        }
    except ToolchainError as exc:
        toolkit = {"found": False, "problem": exception_line(exc)}
    offload = openmp_offload_bitcode(toolchain, arch)
    try:
        runtime: dict[str, Any] = {"found": True, "library": str(runtime_directory(toolchain) / RUNTIME_LIBRARY)}
    except ToolchainError as exc:
        runtime = {"found": False, "problem": exception_line(exc)}
    return {
        "nvptx": nvptx_registered(toolchain),
        "cuda": toolkit,
        "openmp_offload": {
            "arch": arch,
            "bitcode": None if offload is None else str(offload),
            "problem": None if offload is not None else f"no libomptarget-nvptx bitcode: {OFFLOAD_INSTALL_HINT}",
        },
        "offload_runs": runtime,
    }


def _print_diagnosis(found: dict[str, Any]) -> None:
    llvm = found["llvm"]
    console.print(f"[bold]LLVM {llvm['version']}[/bold] chosen from {llvm['source']}")
    for step in llvm["skipped"]:
        console.print(f"  skipped: {step}")
    for name, path in llvm["tools"].items():
        console.print(f"  {name:<14} {path}")
    console.print(f"  target triple  {llvm['target_triple']}")
    console.print(f"  identity       {llvm['identity']}")
    for name, part in found["parts"].items():
        console.print(
            f"  {name:<14} {'found' if part['found'] else 'missing':<8} {part['purpose']}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    runtime = found["profile_runtime"]
    console.print(
        "  profile rt     found"
        if runtime["found"]
        else f"  profile rt     missing: install {runtime['package']} (hot-path profiles and"
        f" `optimize --mode hybrid --run` link it; {runtime['problem']})"
    )
    sandbox = found["sandbox"]
    console.print(
        f"  sandbox        {'isolated' if sandbox['isolated'] else 'warning: NOT isolated'}: {sandbox['reason']}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    native = found["native_evaluator"]
    console.print(f"  native eval    {'available' if native['available'] else 'unavailable'}: {native['reason']}")
    console.print(f"  evaluator      [bold]{found['evaluator']}[/bold] (override with --backend or ${BACKEND_ENV})")
    gpu = found["gpu"]
    lines = [f"  nvptx          {'found' if gpu['nvptx'] else 'missing: this LLVM has no NVPTX back end'}"]
    cuda = gpu["cuda"]
    lines.append(
        f"  ptxas          {cuda['version']} ({cuda['ptxas']}, from {cuda['source']})"
        if cuda["found"]
        else "  ptxas          missing"
    )
    if cuda["found"] and cuda["headers"]:
        lines.append(f"  CUDA headers   {cuda['headers']}")
    offload = gpu["openmp_offload"]
    lines.append(f"  omp offload    {offload['bitcode'] or 'missing'} ({offload['arch']})")
    runs = gpu["offload_runs"]
    lines.append(
        f"  offload runs   {runs['library'] + ' (the host CPU as the device)' if runs['found'] else 'missing'}"
    )
    problems = (cuda["problem"], offload["problem"], runs.get("problem"))
    lines += [f"                 {problem}" for problem in problems if problem]
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


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
