"""How plugin.json writes the model's arrays: float32 values in their shortest digits, flagged for the plugin
to round back, and anything else in full (the plugin's parity with Python is test_plugin.py's)."""

from __future__ import annotations

import json

import numpy as np

from stitchopt.models.plugin_file import written_arrays


def test_float32_values_are_written_short_and_flagged_single() -> None:
    rows = np.random.default_rng(1).normal(size=(30, 7)).astype(np.float32).astype(float)  # as models load them
    written = written_arrays({"train_features": rows})
    text = json.dumps(written)
    assert written["single"] is True and len(text) < len(json.dumps(rows.tolist())) * 0.7
    parsed = np.array(json.loads(text)["train_features"])  # what the plugin reads: doubles, then float32
    assert np.array_equal(parsed.astype(np.float32).astype(float), rows)


def test_an_array_with_a_value_float32_cannot_hold_is_written_in_full() -> None:
    rows = np.array([[0.5, 0.1]])  # 0.1 as a double is no float32
    written = written_arrays({"weights": np.array([[1.0]], dtype=np.float32), "train_features": rows})
    assert written["single"] is False and written["train_features"] == [[0.5, 0.1]]
