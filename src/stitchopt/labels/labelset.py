"""Labels: what a pool of pass lists did to each training program (object bytes, instructions, compile seconds),
stored as gzip'd JSON keyed by benchmark URI and IR hash, and the features of the labeled programs. What every
learner reads; the rest of `labels` is how they are made."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stitchopt.core import PROBED_TERMS, EvalResult, EvalStatus, Objective
from stitchopt.datasets.benchmarks import benchmark_module
from stitchopt.diagnostics import exception_line
from stitchopt.errors import InputError, StitchoptError
from stitchopt.features.base import AnyRepresentation, FeatureCache, extract_all
from stitchopt.features.module import FeatureModule
from stitchopt.passes.pipeline import PassNames
from stitchopt.toolchain.discovery import Toolchain

LABELS_FORMAT = 1
OZ = "default<Oz>"


@dataclass(frozen=True)
class LabeledProgram:
    """One program's measurements: object bytes, optimized IR instructions and compile seconds (opt + llc) per
    pool list (None: failed). Files written before compile seconds were recorded load with them empty."""

    uri: str
    ir_sha256: str
    package: str
    split: str
    baseline_sizes: dict[str, int]
    baseline_instructions: dict[str, int]
    sizes: tuple[int | None, ...]
    instructions: tuple[int | None, ...]
    baseline_seconds: dict[str, float] = field(default_factory=dict)
    seconds: tuple[float | None, ...] = ()

    def result(self, column: int | None) -> EvalResult:
        """A list's measurements (None: -Oz) as an `EvalResult`, for scoring with an `Objective`."""
        if column is None:
            return EvalResult(
                EvalStatus.OK,
                OZ,
                size_bytes=self.baseline_sizes["Oz"],
                ir_instruction_count=self.baseline_instructions["Oz"],
                opt_seconds=self.baseline_seconds.get("Oz", 0.0),
            )
        if self.sizes[column] is None:
            return EvalResult(EvalStatus.COMPILE_ERROR, "")
        spent = self.seconds[column] if column < len(self.seconds) else None
        return EvalResult(
            EvalStatus.OK,
            "",
            size_bytes=self.sizes[column],
            ir_instruction_count=self.instructions[column],
            opt_seconds=spent or 0.0,
        )


