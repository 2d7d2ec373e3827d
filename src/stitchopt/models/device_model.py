"""The device model: which list of a pool (or clang's -O3) to build for a GPU kernel, read from the kernel's IR.

The decision is the one static mode makes on the host (`models/chooser.py`): a softmax over the pool's lists
and -O3, fitted to the cost of what it picks. On a GPU the chosen list is always built beside -O3 and kept only
when ptxas reports no kernel worse in SASS, registers, spilled bytes or stack (`apply/device.py`): -O3 is the
backup. So a list's cost on a kernel is what the build keeps: its log SASS ratio to -O3 where it is smaller and
no worse, 0 otherwise (-O3 is kept: a list that cannot build the kernel or is worse elsewhere costs a
compilation, not a slower kernel).

Features: the kernel's Autophase counts, or those beside its opcode/type histogram and LLVM's function
properties (family folds choose: `learning/device.py`), of the kernel alone with the code it calls,
log-scaled and standardized on the training kernels. Saved as a model directory (`config.json`, `weights.npz`;
no pickle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.core import IRModule
from stitchopt.errors import InputError
from stitchopt.features.base import Standardizer
from stitchopt.features.by_name import DEFAULT_NAMES, representation
from stitchopt.features.module import FeatureModule
from stitchopt.models.chooser import SoftmaxChooser, decision_costs
from stitchopt.models.directory import SavedModel, read_model_directory, save_model_directory, stamp
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.tune.device import MEASURES

KIND = "device-chooser"
FORMAT = 1
DEFAULT_DIRECTORY = Path(__file__).with_name("device_default")  # trained by benchmarks/gpu_model.py --save
Measured = dict[str, int]  # a `tune.device.Measure` as a label shard stores it: sass, registers, spilled, stack


FEATURE_SETS = (("autophase",), DEFAULT_NAMES)  # what family folds choose between


def representation_outputs(toolchain: Toolchain, module: IRModule, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Each representation `names` of a kernel (its unit: the kernel alone), from one disassembly."""
    view = FeatureModule.from_bytes(toolchain, module.bitcode, module.name)
    return {name: np.asarray(representation(name, 1).extract(view)) for name in names}


def kernel_features(toolchain: Toolchain, module: IRModule, names: Sequence[str]) -> np.ndarray:
    """What the model reads of a kernel: the representations `names`, concatenated."""
    return np.concatenate(list(representation_outputs(toolchain, module, names).values()))


def feature_count(names: Sequence[str]) -> int:
    return sum(len(representation(name, 1).feature_names()) for name in names)


def device_ratios(o3: Sequence[Measured], lists: Sequence[Sequence[Measured | None]]) -> np.ndarray:
    """kernels x lists: each list's SASS ratio to -O3, inf where it cannot build the kernel or is worse than
    -O3 in registers, spills or stack."""
    ratios = np.full((len(o3), len(lists[0]) if lists else 0), np.inf)
    for i, (reference, row) in enumerate(zip(o3, lists, strict=True)):
        for j, built in enumerate(row):
            if built is not None and all(built[k] <= reference[k] for k in MEASURES if k != "sass"):
                ratios[i, j] = built["sass"] / reference["sass"]
    return ratios


def device_costs(o3: Sequence[Measured], lists: Sequence[Sequence[Measured | None]]) -> np.ndarray:
    """kernels x (lists + 1): what each choice keeps with the -O3 backup, as a log SASS ratio to -O3 (0 where
    -O3 is kept), -O3 the last column."""
    return np.asarray(np.minimum(decision_costs(device_ratios(o3, lists)), 0.0))


@dataclass
class DeviceModel(SavedModel):
    lists: tuple[str, ...]  # pipelines, in the chooser's column order (-O3 is the last column)
    features: tuple[str, ...]  # representation names (`kernel_features`)
    chooser: SoftmaxChooser
    standardizer: Standardizer
    llvm_version: str
    catalogue: str
    trained_on: dict[str, Any]  # kernels, families, splits and the way chosen: what the model card shows

    def order(self, features: np.ndarray) -> list[str | None]:
        """Every choice for one kernel (its `kernel_features`), likeliest right first; None is -O3."""
        scores = self.chooser.order(self.standardizer.transform(features)[None, :])[0]
        return self._named(np.argsort(scores, kind="stable"))

    def order_module(self, kernels: Sequence[np.ndarray]) -> list[str | None]:
        """One order for a module of several kernels (one list builds them all): by the summed log-probability
        of each choice over its kernels."""
        rows = self.standardizer.transform(np.vstack(kernels))
        summed = np.log(np.maximum(self.chooser.probabilities(rows), 1e-12)).sum(axis=0)
        return self._named(np.argsort(-summed, kind="stable"))

    def _named(self, columns: np.ndarray) -> list[str | None]:
        """The chooser's columns as pipelines; its last column, -O3, as None."""
        return [None if j == len(self.lists) else self.lists[j] for j in columns]

    def _config(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            **stamp(FORMAT, self.llvm_version, self.catalogue),
            "features": list(self.features),
            "lists": list(self.lists),
            "penalty": self.chooser.penalty,
            "scale": self.chooser.scale,
            "standardizer": self.standardizer.to_dict(),
            "trained_on": self.trained_on,
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        assert self.chooser.weights is not None
        return {"weights": self.chooser.weights}

    def save(self, directory: Path) -> None:
        save_model_directory(directory, self._config(), self._arrays())

    @classmethod
    def load(cls, directory: Path) -> DeviceModel:
        config, arrays = read_model_directory(directory, "device model")
        if config.get("kind") != KIND or config.get("format") != FORMAT:
            raise InputError(
                f"{directory}: not a device model of format {FORMAT} (kind {config.get('kind')!r}); "
                "train one with `python benchmarks/gpu_model.py --save DIR`"
            )
        try:
            if not isinstance(config["features"], list):
                raise InputError(f"{directory}: a device model of an older stitchopt; train it again")
            lists = tuple(str(p) for p in config["lists"])
            names = tuple(str(n) for n in config["features"])
            weights = arrays["weights"]
            chooser = SoftmaxChooser(float(config["penalty"]), weights, float(config["scale"]))
            model = cls(
                lists,
                names,
                chooser,
                Standardizer.from_dict(config["standardizer"]),
                str(config["llvm"]),
                str(config["catalogue"]),
                dict(config.get("trained_on", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{directory}: malformed device model ({exc!r}); train it again") from exc
        features = feature_count(names)
        fits = weights.shape == (features + 1, len(lists) + 1) and model.standardizer.mean.shape == (features,)
        if not fits or not np.all(np.isfinite(weights)):
            raise InputError(
                f"{directory}: malformed device model (its arrays are not finite or do not fit {features} features "
                "and its lists); train it again"
            )
        return model


def load_device_model(directory: Path | None = None) -> DeviceModel:
    """A device model directory; None: the one stitchopt ships."""
    return DeviceModel.load(directory or DEFAULT_DIRECTORY)
