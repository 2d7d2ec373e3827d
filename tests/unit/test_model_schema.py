"""Damaged model directories are one line naming the file and the field, on load, not a traceback in
prediction: truncated weights, missing keys, wrong types, and weights that do not fit the configuration."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stitchopt.errors import InputError
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NeighbourChooser
from stitchopt.models.shipped import DEFAULT_MODEL_DIR

DATA = Path(__file__).parent.parent / "data"


def _edit(config: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    change(config)
    return config


CHANGES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("missing", lambda c: c.pop("lists"), "config.json: field lists is missing"),
    ("nested", lambda c: c["size_model"].pop("ridge"), "config.json: field size_model.ridge is missing"),
    ("type", lambda c: c["ranker"].update(neighbors="four"), "field ranker.neighbors must be int, not str"),
    ("item", lambda c: c["lists"][3].append(7), "field lists[3]["),
    ("count", lambda c: c["lists"].append(c["lists"][0]), "weights.npz: array ranker.train_targets is "),
    ("finish", lambda c: c.update(finish=["globaldce"]), "field finish is not the end of every list"),
    ("finish type", lambda c: c.update(finish="mergefunc"), "finish must be a list, not str"),
    ("chooser", lambda c: c.update(chooser={"kind": "neighbours", "neighbors": 3}), "field chooser.shrink is missing"),
    ("chooser k", lambda c: c.update(chooser=_neighbours(0)), "field chooser.neighbors must be 1 or more"),
    ("chooser shrink", lambda c: c.update(chooser={**_neighbours(3), "shrink": 2}), "chooser.shrink between 0 and 1"),
    ("chooser kind", lambda c: c.update(chooser={**_neighbours(3), "kind": "nearest"}), "chooser.kind is 'nearest'"),
    ("languages", lambda c: c.update(chooser={**_neighbours(3), "languages": "c"}), "languages must be a list"),
    ("language rows", lambda c: c["chooser"].update(languages=["c"]), "train_languages does not give each"),
]


def _neighbours(count: int) -> dict[str, Any]:
    return {"kind": "neighbours", "neighbors": count, "shrink": 0.5}


@pytest.mark.parametrize(("name", "change", "message"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_damaged_configuration_names_the_file_and_field(
    tmp_path: Path, name: str, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    directory = tmp_path / name
    shutil.copytree(DEFAULT_MODEL_DIR, directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps(_edit(config, change)))
    with pytest.raises(InputError) as raised:
        FlagModel.from_pretrained(directory)
    assert message in str(raised.value) and str(directory) in str(raised.value)


def test_truncated_weights_are_one_line_in_predict(tmp_path: Path) -> None:
    directory = tmp_path / "truncated"
    shutil.copytree(DEFAULT_MODEL_DIR, directory)
    weights = directory / "weights.npz"
    weights.write_bytes(weights.read_bytes()[:5000])
    done = subprocess.run(
        [sys.executable, "-m", "stitchopt", "predict", str(DATA / "loop_sum.c"), "--model", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "not a stitchopt model directory (BadZipFile" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_neighbours_chooser_without_its_training_rows_is_one_line(tmp_path: Path) -> None:
    directory = tmp_path / "empty"
    shutil.copytree(DEFAULT_MODEL_DIR, directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "chooser": _neighbours(3)}))
    with np.load(directory / "weights.npz") as stored:
        arrays = {name: array for name, array in stored.items() if not name.startswith("chooser.")}
    np.savez(directory / "weights.npz", **arrays)
    with pytest.raises(InputError, match="array chooser.train_features is missing") as missing:
        FlagModel.from_pretrained(directory)
    assert str(directory) in str(missing.value)
    features, lists = arrays["ranker.weights"].shape[0] - 1, len(config["lists"])
    empty = {"chooser.train_features": np.zeros((0, features)), "chooser.train_gains": np.zeros((0, lists))}
    np.savez(directory / "weights.npz", **arrays, **empty)
    with pytest.raises(InputError, match="array chooser.train_features has no rows"):
        FlagModel.from_pretrained(directory)


@pytest.mark.parametrize(
    ("languages", "code", "message"),
    [
        (["c", "c++"], 1, ""),
        (["c", "c++"], 2, "or names others"),  # a program of a third language
        (["c", "c++", "fortran"], 1, "does not give each"),  # a language without programs
        (["c", "c"], 0, "each language once"),
        (["c++", "c"], 1, "in order"),  # the codes would answer C++ units from the C units
    ],
)
def test_a_chooser_per_languages_programs_index_its_languages(
    tmp_path: Path, languages: list[str], code: int, message: str
) -> None:
    directory = tmp_path / "per-language"
    shutil.copytree(DEFAULT_MODEL_DIR, directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(
        json.dumps({**config, "chooser": {**config["chooser"], "languages": languages}})
    )
    with np.load(directory / "weights.npz") as stored:
        arrays = {name: array for name, array in stored.items() if name != "chooser.train_languages"}
    codes = np.zeros(len(arrays["chooser.train_features"]), dtype=np.int8)
    codes[::2], codes[1::3] = code, -1
    np.savez(directory / "weights.npz", **arrays, **{"chooser.train_languages": codes})
    if message:
        with pytest.raises(InputError, match=message):
            FlagModel.from_pretrained(directory)
    else:
        chooser = FlagModel.from_pretrained(directory).chooser
        assert isinstance(chooser, NeighbourChooser) and chooser.languages == tuple(languages)
        assert chooser.train_languages is not None and chooser.train_languages.tolist() == codes.tolist()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ([[5, 0.5], [20, 1]], ""),
        ([[5, 0.5]], "must give each of chooser.languages"),  # a language without its own
        ([[0, 0.5], [20, 1]], "must give each of chooser.languages"),
        ([[5, 1.5], [20, 1]], "must give each of chooser.languages"),
        ([[True, 0.5], [20, 1]], "must give each of chooser.languages"),
        ({"c": [5, 0.5]}, "must give each of chooser.languages"),
        (None, "must give each of chooser.languages"),
    ],
)
def test_a_chooser_tuned_per_language_gives_each_language_its_setting(
    tmp_path: Path, settings: Any, message: str
) -> None:
    directory = tmp_path / "tuned"
    shutil.copytree(DEFAULT_MODEL_DIR, directory)
    config = json.loads((directory / "config.json").read_text())
    assert config["chooser"]["languages"] == ["c", "c++"]
    tuned = {**config, "format": 2, "chooser": {**config["chooser"], "language_settings": settings}}
    (directory / "config.json").write_text(json.dumps(tuned))
    if message:
        with pytest.raises(InputError, match=message):
            FlagModel.from_pretrained(directory)
        return
    chooser = FlagModel.from_pretrained(directory).chooser
    assert isinstance(chooser, NeighbourChooser) and chooser.language_settings == ((5, 0.5), (20, 1.0))
    for_cxx = chooser.for_language(1)
    assert (for_cxx.neighbors, for_cxx.shrink) == (20, 1.0)
    languageless = {k: v for k, v in tuned["chooser"].items() if k != "languages"}
    (directory / "config.json").write_text(json.dumps({**tuned, "chooser": languageless}))
    with pytest.raises(InputError, match="chooser.languages is missing"):
        FlagModel.from_pretrained(directory)
    (directory / "config.json").write_text(json.dumps({**tuned, "format": 3}))
    with pytest.raises(InputError, match="model format 3, this stitchopt reads 1 and 2"):
        FlagModel.from_pretrained(directory)
