"""Builds the optional native parts against the installed libLLVM (metadata lives in pyproject.toml).

Two plain shared libraries: the native evaluator, loaded with ctypes by worker processes, and the clang pass
plugin (`libstitchopt-plugin.so`, `clang -fpass-plugin=$(stitchopt plugin path)`). They are built when an
`llvm-config` is found (`$STITCHOPT_LLVM/llvm-config`, then `llvm-config-NN` newest first, then
`llvm-config`), and then a failed build is an error rather than a silent fallback. Without `llvm-config`, or
with STITCHOPT_NATIVE=off, stitchopt installs without them and uses the subprocess evaluator and the wrapper;
without LLVM's pass plugin header, without the plugin alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SUPPORTED_MAJORS = range(22, 16, -1)
PLUGIN = "stitchopt.cc.plugin.libstitchopt-plugin"
PLUGIN_SOURCES = [
    "plugin.cpp",
    "module_features.cpp",
    "model.cpp",
    "objects.cpp",
    "guards.cpp",
    "isolate.cpp",
    "target_data.cpp",
]


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
    # No fused multiply-adds (GCC contracts by default where the target has them, e.g. aarch64): the plugin's
    # model sums must round as numpy's do, or its order of lists could differ from Python's.
    compile_args = [*ask("--cxxflags"), "-O2", "-g0", "-ffp-contract=off"]
    link_args = [*ask("--ldflags"), *ask("--libs"), f"-Wl,-rpath,{libdir}"]
    extensions = [
        Extension(
            "stitchopt.evaluation.native._evaluator",
            sources=["src/stitchopt/evaluation/native/evaluator.cpp"],
            language="c++",
            define_macros=[("STITCHOPT_LLVM_BINDIR", f'"{bindir}"')],
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    ]
    if not (Path(ask("--includedir")[0]) / "llvm" / "Passes" / "PassPlugin.h").is_file():
        print("stitchopt: LLVM's PassPlugin.h is missing; building without the clang plugin", file=sys.stderr)
        return extensions
    # libLLVM is shared: the plugin links it dynamically, like clang and opt, so they share one copy.
    extensions.append(
        Extension(
            PLUGIN,
            sources=[f"src/stitchopt/cc/plugin/{name}" for name in PLUGIN_SOURCES],
            language="c++",
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
    )
    return extensions


class BuildNative(build_ext):
    """Names the plugin as a pass plugin is named (`libstitchopt-plugin.so`), not as a Python extension."""

    def get_ext_filename(self, fullname: str) -> str:
        """Asked with the full dotted name and with its last part alone (setuptools does both)."""
        *package, name = fullname.split(".")
        if name == PLUGIN.rsplit(".", 1)[1]:
            return os.path.join(*package, f"{name}.so")
        return str(super().get_ext_filename(fullname))


setup(ext_modules=native_extensions(), cmdclass={"build_ext": BuildNative})
