"""Model configurations checked against a schema when a model directory is loaded: a missing or mistyped field, or
weights that do not fit the configuration, is one line naming the file and the field, not a traceback later in
prediction."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.errors import InputError

NUMBER = (int, float)

# A schema is a type (or tuple of types), a one-element list (every item), or a dict (these fields, at least).
FLAG_MODEL_CONFIG: dict[str, Any] = {
    "format": int,
    "llvm": str,
    "catalogue": str,
    "representations": [{"name": str, "version": int}],
    "standardizer": {"log": bool, "mean": [NUMBER], "std": [NUMBER]},
    "lists": [[str]],
    "ranker": {"neighbors": int, "ridge": NUMBER, "blend": NUMBER},
    "size_model": {"targets": [str], "ridge": NUMBER, "kinds": [str]},
}
FAST_POLICY_CONFIG: dict[str, Any] = {
    "margin": (*NUMBER, type(None)),  # null: always -Oz
    "change": NUMBER,
    "built": NUMBER,
    "grown": NUMBER,
}
STITCHED_MODEL_CONFIG: dict[str, Any] = {
    "kind": str,
    "format": int,
    "llvm": str,
    "catalogue": str,
    "lists": [[str]],
    "members": [str],
    "sizes": dict,
    "standardizers": dict,
    "hidden": int,
}


def check_config(config: Any, schema: dict[str, Any], path: Path) -> None:
    """Raise InputError naming `path` and the first field of `config` that `schema` does not allow."""
    _check(config, schema, path, "")


def _check(value: Any, schema: Any, path: Path, field: str) -> None:
    where = f"{path}: {field or 'the configuration'}"
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise InputError(f"{where} must be an object, not {_kind(value)}")
        for key, part in schema.items():
            inner = f"{field}.{key}" if field else key
            if key not in value:
                raise InputError(f"{path}: field {inner} is missing; save the model again")
            _check(value[key], part, path, inner)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            raise InputError(f"{where} must be a list, not {_kind(value)}")
        for index, item in enumerate(value):
            _check(item, schema[0], path, f"{field}[{index}]")
    elif isinstance(value, bool) and schema is not bool or not isinstance(value, schema):
        wanted = " or ".join(t.__name__ for t in (schema if isinstance(schema, tuple) else (schema,)))
        raise InputError(f"{path}: field {field} must be {wanted}, not {_kind(value)}")


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r:.40}"


def check_arrays(arrays: Mapping[str, np.ndarray], shapes: Mapping[str, tuple[int | None, ...]], path: Path) -> None:
    """Each named array present with these dimensions (None: any size): the weights fit the configuration."""
    for name, shape in shapes.items():
        if name not in arrays:
            raise InputError(f"{path}: array {name} is missing; save the model again")
        actual = arrays[name].shape
        fits = len(actual) == len(shape) and all(
            want is None or want == got for want, got in zip(shape, actual, strict=True)
        )
        if not fits:
            expected = "x".join("?" if want is None else str(want) for want in shape)
            raise InputError(
                f"{path}: array {name} is {'x'.join(map(str, actual))}, the configuration needs {expected}; "
                "save the model again"
            )