@dataclass(frozen=True)
class LabelSet:
    toolchain: str  # `Toolchain.identity` of the LLVM that measured
    catalogue: str  # `Catalogue.identity`: the lists use these spellings
    dataset: str
    lists: tuple[PassNames, ...]
    programs: tuple[LabeledProgram, ...]
    cpu_seconds: float  # opt + llc time of every evaluation behind these labels, search included

    def ratios(self) -> np.ndarray:
        """programs x lists: object size over the -Oz size; infinite where the list failed."""
        matrix = np.full((len(self.programs), len(self.lists)), np.inf)
        for row, program in enumerate(self.programs):
            oz = program.baseline_sizes["Oz"]
            for column, size in enumerate(program.sizes):
                if size is not None:
                    matrix[row, column] = size / oz
        return matrix

    def objective_values(self, objective: Objective, probed: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
        """programs x lists: `objective` of each list relative to -Oz (1.0 is -Oz; infinite where it failed).

        Labels hold sizes, instructions and times; a probed term (`security`) needs its values in `probed`:
        programs x (lists + 1) per term, -Oz's in the last column, NaN where it could not be measured."""
        missing = [term for term in objective.probed_terms if probed is None or term not in probed]
        if missing:
            raise InputError(
                f"labels hold no {', '.join(missing)} values: train for size, instructions, compile-time or security"
            )
        timed = any(name == "compile-time" and weight > 0 for name, weight in objective.weights)
        if timed and not all(p.seconds and p.baseline_seconds for p in self.programs):
            raise InputError(
                "these labels have no compile times: relabel with this stitchopt (`labels pool` or `labels broadcast`)"
            )
        extra = {term: values for term, values in (probed or {}).items() if term in objective.probed_terms}

        def result(row: int, column: int | None) -> EvalResult:
            found = self.programs[row].result(column)
            index = len(self.lists) if column is None else column
            fields: dict[str, Any] = {
                PROBED_TERMS[t]: float(v[row, index]) for t, v in extra.items() if not np.isnan(v[row, index])
            }
            return replace(found, **fields) if fields else found

        return np.array(
            [
                [objective.score(result(row, column), result(row, None)) for column in range(len(self.lists))]
                for row in range(len(self.programs))
            ]
        ).reshape(len(self.programs), len(self.lists))

    def subset(self, keep: Callable[[LabeledProgram], bool]) -> LabelSet:
        return LabelSet(
            self.toolchain,
            self.catalogue,
            self.dataset,
            self.lists,
            tuple(p for p in self.programs if keep(p)),
            self.cpu_seconds,
        )

    def save(self, path: Path) -> None:
        write_gzip_json(path, {"format": LABELS_FORMAT, **asdict(self), "lists": [list(p) for p in self.lists]})

    @classmethod
    def load(cls, path: Path) -> LabelSet:
        data = read_gzip_json(path, "not a stitchopt labels file")
        if data.get("format") != LABELS_FORMAT:
            raise InputError(f"{path}: labels format {data.get('format')}, this stitchopt reads {LABELS_FORMAT}")
        programs = tuple(
            LabeledProgram(
                **{
                    **p,
                    "sizes": tuple(p["sizes"]),
                    "instructions": tuple(p["instructions"]),
                    "seconds": tuple(p.get("seconds", ())),
                }
            )
            for p in data["programs"]
        )
        lists = tuple(tuple(passes) for passes in data["lists"])
        return cls(data["toolchain"], data["catalogue"], data["dataset"], lists, programs, data["cpu_seconds"])


def read_gzip_json(path: Path, what: str) -> dict[str, Any]:
    """A gzip'd JSON object; a file that is not one is an InputError: `{path}: {what} ({why})`."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data: dict[str, Any] = json.load(handle)
    except (OSError, ValueError, EOFError, zlib.error) as exc:  # EOFError: cut short; zlib.error: corrupt
        raise InputError(f"{path}: {what} ({exc or type(exc).__name__})") from exc
    return data


def write_gzip_json(path: Path, data: dict[str, Any]) -> None:
    """Compact JSON, gzip'd without a timestamp (the same data gives the same bytes), written to a temporary
    name and renamed: a labels file is whole or absent, whenever the writer is killed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    with gzip.GzipFile(partial, "wb", mtime=0) as packed, io.TextIOWrapper(packed, encoding="utf-8") as handle:
        json.dump(data, handle, separators=(",", ":"))
    partial.replace(path)


@dataclass(frozen=True)
class LabeledFeatures:
    labels: LabelSet  # only the programs whose IR was found with the labeled hash
    outputs: dict[str, list[npt.NDArray[Any]]]  # representation name -> one output per kept program
    skipped: dict[str, str]  # uri -> why

    @property
    def features(self) -> np.ndarray:
        """programs x features: the outputs of every (fixed-length) representation, concatenated per program."""
        return np.array([np.concatenate(row) for row in zip(*self.outputs.values(), strict=True)])


def labeled_features(
    toolchain: Toolchain,
    labels: LabelSet,
    representations: Sequence[AnyRepresentation],
    cache: FeatureCache | None = None,
) -> LabeledFeatures:
    """Each representation's output for the labeled programs. IR comes from the dataset (built if missing); a
    program whose IR hash differs from the labeled one (another dataset build or LLVM) is skipped, never
    silently mislabeled."""
    outputs: dict[str, list[npt.NDArray[Any]]] = {r.name: [] for r in representations}
    kept: list[LabeledProgram] = []
    skipped: dict[str, str] = {}
    for program in labels.programs:
        try:
            loaded = benchmark_module(toolchain, program.uri)
        except StitchoptError as exc:
            skipped[program.uri] = exception_line(exc)
            continue
        if loaded.sha256 != program.ir_sha256:
            skipped[program.uri] = "IR differs from the labeled IR"
            continue
        module = FeatureModule.from_bytes(toolchain, loaded.bitcode, program.uri)
        for name, output in extract_all(representations, module, cache).items():
            outputs[name].append(output)
        kept.append(program)
    keep = {id(p) for p in kept}
    return LabeledFeatures(labels.subset(lambda p: id(p) in keep), outputs, skipped)
