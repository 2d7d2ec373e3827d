"""The detection study: one detector per representation; the best of them (chosen on validation) with the
optimization experts stitched into its hidden space (experts frozen, only the layers trained on the detector's
loss); and, as a control, the best detector with as many other detector experts stitched in, so a gain can be
told apart from merely stitching more inputs.

Experts and layers are fitted on the train split and stopped on validation; every threshold, the best detector
and the winner are chosen on validation F1; rows are scored on the test split (held-out Juliet families).
Everything is seeded; with torch on one thread (`torch.set_num_threads(1)`, as the benchmark runs it) a rerun
gives the same report.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.juliet import (
    SPLITS,
    JulietFunction,
    extract_support,
    family_splits,
    juliet_functions,
    juliet_path,
    read_cases,
    select_cases,
)
from stitchopt.errors import InputError
from stitchopt.features.base import FeatureCache, Standardizer
from stitchopt.features.tokens import IRTokens
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.security.anchors import anchor_rows, operating_points
from stitchopt.security.detector import (
    DetectedFunction,
    DetectorData,
    Outputs,
    best_threshold,
    detector_data,
    detector_expert,
    detector_loss,
    fit_standardizers,
    function_outputs,
    scores,
)
from stitchopt.security.model import DetectorModel, Member
from stitchopt.security.results import DetectionReport, DetectionRow, HeldOutFunction, tally
from stitchopt.stitching.data import expert_representations
from stitchopt.stitching.ensemble import StitchedEnsemble, stitch_ensemble
from stitchopt.stitching.experts import DEFAULT_HIDDEN, Expert, TrainConfig, fit
from stitchopt.stitching.model import StitchedModel
from stitchopt.toolchain.discovery import Toolchain

DETECTOR, OPTIMIZATION = "detector:", "optimization:"  # member name prefixes


@dataclass(frozen=True)
class DetectionConfig:
    experts: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=60, patience=8))
    layers: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=30, patience=5))
    hidden: int = DEFAULT_HIDDEN
    inits: tuple[str, ...] = ("lstsq", "ot")  # stitching layers' starts: least squares onto the detector, OT map
    jobs: int = 2  # threads running the feature tools


@dataclass(frozen=True)
class DetectionOutcome:
    report: DetectionReport
    models: dict[str, DetectorModel]  # every trained row's network as a self-contained model, by row name

    @property
    def winner(self) -> DetectorModel:
        """The row with the best validation F1 (what a shipped detector should be)."""
        return self.models[self.report.winner]


@dataclass(frozen=True)
class _Trained:
    row: DetectionRow
    ensemble: StitchedEnsemble
    members: tuple[Member, ...]


class _Study:
    """The three splits as tensors for every member, and the members' experts and descriptions."""

    def __init__(
        self,
        functions: Sequence[DetectedFunction],
        outputs: Outputs,
        optimizer: StitchedModel | None,
        config: DetectionConfig,
    ) -> None:
        fit_rows = [i for i, f in enumerate(functions) if f.split == "train"]
        labels = {functions[i].label for i in fit_rows}
        if labels != {"bad", "good"} or not {"validation", "test"} <= {f.split for f in functions}:
            raise InputError(
                "the detection study needs bad and good functions in the train split and functions in the "
                "validation and test splits: select cases of more families"
            )
        self.config = config
        self.cwes = tuple(sorted({f.cwe for f in functions}))
        versions = {r.name: r.version for r in expert_representations()}
        member_outputs = {DETECTOR + n: rows for n, rows in outputs.items()}
        standardizers = {DETECTOR + n: s for n, s in fit_standardizers(outputs, fit_rows).items()}
        self.members: dict[str, Member] = {}
        self.experts: dict[str, Expert] = {}
        if optimizer is not None:
            for expert, name in zip(optimizer.ensemble.experts(), optimizer.members, strict=True):
                if name not in outputs:
                    raise InputError(f"the optimization model's member {name} reads no representation known here")
                member_outputs[OPTIMIZATION + name] = outputs[name]
                if name in optimizer.standardizers:
                    standardizers[OPTIMIZATION + name] = optimizer.standardizers[name]
                self.experts[OPTIMIZATION + name] = expert
                self.members[OPTIMIZATION + name] = Member(
                    OPTIMIZATION + name,
                    name,
                    versions[name],
                    optimizer.sizes[name],
                    len(optimizer.lists),
                    optimizer.hidden,
                )
        self.standardizers: dict[str, Standardizer] = standardizers
        data = detector_data(member_outputs, functions, self.cwes, standardizers)
        self.train, self.validation, self.test = (data.select(s) for s in ("train", "validation", "test"))
        for name in outputs:
            inputs = self.train.inputs[DETECTOR + name]
            expert = detector_expert(DETECTOR + name, inputs, len(self.cwes), config.hidden, config.experts.seed)
            size = IRTokens().vocabulary_size if inputs.dtype == torch.long else inputs.shape[1]
            self.members[DETECTOR + name] = Member(
                DETECTOR + name, name, versions[name], int(size), 1 + len(self.cwes), config.hidden
            )
            self.experts[DETECTOR + name] = expert

    def detector(self, name: str) -> _Trained:
        """Train one detector expert on its own representation."""
        start = time.monotonic()
        expert = self.experts[name]
        fit(
            expert,
            self.train.inputs[name],
            self.train.targets,
            self.config.experts,
            (self.validation.inputs[name], self.validation.targets),
            loss=detector_loss,
        )
        return self._scored(name, "detector", "", (name,), StitchedEnsemble([expert], []), start)

    def stitched(self, kind: str, init: str, members: tuple[str, ...]) -> _Trained:
        """`members[1:]` stitched into `members[0]`'s hidden space; only the layers train."""
        start = time.monotonic()
        ensemble, _ = stitch_ensemble(
            [self.experts[m] for m in members],
            list(self.train.batch(members)),
            self.train.targets,
            self.config.layers,
            (list(self.validation.batch(members)), self.validation.targets),
            init,
            detector_loss,
        )
        added = (
            "optimization experts"
            if kind == "stitched"
            else f"{len(members) - 1} other detector{'s' * (len(members) > 2)}"
        )
        return self._scored(f"{members[0]} + {added} ({init})", kind, init, members, ensemble, start)

    def _scored(
        self, name: str, kind: str, init: str, members: tuple[str, ...], ensemble: StitchedEnsemble, start: float
    ) -> _Trained:
        seconds = time.monotonic() - start
        risk, _ = scores(ensemble, self.validation.batch(members))
        threshold, validation_f1 = best_threshold(risk, self.validation.bad)
        risk, cwe = scores(ensemble, self.test.batch(members))
        counts = tally(self.test.functions, list(risk >= threshold), [self.cwes[int(c)] for c in cwe])
        row = DetectionRow(
            name, kind, counts, members, init, threshold, validation_f1, seconds, tuple(float(r) for r in risk)
        )
        return _Trained(row, ensemble, tuple(self.members[m] for m in members))

    def model(self, trained: _Trained, llvm_version: str) -> DetectorModel:
        names = {m.name for m in trained.members}
        return DetectorModel(
            trained.ensemble,
            trained.members,
            {n: s for n, s in self.standardizers.items() if n in names},
            self.cwes,
            trained.row.threshold if trained.row.threshold is not None else 0.5,
            llvm_version,
        )


