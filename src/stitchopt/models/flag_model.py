"""The learned flag-tuning model: features -> predicted size of each coreset list -> ranked `-passes=` strings.

A model is a directory: `config.json` (what it was made with and for: package, LLVM and pass-catalogue
versions, representations, coreset lists, hyper-parameters, standardization statistics) and `weights.npz`
(plain arrays, loaded with `allow_pickle=False`). A model made with another LLVM loads with a warning and
keeps only the lists whose passes this LLVM's catalogue has.

A model's lists are what it builds: with `finish` passes (e.g. `mergefunc`), each coreset list as labelled
and cross-validated, then those passes, which shrink some objects after any list and rarely grow one
(docs/flag-tuning.md#finishing-passes); the labels' own columns are the lists without them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from stitchopt.core import IRModule
from stitchopt.errors import InputError
from stitchopt.features.base import Representation, Standardizer
from stitchopt.features.by_name import representation
from stitchopt.features.module import FeatureModule
from stitchopt.features.native import plugin_features, report_plugin_failure
from stitchopt.models.chooser import SoftmaxChooser
from stitchopt.models.directory import CONFIG_NAME, WEIGHTS_NAME, SavedModel, read_model_directory, stamp
from stitchopt.models.fast_policy import FastPolicy
from stitchopt.models.list_model import RankedList
from stitchopt.models.neighbour_chooser import NeighbourChooser
from stitchopt.models.ranker import ListRanker
from stitchopt.models.schema import FAST_POLICY_CONFIG, FLAG_MODEL_CONFIG, check_arrays, check_config
from stitchopt.models.size_model import SizeModel
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import module_language

MODEL_FORMAT = 1
# A chooser per language with each language's own settings, which a reader of format 1 would answer with the
# chooser's: written only then.
TUNED_MODEL_FORMAT = 2
MODEL_FORMATS = (MODEL_FORMAT, TUNED_MODEL_FORMAT)


@dataclass
class FlagModel(SavedModel):
    representations: tuple[Representation, ...]
    standardizer: Standardizer
    lists: tuple[PassNames, ...]  # the coreset, in selection order
    ranker: ListRanker
    size_model: SizeModel
    llvm_version: str
    catalogue: str  # `Catalogue.identity` the lists were made with
    trained_on: dict[str, Any]
    chooser: SoftmaxChooser | NeighbourChooser | None = None  # when cross-validation chose one: decides static's
    # list and jit's order
    fast: FastPolicy | None = None  # the plugin's one-pipeline policy, set on held-out folds (older models: None)
    finish: PassNames = ()  # the passes every list ends with that its labels' column lacks (older models: none)

    def labelled_lists(self) -> tuple[PassNames, ...]:
        """The lists as the labels measured them: without the finishing passes."""
        return tuple(passes[: len(passes) - len(self.finish)] for passes in self.lists)

    def with_finish(self, finish: PassNames) -> FlagModel:
        """The same model with `finish` appended to every list (after any finishing passes it has). Nothing is
        refitted or validated: the choosers, the size model and the fast margin stay as trained without it."""
        if not finish:
            return self
        return replace(self, lists=tuple((*passes, *finish) for passes in self.lists), finish=(*self.finish, *finish))

    def features(self, toolchain: Toolchain, module: IRModule) -> np.ndarray:
        """The raw feature row (1 x d) of one module: every representation, concatenated; computed by the pass
        plugin where it can (the same values in half the time or less), else in Python."""
        native = plugin_features(toolchain, module.bitcode, self.representations, module.name)
        if native.values is not None:
            return native.values[None, :]
        values = self.python_features(toolchain, module)  # a bad module is reported here
        if native.failure:
            report_plugin_failure(native.failure)
        return values[None, :]

    def python_features(self, toolchain: Toolchain, module: IRModule) -> np.ndarray:
        """The feature vector as the Python representations compute it (what training reads)."""
        view = FeatureModule.from_bytes(toolchain, module.bitcode, module.name)
        return np.concatenate([r.extract(view) for r in self.representations])

    def rank(self, toolchain: Toolchain, module: IRModule) -> list[RankedList]:
        """Every coreset list and -Oz, in the order the modes try them (static builds the first)."""
        return self.rank_features(self.features(toolchain, module), [module_language(module)])[0]

    def predict_sizes(self, raw: np.ndarray) -> np.ndarray:
        """programs x size-model targets (`size_model.size_targets`) from raw feature rows."""
        return self.size_model.predict(self.standardizer.transform(raw), raw)

    def rank_features(self, raw: np.ndarray, languages: Sequence[str | None] | None = None) -> list[list[RankedList]]:
        """For raw feature rows (of programs in `languages`, `source_language`'s names; None: unknown): every
        coreset list and -Oz per program, in the order the modes try them.

        With a chooser, it orders them (the first is static's choice, -Oz included; a chooser per language
        answers a program of a language it knows from that language's programs). Without
        one, the first is the shrunk prediction's best (or -Oz when no list is predicted to beat it), then the
        rest in order of the program's own (unshrunk) predictions. Predicted ratios and sizes come from the
        regression either way."""
        standardized = self.standardizer.transform(raw)
        ratios = np.exp(self.ranker.predict(standardized, shrink=1.0))
        sizes = self.size_model.predict(standardized, raw)
        oz_size = sizes[:, self.size_model.targets.index("size:Oz")]
        if isinstance(self.chooser, NeighbourChooser):
            order = self.chooser.order(standardized, languages)  # lists, then -Oz
        else:
            order = (self.chooser or self.ranker).order(standardized)
        ranked = []
        for row, positions, oz in zip(ratios, order, oz_size, strict=True):
            entries = [RankedList(passes, float(r), float(r * oz)) for passes, r in zip(self.lists, row, strict=True)]
            entries.append(RankedList(None, 1.0, float(oz)))
            ranked.append([entries[i] for i in np.argsort(positions, kind="stable")])
        return ranked

    def fast_choices(self, raw: np.ndarray, ranked: list[list[RankedList]]) -> list[PassNames | None]:
        """The clang plugin's `fast` answer per row of `raw` (ranked by `rank_features`): static's list where its
        shrunk predicted log ratio is below minus the learned margin, else -Oz (None). A model without a margin
        has no such answer (the plugin builds static + backup for it), so asking is an error."""
        if self.fast is None:
            raise ValueError("the model has no fast margin (trained before margins were learned)")
        margin = self.fast.margin
        predicted = self.ranker.predict(self.standardizer.transform(raw))
        column = {passes: j for j, passes in enumerate(self.lists)}
        answers: list[PassNames | None] = []
        for row, order in zip(predicted, ranked, strict=True):
            first = order[0].passes
            answers.append(first if first is not None and row[column[first]] < -margin else None)
        return answers

    def _config(self) -> dict[str, Any]:
        return {
            **stamp(self._format(), self.llvm_version, self.catalogue),
            "representations": [{"name": r.name, "version": r.version} for r in self.representations],
            "standardizer": self.standardizer.to_dict(),
            "lists": [list(passes) for passes in self.lists],
            "ranker": {
                "neighbors": self.ranker.neighbors,
                "ridge": self.ranker.ridge,
                "blend": self.ranker.blend,
                "shrink": self.ranker.shrink,
            },
            "size_model": {
                "targets": list(self.size_model.targets),
                "ridge": self.size_model.ridge,
                "kinds": list(self.size_model.kinds),
            },
            "trained_on": self.trained_on,
            "chooser": _chooser_config(self.chooser),
            **({} if self.fast is None else {"fast": self.fast.to_dict()}),
            **({"finish": list(self.finish)} if self.finish else {}),
        }

    def _format(self) -> int:
        tuned = isinstance(self.chooser, NeighbourChooser) and self.chooser.language_settings
        return TUNED_MODEL_FORMAT if tuned else MODEL_FORMAT

    def _arrays(self) -> dict[str, np.ndarray]:
        assert self.size_model.linear_weights is not None and self.size_model.log_weights is not None
        arrays = {f"ranker.{k}": v.astype(np.float32) for k, v in self.ranker.arrays().items()}
        arrays["size.linear"] = self.size_model.linear_weights
        arrays["size.log"] = self.size_model.log_weights
        if isinstance(self.chooser, SoftmaxChooser):
            assert self.chooser.weights is not None
            arrays["chooser.weights"] = self.chooser.weights.astype(np.float32)
        elif isinstance(self.chooser, NeighbourChooser):
            assert self.chooser.train_features is not None and self.chooser.train_gains is not None
            arrays["chooser.train_features"] = self.chooser.train_features.astype(np.float32)
            arrays["chooser.train_gains"] = self.chooser.train_gains.astype(np.float32)
            if self.chooser.train_languages is not None:
                arrays["chooser.train_languages"] = self.chooser.train_languages.astype(np.int8)
        return arrays

    @classmethod
    def from_pretrained(cls, directory: Path, catalogue: Catalogue | None = None) -> FlagModel:
        """Load a model directory; with `catalogue`, drop (with a warning) lists that catalogue cannot run."""
        config, arrays = read_model_directory(directory)
        if config.get("format") not in MODEL_FORMATS:
            raise InputError(
                f"{directory}: model format {config.get('format')}, this stitchopt reads "
                f"{' and '.join(map(str, MODEL_FORMATS))}"
            )
        check_config(config, FLAG_MODEL_CONFIG, directory / CONFIG_NAME)
        lists, targets = len(config["lists"]), len(config["size_model"]["targets"])
        weights = directory / WEIGHTS_NAME
        check_arrays(arrays, {"ranker.train_features": (None, None)}, weights)
        rows, features = arrays["ranker.train_features"].shape
        shapes = {
            "ranker.train_targets": (rows, lists),
            "ranker.weights": (features + 1, lists),
            "size.linear": (features + 1, targets),
            "size.log": (features + 1, targets),
        }
        chooser = config.get("chooser")
        fast = config.get("fast")
        finish_config = config.get("finish", [])
        check_config({"finish": finish_config}, {"finish": [str]}, directory / CONFIG_NAME)
        finish = tuple(finish_config)
        if finish and any(tuple(passes[len(passes) - len(finish) :]) != finish for passes in config["lists"]):
            raise InputError(
                f"{directory / CONFIG_NAME}: field finish is not the end of every list; save the model again"
            )
        if fast is not None:
            check_config({"fast": fast}, {"fast": FAST_POLICY_CONFIG}, directory / CONFIG_NAME)
        if chooser is not None:
            kind = _chooser_kind(chooser, directory / CONFIG_NAME)
            check_config({"chooser": chooser}, {"chooser": _chooser_schema(kind)}, directory / CONFIG_NAME)
            if kind == "neighbours":
                if chooser["neighbors"] < 1 or not 0 <= chooser["shrink"] <= 1:
                    raise InputError(
                        f"{directory / CONFIG_NAME}: field chooser.neighbors must be 1 or more and chooser.shrink "
                        "between 0 and 1; save the model again"
                    )
                check_arrays(arrays, {"chooser.train_features": (None, features)}, weights)
                if not len(arrays["chooser.train_features"]):
                    raise InputError(f"{weights}: array chooser.train_features has no rows; save the model again")
                shapes["chooser.train_gains"] = (len(arrays["chooser.train_features"]), lists)
                if "languages" in chooser or "language_settings" in chooser:  # a chooser per language
                    _check_languages(chooser, arrays, directory)
            else:
                shapes["chooser.weights"] = (features + 1, lists + 1)
        check_arrays(arrays, shapes, weights)
        if len(config["standardizer"]["mean"]) != features:
            raise InputError(
                f"{directory / CONFIG_NAME}: field standardizer.mean has {len(config['standardizer']['mean'])} "
                f"values for {features} features; save the model again"
            )
        ranker_arrays = {k.removeprefix("ranker."): v for k, v in arrays.items() if k.startswith("ranker.")}
        model = cls(
            representations=tuple(representation(r["name"], r["version"]) for r in config["representations"]),
            standardizer=Standardizer.from_dict(config["standardizer"]),
            lists=tuple(tuple(passes) for passes in config["lists"]),
            ranker=ListRanker.from_arrays(ranker_arrays, **config["ranker"]),
            size_model=SizeModel(
                tuple(config["size_model"]["targets"]),
                config["size_model"]["ridge"],
                tuple(config["size_model"]["kinds"]),
                arrays["size.linear"],
                arrays["size.log"],
            ),
            llvm_version=config["llvm"],
            catalogue=config["catalogue"],
            trained_on=config.get("trained_on", {}),
            chooser=None if chooser is None else _read_chooser(chooser, arrays),
            fast=None if fast is None else FastPolicy.from_dict(fast),
            finish=finish,
        )
        if catalogue is not None and catalogue.identity != model.catalogue:
            if missing := [name for name in finish if catalogue.get(name) is None]:
                raise InputError(
                    f"{directory}: every list ends with {missing[0]}, which LLVM {catalogue.llvm_version} lacks; "
                    "retrain the model with `stitchopt train` for this LLVM"
                )
            model = model.restricted_to(catalogue)
        return model

    def restricted_to(self, catalogue: Catalogue) -> FlagModel:
        """The model without the lists that use a pass `catalogue` lacks (a model made for another LLVM)."""
        keep = [i for i, passes in enumerate(self.lists) if all(catalogue.get(p) is not None for p in passes)]
        warnings.warn(
            f"model made for LLVM {self.llvm_version} (catalogue {self.catalogue}), running with LLVM "
            f"{catalogue.llvm_version} (catalogue {catalogue.identity}): {len(keep)} of {len(self.lists)} lists "
            "are usable; retrain with `stitchopt train` for this LLVM",
            stacklevel=2,
        )
        return replace(self.keeping(keep), llvm_version=catalogue.llvm_version, catalogue=catalogue.identity)

    def keeping(self, keep: Sequence[int]) -> FlagModel:
        """The model with lists `keep` only, in that order (e.g. without lists a wider validation turned away):
        every part restricted to them, nothing refitted."""
        keep = list(keep)
        return replace(
            self,
            lists=tuple(self.lists[i] for i in keep),
            ranker=self.ranker.restricted_to(keep),
            size_model=self.size_model.restricted_to(keep),
            chooser=None if self.chooser is None else self.chooser.restricted_to(keep),
        )


def _chooser_config(chooser: SoftmaxChooser | NeighbourChooser | None) -> dict[str, Any] | None:
    if isinstance(chooser, NeighbourChooser):
        languages: dict[str, Any] = {}
        if chooser.train_languages is not None:
            languages["languages"] = list(chooser.languages)
        if chooser.language_settings:
            languages["language_settings"] = [[count, shrink] for count, shrink in chooser.language_settings]
        return {"kind": "neighbours", "neighbors": chooser.neighbors, "shrink": chooser.shrink, **languages}
    return None if chooser is None else {"kind": "softmax", "penalty": chooser.penalty, "scale": chooser.scale}


CHOOSER_KINDS = ("softmax", "neighbours")


def _chooser_kind(config: Any, path: Path) -> str:
    """Which chooser a saved config holds; models saved before the neighbours' chooser have no `kind` (softmax)."""
    check_config({"chooser": config}, {"chooser": {}}, path)
    kind = config.get("kind", "softmax")
    if kind not in CHOOSER_KINDS:
        raise InputError(f"{path}: field chooser.kind is {kind!r}, this stitchopt knows {', '.join(CHOOSER_KINDS)}")
    return str(kind)


def _chooser_schema(kind: str) -> dict[str, Any]:
    """The fields a saved chooser of `kind` needs."""
    if kind == "neighbours":
        return {"neighbors": int, "shrink": (int, float)}
    return {"penalty": (int, float), "scale": (int, float)}


def _read_chooser(config: dict[str, Any], arrays: dict[str, np.ndarray]) -> SoftmaxChooser | NeighbourChooser:
    if config.get("kind") == "neighbours":
        per_language = "languages" in config
        return NeighbourChooser(
            config["neighbors"],
            float(config["shrink"]),
            arrays["chooser.train_features"].astype(np.float64),
            arrays["chooser.train_gains"].astype(np.float64),
            tuple(config["languages"]) if per_language else (),
            arrays["chooser.train_languages"].astype(np.int8) if per_language else None,
            tuple((count, float(shrink)) for count, shrink in config.get("language_settings", ())),
        )
    return SoftmaxChooser(config["penalty"], arrays["chooser.weights"].astype(np.float64), config["scale"])


def _check_languages(chooser: dict[str, Any], arrays: dict[str, np.ndarray], directory: Path) -> None:
    """A chooser per language's saved languages: distinct names in order (as training saves them), and each
    training program's index into them, every language with programs of its own."""
    config, weights = directory / CONFIG_NAME, directory / WEIGHTS_NAME
    check_config({"chooser": chooser}, {"chooser": {"languages": [str]}}, config)
    languages = chooser["languages"]
    if languages != sorted(set(languages)):
        raise InputError(
            f"{config}: field chooser.languages must name each language once, in order, as training saves them; "
            "restore the file or train the model again (`stitchopt train`)"
        )
    settings = chooser.get("language_settings", [])
    if "language_settings" in chooser and (
        not isinstance(settings, list)
        or len(settings) != len(languages)
        or not all(_is_setting(setting) for setting in settings)
    ):
        raise InputError(
            f"{config}: field chooser.language_settings must give each of chooser.languages [neighbours (1 or more), "
            "shrink (0 to 1)]; restore the file or train the model again (`stitchopt train`)"
        )
    check_arrays(arrays, {"chooser.train_languages": (len(arrays["chooser.train_features"]),)}, weights)
    codes = arrays["chooser.train_languages"]
    if not np.isin(codes, np.arange(-1, len(languages))).all() or not np.isin(np.arange(len(languages)), codes).all():
        raise InputError(
            f"{weights}: array chooser.train_languages does not give each of {config}'s chooser.languages "
            "training programs, or names others; restore the file or train the model again (`stitchopt train`)"
        )


def _is_setting(setting: Any) -> bool:
    """[neighbours, shrink] as training saves a language's."""
    if not isinstance(setting, list) or len(setting) != 2:
        return False
    count, shrink = setting
    is_number = isinstance(shrink, (int, float)) and not isinstance(shrink, bool)
    return isinstance(count, int) and not isinstance(count, bool) and count >= 1 and is_number and 0 <= shrink <= 1
