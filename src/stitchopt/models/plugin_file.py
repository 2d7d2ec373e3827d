"""The model as the clang plugin reads it: `plugin.json` in the model directory (`stitchopt plugin export`), and
beside it the rows file it points into.

The plugin is C++ inside the compiler and reads JSON with LLVM's own parser, so this file holds what its
ranking needs: the representations (which the plugin computes itself), the standardizer, the coreset lists
already spelled as the `-passes=` text the wrapper runs (`tuned_pipeline`), and the ranker's and chooser's
arrays. The large arrays (the neighbours' training rows) are float32 values in the saved model, so they go to
`<name>-<hash>.rows` as little-endian float32, which the plugin reads with one copy: every compile loads the
model, and parsing them as JSON numbers cost 140 ms a compile at 1,925 rows (benchmarks/plugin_model_load.py).
The values are the saved model's own, so the plugin orders the lists as `FlagModel.rank_features` does.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt import __version__
from stitchopt.models.fast_policy import FastPolicy
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NeighbourChooser
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.frontend import LANGUAGE_SUFFIXES

PLUGIN_MODEL_NAME = "plugin.json"
ROWS_SUFFIX = ".rows"
PLUGIN_FORMAT = 2  # 2: the large arrays in a rows file
PER_LANGUAGE_FORMAT = 3  # a chooser per language, which a reader of format 2 would take for one over all programs
# Each language of a chooser per language with its own neighbours and shrink, which a reader of format 3 would
# answer with the chooser's.
TUNED_PLUGIN_FORMAT = 4
NEVER_MARGIN = 1e9  # a fast margin of infinity (held-out folds said: always -Oz), as a JSON number


@dataclass(frozen=True)
class PluginExport:
    """plugin.json's document and the bytes of the rows file it names (`document["rows"]["file"]`; empty when
    every array is written in the document)."""

    document: dict[str, Any]
    rows: bytes


class RowsFile:
    """The float32 arrays written so far, in the order written."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.values = 0

    def add(self, array: np.ndarray) -> dict[str, int]:
        """Where the plugin finds `array` (a float32 matrix) in the file."""
        where = {"offset": self.values, "rows": int(array.shape[0]), "cols": int(array.shape[1])}
        self.chunks.append(array.astype("<f4").tobytes())
        self.values += array.size
        return where


def plugin_model(
    model: FlagModel, catalogue: Catalogue, fast: FastPolicy | None = None, name: str = PLUGIN_MODEL_NAME
) -> PluginExport:
    """The plugin's view of `model`, its lists spelled for `catalogue`'s LLVM; `fast` for a model trained before
    margins were learned (`learning.train.fast_policy_for_model`), else the model's own; `name`: the document's
    file name, which names the rows file after it."""
    fast = fast or model.fast
    ranker = model.ranker
    arrays = ranker.arrays()
    rows = RowsFile()
    ranked = {
        "neighbors": ranker.neighbors,
        "blend": ranker.blend,
        "shrink": ranker.shrink,
        # The shrinking term exactly as numpy computes it in `ListRanker.predict` (in the arrays' dtype).
        "shrunk_means": ((1.0 - ranker.shrink) * arrays["train_targets"].mean(axis=0)).astype(float).tolist(),
        **written_arrays(
            {"weights": arrays["weights"]}
            if ranker.blend == 0  # the neighbours' part only when it weighs
            else {field: arrays[field] for field in ("weights", "train_features", "train_targets")},
            rows,
        ),
    }
    chooser = _chooser(model, rows)
    per_language = isinstance(chooser, dict) and "languages" in chooser
    tuned = per_language and isinstance(model.chooser, NeighbourChooser) and bool(model.chooser.language_settings)
    exported: dict[str, Any] = {
        "format": TUNED_PLUGIN_FORMAT if tuned else PER_LANGUAGE_FORMAT if per_language else PLUGIN_FORMAT,
        "stitchopt": __version__,
        "llvm": model.llvm_version,
        "catalogue": model.catalogue,
        "model": model.identity,
        "representations": [[r.name, r.version] for r in model.representations],
        "standardizer": model.standardizer.to_dict(),
        "lists": [tuned_pipeline(passes, catalogue) for passes in model.lists],
        "ranker": ranked,
        "chooser": chooser,
    }
    if fast is not None:
        exported["fast_margin"] = NEVER_MARGIN if math.isinf(fast.margin) else fast.margin
        exported["fast"] = fast.to_dict()
    data = b"".join(rows.chunks)
    if data:
        digest = hashlib.sha256(data).hexdigest()[:16]
        exported["rows"] = {"file": f"{Path(name).stem}-{digest}{ROWS_SUFFIX}", "bytes": len(data)}
    return PluginExport(exported, data)


