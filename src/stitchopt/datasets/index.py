"""The dataset index: one row per benchmark with its split and sizes, as Parquet for notebooks and models.

Sizes are clang's -O0 and -Oz pipelines on the entry's IR (evaluated through the cache). Standardization
statistics (mean and standard deviation of each numeric column over the train split) are stored in the
manifest, so feature pipelines scale inputs the same way at training and at prediction time.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from stitchopt.datasets.manifest import Manifest
from stitchopt.errors import DatasetError
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.toolchain.frontend import load_module

NUMERIC_COLUMNS = ("ir_instruction_count", "size_o0", "size_oz")


def index_rows(manifest: Manifest, directory: Path, evaluator: Evaluator) -> list[dict[str, Any]]:
    o0, oz = evaluator.baselines["O0"], evaluator.baselines["Oz"]
    modules = [load_module(evaluator.toolchain, directory / e.file) for e in manifest.entries]
    requests = [
        request
        for module in modules
        for request in (EvalRequest(module, o0.pipeline, o0.options), EvalRequest(module, oz.pipeline, oz.options))
    ]
    results = evaluator.evaluate_many(requests)
    rows = []
    for index, entry in enumerate(manifest.entries):
        at_o0, at_oz = results[2 * index], results[2 * index + 1]
        rows.append(
            {
                "uri": str(manifest.uri(entry)),
                "dataset": manifest.dataset,
                "package": entry.package,
                "split": entry.split,
                "language": entry.language,
                "ir_instruction_count": at_o0.ir_instruction_count,
                "size_o0": at_o0.size_bytes,
                "size_oz": at_oz.size_bytes,
                "sha256": entry.sha256,
            }
        )
    return rows


def standardization(rows: list[dict[str, Any]], split: str = "train") -> dict[str, dict[str, float]]:
    """Mean and standard deviation per numeric column over one split (all rows if the split is empty)."""
    chosen = [r for r in rows if r["split"] == split] or rows
    statistics = {}
    for column in NUMERIC_COLUMNS:
        values = [float(r[column]) for r in chosen if r[column] is not None]
        if not values:
            continue
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        statistics[column] = {"mean": mean, "std": std, "count": float(len(values))}
    return statistics


def write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DatasetError("Parquet export needs pyarrow: pip install 'stitchopt[data]'") from exc
    pq.write_table(pa.Table.from_pylist(rows), path)
