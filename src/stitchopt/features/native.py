"""The shipped model's representations computed in C++ by stitchopt's pass plugin: one `opt` run of its
`print<stitchopt-features>` pass on the module's bytes, instead of `llvm-dis`, an `opt` run for the function
properties and Python parsers over the text. Inference on a large unit is mostly that parsing, and the plugin
computes what the Python representations do (`tests/integration/test_plugin_features.py` compares them); where
it could not (a function name the Python side would read back differently), it declines.

Nothing depends on it: where the plugin is not built, was built for another LLVM, declines, or fails, the
caller computes the Python representations, which also say what is wrong with a bad module. A failure is the
plugin's own only where Python then reads the module: the caller reports it then (`report_plugin_failure`),
once per process.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.features.base import FloatVector, Representation
from stitchopt.features.func_properties import DEFAULT_TIMEOUT_S
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.plugin_library import PLUGIN_PATH
from stitchopt.toolchain.process import run_tool

PRINTER = "print<stitchopt-features>"
PRINTED = (("autophase", 1), ("histogram", 1), ("func_properties", 1))  # what the printer computes, in order
DECLINED = "features could not be computed"  # how the printer says it cannot compute a module's features
LIBLLVM = re.compile(rb"libLLVM(?:\.so\.|-)(\d+)")  # the plugin's dependency on libLLVM names its major version
_failures_reported: set[Path] = set()


@dataclass(frozen=True)
class PluginFeatures:
    """The plugin's feature vector, or None with why when it gave none (`failure` empty: it does not apply or
    declined the module, nothing to report)."""

    values: FloatVector | None
    failure: str = ""


def plugin_features(
    toolchain: Toolchain, data: bytes, representations: Sequence[Representation], name: str = "<module>"
) -> PluginFeatures:
    """The concatenated vectors of `representations` for the module `data` (bitcode or text IR), where the
    plugin can give exactly them. A module that takes longer than the Python function properties allow is
    refused as there (InputError)."""
    wanted = tuple((r.name, r.version) for r in representations)
    plugin = PLUGIN_PATH
    if wanted != PRINTED or not plugin.is_file() or plugin_llvm_major(plugin) != toolchain.major:
        return PluginFeatures(None)
    argv = opt_command(
        toolchain.tool("opt"), PRINTER, flags=[f"-load-pass-plugin={plugin}"], args=["-disable-output", "-"]
    )
    run = run_tool(argv, stdin=data, timeout=DEFAULT_TIMEOUT_S)
    if run.timed_out:
        raise InputError(
            f"{name}: the model's features took over {DEFAULT_TIMEOUT_S:.0f} s; check the module's size, or "
            "leave it to -Oz"
        )
    if DECLINED in run.stderr_text:
        return PluginFeatures(None)
    if run.returncode != 0:
        return PluginFeatures(None, f"exit status {run.returncode}: {first_error(run.stderr_text)}")
    try:
        printed = json.loads(run.stdout)
        values = np.asarray(printed["values"], dtype=np.float64)
        groups = [tuple(item) for item in printed["representations"]]
        names = tuple(printed["names"])
    except (ValueError, KeyError, TypeError) as error:
        return PluginFeatures(None, f"its output is not the features' JSON ({error})")
    expected = tuple(feature for r in representations for feature in r.feature_names())
    if groups != list(wanted) or names != expected or values.shape != (len(expected),):
        return PluginFeatures(
            None, "it printed other features than this stitchopt computes (built from other sources?)"
        )
    return PluginFeatures(values)


@functools.cache
def plugin_llvm_major(plugin: Path) -> int | None:
    """The LLVM major version the plugin links (None: unknown), read from its libLLVM dependency: `opt` of
    another version may load it and crash."""
    found = LIBLLVM.search(plugin.read_bytes())
    return int(found.group(1)) if found else None


def report_plugin_failure(failure: str) -> None:
    """A warning, the first time in this process, that the plugin failed on a module Python could read."""
    if PLUGIN_PATH in _failures_reported:
        return
    _failures_reported.add(PLUGIN_PATH)
    warnings.warn(
        f"{PLUGIN_PATH}: the model's features fell back to Python ({failure}); rebuild the plugin (`make setup`) "
        "if inference is slow",
        stacklevel=3,
    )
