"""What every representation promises, how its vectors are scaled, and where they are cached.

A representation has a `name` and a `version`: the pair keys the cache, so bump `version` whenever the output
for the same module could change (a new feature, a fixed count), and old cache rows are simply never read again.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from stitchopt.cache.store import EvaluationStore
from stitchopt.errors import InputError
from stitchopt.features.module import FeatureModule

FloatVector = npt.NDArray[np.float64]
IntSequence = npt.NDArray[np.int32]


@runtime_checkable
class Representation(Protocol):
    """A fixed-length float64 vector per module, one entry per name in `feature_names()`."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...

    def feature_names(self) -> tuple[str, ...]: ...

    def extract(self, module: FeatureModule) -> FloatVector: ...


@runtime_checkable
class SequenceRepresentation(Protocol):
    """A variable-length int32 sequence per module, every id in `range(vocabulary_size)`."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...

    @property
    def vocabulary_size(self) -> int: ...

    def encode(self, module: FeatureModule) -> IntSequence: ...


AnyRepresentation = Representation | SequenceRepresentation


def compute(representation: AnyRepresentation, module: FeatureModule) -> npt.NDArray[Any]:
    """Run one representation, whichever protocol it follows."""
    if isinstance(representation, Representation):
        return representation.extract(module)
    return representation.encode(module)


def _signed_log1p(values: FloatVector) -> FloatVector:
    return np.sign(values) * np.log1p(np.abs(values))


@dataclass(frozen=True, eq=False)
class Standardizer:
    """Per-column z-scores fitted on a training matrix; constant columns keep std 1 so they map to 0.

    With `log=True` (the default) values pass through sign(x)*log1p(|x|) first: instruction and block counts
    span orders of magnitude, and without it one huge module sets the scale for all the others.
    """

    mean: FloatVector
    std: FloatVector
    log: bool = True

    @classmethod
    def fit(cls, matrix: npt.ArrayLike, *, log: bool = True) -> Standardizer:
        """Fit on rows = modules, columns = features; needs at least one row."""
        values = np.asarray(matrix, dtype=np.float64)
        if values.ndim != 2 or values.shape[0] == 0:
            raise ValueError(f"fit needs a non-empty 2-D matrix (modules x features), got shape {values.shape}")
        if log:
            values = _signed_log1p(values)
        std = values.std(axis=0)
        return cls(values.mean(axis=0), np.where(std > 0, std, 1.0), log)

    def transform(self, values: npt.ArrayLike) -> FloatVector:
        """Scale one vector or a matrix of row vectors."""
        array = np.asarray(values, dtype=np.float64)
        if array.shape[-1] != self.mean.shape[0]:
            raise ValueError(f"expected {self.mean.shape[0]} features per row, got {array.shape[-1]}")
        if self.log:
            array = _signed_log1p(array)
        result: FloatVector = (array - self.mean) / self.std
        return result

    def to_dict(self) -> dict[str, Any]:
        return {"log": self.log, "mean": self.mean.tolist(), "std": self.std.tolist()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Standardizer:
        try:
            mean = np.asarray(data["mean"], dtype=np.float64)
            std = np.asarray(data["std"], dtype=np.float64)
            log = bool(data["log"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"malformed standardizer ({exc!r}); refit it and save it again") from exc
        if mean.ndim != 1 or mean.shape != std.shape or np.any(std <= 0):
            raise InputError("malformed standardizer (mean/std shapes differ or std <= 0); refit it and save it again")
        return cls(mean, std, log)


def _to_bytes(array: npt.NDArray[Any]) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _from_bytes(data: bytes) -> npt.NDArray[Any] | None:
    """The stored array, or None when the row cannot be read back (it is then recomputed and overwritten)."""
    try:
        array: npt.NDArray[Any] = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError):
        return None
    return array


class FeatureCache:
    """Representation outputs in the evaluation store's artifact table, stored with `numpy.save` (no pickle).

    Key: representation name and version, the LLVM toolchain's identity (the text and `opt` analyses depend
    on it) and the module's sha256.
    """

    KIND = "features"

    def __init__(self, store: EvaluationStore) -> None:
        self.store = store

    @staticmethod
    def key(representation: AnyRepresentation, module: FeatureModule) -> tuple[str, str, str, str]:
        return (representation.name, str(representation.version), module.toolchain.identity, module.sha256)

    def get(self, representation: AnyRepresentation, module: FeatureModule) -> npt.NDArray[Any] | None:
        data = self.store.get_artifact(self.KIND, *self.key(representation, module))
        return None if data is None else _from_bytes(data)

    def put(self, representation: AnyRepresentation, module: FeatureModule, array: npt.NDArray[Any]) -> None:
        self.store.put_artifact(self.KIND, _to_bytes(array), *self.key(representation, module))

    def get_or_compute(self, representation: AnyRepresentation, module: FeatureModule) -> npt.NDArray[Any]:
        cached = self.get(representation, module)
        if cached is not None:
            return cached
        array = compute(representation, module)
        self.put(representation, module, array)
        return array


def extract_all(
    representations: Iterable[AnyRepresentation], module: FeatureModule, cache: FeatureCache | None = None
) -> dict[str, npt.NDArray[Any]]:
    """Every representation's output for one module, by representation name (names must be unique)."""
    results: dict[str, npt.NDArray[Any]] = {}
    for representation in representations:
        if representation.name in results:
            raise ValueError(f"two representations are named {representation.name!r}; give each a unique name")
        results[representation.name] = (
            compute(representation, module) if cache is None else cache.get_or_compute(representation, module)
        )
    return results
