"""Representations by name, for model files that record which ones they were trained with."""

from __future__ import annotations

from stitchopt.errors import InputError
from stitchopt.features.autophase import Autophase
from stitchopt.features.base import Representation
from stitchopt.features.func_properties import FunctionProperties
from stitchopt.features.histogram import OpcodeTypeHistogram

DEFAULT_NAMES = ("autophase", "histogram", "func_properties")


def representation(name: str, version: int) -> Representation:
    """The representation `name` at exactly `version` (a model's features must be computed the same way)."""
    candidates: dict[str, Representation] = {
        "autophase": Autophase(),
        "histogram": OpcodeTypeHistogram(),
        "func_properties": FunctionProperties(),
    }
    found = candidates.get(name)
    if found is None:
        raise InputError(f"unknown representation {name!r}: this stitchopt has {', '.join(candidates)}")
    if found.version != version:
        raise InputError(f"representation {name} v{version} is needed, this stitchopt has v{found.version}")
    return found


def default_representations() -> list[Representation]:
    """What `stitchopt train` uses: Autophase counts, opcode/type histograms, LLVM's function properties."""
    return [representation(name, 1) for name in DEFAULT_NAMES]
