"""Rankings kept by (model identity, LLVM, IR hash, source language), so that a rebuild, or a second
`optimize` or `predict` of the same translation unit, skips feature extraction (nearly all of the inference time).

Rows live in the evaluation store's artifact table, which evicts the least recently used rows once the file
passes its size bound; a row that cannot be read back is recomputed and overwritten.
"""

from __future__ import annotations

import json

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule
from stitchopt.models.list_model import ListModel, RankedList
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import module_language

KIND = "prediction"


def cached_rank(
    model: ListModel, toolchain: Toolchain, module: IRModule, store: EvaluationStore | None
) -> list[RankedList]:
    """`model.rank`, through `store` when there is one."""
    if store is None:
        return model.rank(toolchain, module)
    key = (model.identity, toolchain.identity, module.sha256, str(module_language(module)))
    data = store.get_artifact(KIND, *key)
    if data is not None:
        try:
            return [
                RankedList(None if passes is None else tuple(passes), float(ratio), size)
                for passes, ratio, size in json.loads(data)
            ]
        except (ValueError, TypeError):
            pass  # written by something else: recompute below
    ranked = model.rank(toolchain, module)
    rows = [[None if e.passes is None else list(e.passes), e.predicted_ratio, e.predicted_size] for e in ranked]
    store.put_artifact(KIND, json.dumps(rows).encode(), *key)
    return ranked
