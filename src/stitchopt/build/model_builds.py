"""Model-driven builds: with `STITCHOPT_MODEL` set (a model directory or `default`), the compiler wrapper
rebuilds each object it compiles (`-c` of one C/C++ source) with the model's top-ranked list, keeping it only
when it is smaller than -Oz.

The real compile always runs first, so the build never depends on this: any failure here leaves the object
the real compiler wrote and prints one line, and compiles whose flags a rebuild from IR cannot honour
(instrumentation, LTO, debug info, section layout, another compiler, a non-regular output) are passed through
(`build.passthrough`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule
from stitchopt.learning.kinds import load_model
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import module_from_bitcode, write_object


def rebuild_object(toolchain: Toolchain, model_dir: Path, bitcode: bytes, output: Path) -> str:
    """Replace `output` by the smaller of the model's top list and -Oz; return what was used."""
    catalogue = load_catalogue(toolchain)
    model = load_model(model_dir, catalogue)
    module: IRModule = module_from_bitcode(toolchain, bitcode, output.name)
    oz = load_baselines(toolchain, ("Oz",))["Oz"]
    with EvaluationStore() as store:  # a rebuild of an unchanged file skips the features
        top = cached_rank(model, toolchain, module, store)[0]
    candidates = {"-Oz": oz.pipeline}
    if top.passes is not None:
        candidates["model"] = tuned_pipeline(top.passes, catalogue)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=".stitchopt-") as scratch:
        built = {}
        for label, pipeline in candidates.items():
            path = Path(scratch) / f"{label}.o"
            write_object(toolchain, module, pipeline, oz.options, path)
            built[label] = (object_sizes(path.read_bytes()).size_bytes, path)
        label = min(built, key=lambda name: built[name][0])
        os.replace(built[label][1], output)
    return label if label == "-Oz" else candidates[label]