def _chooser(model: FlagModel, rows: RowsFile) -> list[list[float]] | dict[str, Any] | None:
    """The softmax chooser as its weight matrix; the neighbours' chooser as an object of its settings and arrays,
    and a chooser per language with each language's source suffixes (which the plugin reads the module's
    source file name by, as `source_language` does, where its IR shows no language) and means."""
    chooser = model.chooser
    if isinstance(chooser, NeighbourChooser):
        assert chooser.train_features is not None and chooser.train_gains is not None
        exported = {
            "kind": "neighbours",
            "neighbors": chooser.neighbors,
            "shrink": chooser.shrink,
            "means": chooser.train_gains.mean(axis=0).tolist(),  # as numpy sums them in `NeighbourChooser.gains`
            **written_arrays({"train_features": chooser.train_features, "train_gains": chooser.train_gains}, rows),
        }
        if chooser.train_languages is not None:
            suffixes = {str(name): sorted(found) for name, found in LANGUAGE_SUFFIXES.items()}
            exported["languages"] = [
                {
                    "name": language,
                    "suffixes": suffixes.get(language, []),  # a language this stitchopt lacks: no file matches
                    "means": _language_means(chooser, code),
                    **_language_settings(chooser, code),
                }
                for code, language in enumerate(chooser.languages)
            ]
            exported["train_languages"] = rows.add(chooser.train_languages.astype(np.float32)[:, None])
        return exported
    return None if chooser is None or chooser.weights is None else chooser.weights.tolist()


def _language_settings(chooser: NeighbourChooser, code: int) -> dict[str, Any]:
    """A language's own neighbours and shrink where training tuned them per language."""
    if not chooser.language_settings:
        return {}
    count, shrink = chooser.language_settings[code]
    return {"neighbors": count, "shrink": shrink}


def _language_means(chooser: NeighbourChooser, code: int) -> list[float]:
    """Each list's mean gain over one language's training programs, as numpy sums them in its chooser."""
    gains = chooser.for_language(code).train_gains
    assert gains is not None
    return list(gains.mean(axis=0).tolist())


def written_arrays(arrays: Mapping[str, np.ndarray], rows: RowsFile) -> dict[str, Any]:
    """`arrays` as the document holds them: where they are in `rows` when every value is a float32 (as the saved
    model's arrays are), else as nested lists of doubles."""
    if all(np.array_equal(array.astype(np.float32).astype(float), array) for array in arrays.values()):
        return {name: rows.add(array.astype(np.float32)) for name, array in arrays.items()}
    return {name: array.astype(float).tolist() for name, array in arrays.items()}


def write_plugin_model(model: FlagModel, catalogue: Catalogue, path: Path, fast: FastPolicy | None = None) -> None:
    """Write the rows file, then the document, each atomically; the rows file is named after its contents. A
    compile that read the document being replaced still finds that document's rows file, which is kept until
    the next export; older rows files of this document are removed."""
    export = plugin_model(model, catalogue, fast, path.name)
    kept = {_rows_file(path), export.document.get("rows", {}).get("file")}
    if export.rows:
        _write_atomically(path.parent / export.document["rows"]["file"], export.rows)
    _write_atomically(path, (json.dumps(export.document, separators=(",", ":")) + "\n").encode())
    ours = re.compile(re.escape(path.stem) + r"-[0-9a-f]{16}" + re.escape(ROWS_SUFFIX))
    for stale in path.parent.iterdir():
        if ours.fullmatch(stale.name) and stale.name not in kept:
            stale.unlink(missing_ok=True)


def _rows_file(path: Path) -> str | None:
    """The rows file the document at `path` names now (None: none, or no readable document)."""
    try:
        rows = json.loads(path.read_text()).get("rows")
    except (OSError, ValueError, AttributeError):
        return None
    return rows.get("file") if isinstance(rows, dict) else None


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
