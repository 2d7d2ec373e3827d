"""Builds the optional native evaluator against the installed libLLVM (metadata lives in pyproject.toml).

The extension is a plain shared library loaded with ctypes by worker processes. It is built when an
`llvm-config` is found (`$STITCHOPT_LLVM/llvm-config`, then `llvm-config-NN` newest first, then
`llvm-config`), and then a failed build is an error rather than a silent fallback. Without `llvm-config`, or
with STITCHOPT_NATIVE=off, stitchopt installs without it and uses the subprocess evaluator.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup

SUPPORTED_MAJORS = range(22, 16, -1)


def find_llvm_config() -> str | None:
    explicit = os.environ.get("STITCHOPT_LLVM")
    if explicit:
        candidate = Path(explicit) / "llvm-config"
        return str(candidate) if candidate.is_file() else None
    for name in [f"llvm-config-{major}" for major in SUPPORTED_MAJORS] + ["llvm-config"]:
        found = shutil.which(name)
        if found:
            return found
    return None


def native_extensions() -> list[Extension]:
    if os.environ.get("STITCHOPT_NATIVE") == "off":
        return []
    config = find_llvm_config()
    if config is None:
        print("stitchopt: no llvm-config found; building without the native evaluator", file=sys.stderr)
        return []

    def ask(*flags: str) -> list[str]:
        return subprocess.run([config, *flags], check=True, capture_output=True, text=True).stdout.split()

    bindir, libdir = ask("--bindir")[0], ask("--libdir")[0]
    return [
        Extension(
            "stitchopt.evaluation.native._evaluator",
            sources=["src/stitchopt/evaluation/native/evaluator.cpp"],
            language="c++",
            define_macros=[("STITCHOPT_LLVM_BINDIR", f'"{bindir}"')],
            extra_compile_args=[*ask("--cxxflags"), "-O2", "-g0"],
            extra_link_args=[*ask("--ldflags"), *ask("--libs"), f"-Wl,-rpath,{libdir}"],
        )
    ]


setup(ext_modules=native_extensions())
