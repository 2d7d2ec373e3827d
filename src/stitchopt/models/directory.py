"""Model directories: `config.json` plus `weights.npz` (plain arrays, never pickled), the layout every model
kind (closed-form, stitched, hot-path) is saved in, and the identity predictions are cached under."""

from __future__ import annotations

import functools
import hashlib
import json
import zipfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt import __version__
from stitchopt.errors import InputError

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "weights.npz"


def model_identity(config: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    """A hash of everything a model predicts from (configuration and weights), for caching predictions."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    for name, array in sorted(arrays.items()):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(array, dtype=np.float32).tobytes())
    return digest.hexdigest()[:16]


def save_model_directory(directory: Path, config: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """`config.json` and `weights.npz` (plain arrays, never pickled): the layout of every model directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CONFIG_NAME).write_text(json.dumps(config, indent=1) + "\n")
    save: Any = np.savez_compressed  # numpy's stubs read **arrays as its allow_pickle flag
    save(directory / WEIGHTS_NAME, **arrays)


def read_model_directory(
    directory: Path, what: str = "stitchopt model"
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """What `save_model_directory` wrote: the configuration and the arrays (as float64)."""
    _require_files(directory, what, (CONFIG_NAME, WEIGHTS_NAME))
    try:
        config = json.loads((directory / CONFIG_NAME).read_text())
        with np.load(directory / WEIGHTS_NAME, allow_pickle=False) as weights:
            arrays = {k: np.asarray(weights[k], dtype=np.float64) for k in weights.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # unreadable, not JSON, truncated weights
        raise InputError(f"{directory}: not a {what} directory ({type(exc).__name__}: {exc})") from exc
    return config, arrays


def _require_files(directory: Path, what: str, names: tuple[str, ...]) -> None:
    """A missing directory or file as one line that says which (the OS's error text would not)."""
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory: give a {what} directory (one with {CONFIG_NAME})")
    for name in names:
        if not (directory / name).is_file():
            raise InputError(f"{directory}: not a {what} directory (it has no {name}): give one a training wrote")


def model_kind(directory: Path) -> str | None:
    """The `kind` a directory's configuration names (None: the closed-form flag model)."""
    _require_files(directory, "stitchopt model", (CONFIG_NAME,))
    try:
        kind = json.loads((directory / CONFIG_NAME).read_text()).get("kind")
    except (OSError, ValueError, AttributeError) as exc:
        raise InputError(f"{directory}: not a stitchopt model directory ({exc})") from exc
    return None if kind is None else str(kind)


def stamp(format_version: int, llvm_version: str, catalogue: str) -> dict[str, Any]:
    """What every model configuration starts with: its format, who made it, and for which LLVM and catalogue."""
    return {"format": format_version, "stitchopt": __version__, "llvm": llvm_version, "catalogue": catalogue}


class SavedModel(ABC):
    """A model that lives in a model directory: its configuration and arrays are all it predicts from, so they
    are what it saves and what its identity (the key of cached predictions) hashes."""

    @abstractmethod
    def _config(self) -> dict[str, Any]: ...

    @abstractmethod
    def _arrays(self) -> dict[str, np.ndarray]: ...

    @functools.cached_property
    def identity(self) -> str:
        return model_identity(self._config(), self._arrays())

    def save_pretrained(self, directory: Path) -> None:
        save_model_directory(directory, self._config(), self._arrays())