def detection_study(
    toolchain: Toolchain,
    functions: Sequence[DetectedFunction],
    optimization: Path | StitchedModel | None,
    config: DetectionConfig,
    *,
    cache: FeatureCache | None = None,
) -> DetectionOutcome:
    """`functions` of the train, validation and test splits (`datasets.juliet.juliet_functions`);
    `optimization`: a stitched flag-tuning model (or its directory) whose experts are stitched in; None runs
    the detectors and the control only."""
    seconds: dict[str, float] = {}
    start = time.monotonic()
    optimizer = optimization_model(toolchain, optimization)
    bitcodes = [f.bitcode for f in functions]
    outputs = function_outputs(toolchain, bitcodes, expert_representations(), cache, config.jobs)
    study = _Study(functions, outputs, optimizer, config)
    seconds["features"] = time.monotonic() - start

    start = time.monotonic()
    detectors = [study.detector(DETECTOR + r.name) for r in expert_representations()]
    seconds["detectors"] = time.monotonic() - start
    ranked = sorted(detectors, key=lambda t: -(t.row.validation_f1 or 0.0))  # stable: ties keep the order
    best = ranked[0].row.members[0]

    start = time.monotonic()
    stitched: list[_Trained] = []
    optimization_members = tuple(OPTIMIZATION + n for n in optimizer.members) if optimizer is not None else ()
    if optimization_members:
        stitched += [study.stitched("stitched", init, (best, *optimization_members)) for init in config.inits]
    control = tuple(t.row.members[0] for t in ranked[1:])[: len(optimization_members) or None]
    if control:
        stitched += [study.stitched("control", init, (best, *control)) for init in config.inits]
    seconds["stitching"] = time.monotonic() - start

    trained = [*detectors, *stitched]
    winner = max(trained, key=lambda t: t.row.validation_f1 or 0.0)  # first of the best: alone wins ties
    report = DetectionReport(
        {
            name: _labels(split)
            for name, split in (("train", study.train), ("validation", study.validation), ("test", study.test))
        },
        study.cwes,
        best,
        optimizer.identity if optimizer is not None else "",
        [t.row for t in trained],
        winner.row.name,
        seconds,
        held_out_functions([f for f in functions if f.split == "test"], functions),
    )
    return DetectionOutcome(report, {t.row.name: study.model(t, toolchain.version_string) for t in trained})


