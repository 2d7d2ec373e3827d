"""Where stitchopt's LLVM pass plugin lives: built by `pip install` beside its sources (`cc/plugin/`) when LLVM's
development files are there (setup.py), and found here as a tool like LLVM's own: by `stitchopt plugin path` for
`clang -fpass-plugin=$(stitchopt plugin path)`, by `opt` runs that load its passes (the offload hoisting pass,
the model's features in C++). The shipped model's plugin file (`models/default/plugin.json`) is found by the
plugin itself, relative to it."""

from __future__ import annotations

from pathlib import Path

from stitchopt.errors import ToolchainError

PLUGIN_PATH = Path(__file__).parents[1] / "cc" / "plugin" / "libstitchopt-plugin.so"


def plugin_path() -> Path:
    """The built plugin; ToolchainError saying how to get it when this install has none."""
    if not PLUGIN_PATH.is_file():
        raise ToolchainError(
            "this install has no clang plugin (it is built by `pip install` when llvm-config and LLVM's "
            "PassPlugin.h are found): install llvm-19-dev and reinstall stitchopt"
        )
    return PLUGIN_PATH
