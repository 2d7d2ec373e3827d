"""How plugin.json writes the model's arrays: float32 matrices into the rows file the plugin copies in one go,
anything else as JSON numbers (the plugin's parity with Python is test_plugin.py's)."""

from __future__ import annotations

import numpy as np

from stitchopt.models.plugin_file import RowsFile, written_arrays


def test_float32_matrices_go_to_the_rows_file_in_order() -> None:
    rows = RowsFile()
    first = np.random.default_rng(1).normal(size=(30, 7)).astype(np.float32).astype(float)  # as models load them
    second = np.ones((2, 3), dtype=np.float32)
    written = written_arrays({"train_features": first, "train_gains": second}, rows)
    assert written == {
        "train_features": {"offset": 0, "rows": 30, "cols": 7},
        "train_gains": {"offset": 210, "rows": 2, "cols": 3},
    }
    data = np.frombuffer(b"".join(rows.chunks), dtype="<f4")
    assert np.array_equal(data[:210].reshape(30, 7).astype(float), first) and np.all(data[210:] == 1)


def test_an_array_with_a_value_float32_cannot_hold_stays_in_the_document() -> None:
    rows = RowsFile()
    written = written_arrays(
        {"weights": np.array([[1.0]], dtype=np.float32), "train_features": np.array([[0.1]])}, rows
    )
    assert written == {"weights": [[1.0]], "train_features": [[0.1]]} and rows.values == 0
