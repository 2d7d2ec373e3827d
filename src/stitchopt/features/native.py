"""The shipped model's representations computed in C++ by stitchopt's pass plugin: one `opt` run of its
`print<stitchopt-features>` pass on the module's bytes, instead of `llvm-dis`, an `opt` run for the function
properties and Python parsers over the text. Inference on a large unit is mostly that parsing (a 200 KB bitcode
file: about 200 ms of CPU in Python, 50 ms in the plugin), and the plugin computes exactly what the Python
representations do (`tests/integration/test_plugin_features.py`, which also compares the two here).

Nothing depends on it: where the plugin is not built, was built for another LLVM, or fails on the module, the
caller computes the Python representations, which also say what is wrong with a bad module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from stitchopt.features.base import FloatVector, Representation
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.plugin_library import PLUGIN_PATH
from stitchopt.toolchain.process import run_tool

PRINTER = "print<stitchopt-features>"
PRINTED = (("autophase", 1), ("histogram", 1), ("func_properties", 1))  # what the printer computes, in order
TIMEOUT_S = 120.0


def plugin_features(toolchain: Toolchain, data: bytes, representations: Sequence[Representation]) -> FloatVector | None:
    """The concatenated vectors of `representations` for the module `data` (bitcode or text IR), or None where
    the plugin cannot give exactly them."""
    wanted = tuple((r.name, r.version) for r in representations)
    if wanted != PRINTED or not PLUGIN_PATH.is_file():
        return None
    argv = opt_command(
        toolchain.tool("opt"), PRINTER, flags=[f"-load-pass-plugin={PLUGIN_PATH}"], args=["-disable-output", "-"]
    )
    run = run_tool(argv, stdin=data, timeout=TIMEOUT_S)
    if run.timed_out or run.returncode != 0:
        return None
    try:
        printed = json.loads(run.stdout)
        values = np.asarray(printed["values"], dtype=np.float64)
        names = [tuple(item) for item in printed["representations"]]
    except (ValueError, KeyError, TypeError):
        return None
    width = sum(len(r.feature_names()) for r in representations)
    if names != list(wanted) or values.shape != (width,):
        return None
    return values
