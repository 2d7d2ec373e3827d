"""The model as the clang plugin reads it: `plugin.json` in the model directory (`stitchopt plugin export`).

The plugin is C++ inside the compiler and reads JSON with LLVM's own parser, so this file holds what its
ranking needs in plain lists: the representations (which the plugin computes itself), the standardizer, the
coreset lists already spelled as the `-passes=` text the wrapper runs (`tuned_pipeline`), and the ranker's
and chooser's arrays. Values are the saved model's own: the float32 arrays (the neighbours' training rows are
most of the file) in float32's shortest digits, which the plugin rounds back to float32, so that it computes
with the very doubles Python does and orders the lists as `FlagModel.rank_features` does, from a file half the
size of one with every double's 17 digits.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt import __version__
from stitchopt.models.fast_policy import FastPolicy
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NeighbourChooser
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import tuned_pipeline

PLUGIN_MODEL_NAME = "plugin.json"
PLUGIN_FORMAT = 1
NEVER_MARGIN = 1e9  # a fast margin of infinity (held-out folds said: always -Oz), as a JSON number


def plugin_model(model: FlagModel, catalogue: Catalogue, fast: FastPolicy | None = None) -> dict[str, Any]:
    """The plugin's view of `model`, its lists spelled for `catalogue`'s LLVM; `fast` for a model trained before
    margins were learned (`learning.train.fast_policy_for_model`), else the model's own."""
    fast = fast or model.fast
    ranker = model.ranker
    arrays = ranker.arrays()
    exported: dict[str, Any] = {
        "format": PLUGIN_FORMAT,
        "stitchopt": __version__,
        "llvm": model.llvm_version,
        "catalogue": model.catalogue,
        "model": model.identity,
        "representations": [[r.name, r.version] for r in model.representations],
        "standardizer": model.standardizer.to_dict(),
        "lists": [tuned_pipeline(passes, catalogue) for passes in model.lists],
        "ranker": {
            "neighbors": ranker.neighbors,
            "blend": ranker.blend,
            "shrink": ranker.shrink,
            # The shrinking term exactly as numpy computes it in `ListRanker.predict` (in the arrays' dtype).
            "shrunk_means": ((1.0 - ranker.shrink) * arrays["train_targets"].mean(axis=0)).astype(float).tolist(),
            **written_arrays(
                {"weights": arrays["weights"]}
                if ranker.blend == 0  # the neighbours' part only when it weighs
                else {name: arrays[name] for name in ("weights", "train_features", "train_targets")}
            ),
        },
        "chooser": _chooser(model),
    }
    if fast is not None:
        exported["fast_margin"] = NEVER_MARGIN if math.isinf(fast.margin) else fast.margin
        exported["fast"] = fast.to_dict()
    return exported


def _chooser(model: FlagModel) -> list[list[float]] | dict[str, Any] | None:
    """The softmax chooser as its weight matrix; the neighbours' chooser as an object of its settings and arrays."""
    chooser = model.chooser
    if isinstance(chooser, NeighbourChooser):
        assert chooser.train_features is not None and chooser.train_gains is not None
        return {
            "kind": "neighbours",
            "neighbors": chooser.neighbors,
            "shrink": chooser.shrink,
            "means": chooser.train_gains.mean(axis=0).tolist(),  # as numpy sums them in `NeighbourChooser.gains`
            **written_arrays({"train_features": chooser.train_features, "train_gains": chooser.train_gains}),
        }
    return None if chooser is None or chooser.weights is None else chooser.weights.tolist()


def written_arrays(arrays: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """`arrays` as nested lists, and `single`: true when they are written in float32's shortest digits, which the
    plugin rounds back to float32 (every value a float32, as the saved model's arrays are, and given back by its
    digits parsed as a double and rounded), else false, each double written in full, as the plugin then takes
    it."""
    singles = {name: array.astype(np.float32) for name, array in arrays.items()}
    short = {
        name: np.array([float(str(value)) for value in array.ravel()]).reshape(array.shape)
        for name, array in singles.items()
    }
    single = all(
        np.array_equal(singles[name].astype(float), arrays[name])
        and np.array_equal(short[name].astype(np.float32), singles[name])
        for name in arrays
    )
    chosen = short if single else {name: array.astype(float) for name, array in arrays.items()}
    return {"single": single, **{name: chosen[name].tolist() for name in arrays}}


def write_plugin_model(model: FlagModel, catalogue: Catalogue, path: Path, fast: FastPolicy | None = None) -> None:
    """Write atomically: a compile reading it meanwhile sees the old file or the new one."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(plugin_model(model, catalogue, fast), out, separators=(",", ":"))
            out.write("\n")
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