def juliet_detection_study(
    toolchain: Toolchain,
    data_dir: Path | None,
    per_family: int | None,
    optimization: Path | StitchedModel | None,
    config: DetectionConfig,
    *,
    store: EvaluationStore | None = None,
    cwes: Collection[str] | None = None,
    anchors: Sequence[str] = (),
    scratch: Path,
) -> tuple[DetectionOutcome, list[JulietFunction]]:
    """The study end to end on Juliet (what `stitchopt security study` and the benchmark call): at most
    `per_family` cases of each family (of `cwes`; all when None), compiled and cached in `store`, support files
    unpacked under `scratch`; the `anchors` analyzers (`security.analyzers.ANALYZERS`) scored on the same test
    functions, and the best detector at each anchor's false-positive rate (`security.anchors.operating_points`).
    Also returns the functions: the rows' risks are of those with split "test", in this order."""
    optimizer = optimization_model(toolchain, optimization)  # a bad directory fails before any compilation
    path = juliet_path(data_dir)
    cases = read_cases(path)
    splits = family_splits(cases)
    chosen = select_cases(cases, SPLITS, per_family, cwes)
    support = extract_support(path.parent, scratch)
    functions = juliet_functions(toolchain, chosen, splits, support, store, config.jobs)
    cache = FeatureCache(store) if store is not None else None
    outcome = detection_study(toolchain, functions, optimizer, config, cache=cache)
    test = [f for f in functions if f.split == "test"]
    validation = [f for f in functions if f.split == "validation"]
    found = anchor_rows(toolchain, test, chosen, support, analyzers=anchors, store=store, jobs=config.jobs)
    best = outcome.report.best_detector
    outcome.report.rows.extend(found)
    outcome.report.rows.extend(
        operating_points(
            toolchain,
            outcome.report.row(best),
            outcome.models[best],
            found,
            validation,
            test,
            chosen,
            support,
            store=store,
            jobs=config.jobs,
        )
    )
    return outcome, functions


def optimization_model(toolchain: Toolchain, optimization: Path | StitchedModel | None) -> StitchedModel | None:
    if isinstance(optimization, Path):
        return StitchedModel.from_pretrained(optimization, load_catalogue(toolchain))
    return optimization


def _labels(data: DetectorData) -> dict[str, int]:
    bad = int(data.bad.sum())
    return {"bad": bad, "good": len(data.functions) - bad}


def held_out_functions(
    test: Sequence[DetectedFunction], functions: Sequence[DetectedFunction]
) -> list[HeldOutFunction]:
    """`test` as a report keeps them: CWE, label, and whether a function of the other label in the same case
    compiles to the same module (a twin)."""
    seen: dict[tuple[str, bytes], set[str]] = {}
    for function in functions:
        seen.setdefault((function.case, function.bitcode), set()).add(function.label)
    return [HeldOutFunction(f.cwe, f.label, len(seen[f.case, f.bitcode]) > 1) for f in test]
