"""A trained vulnerability detector as a model directory (`config.json` + `weights.npz`, kind "detector"):
the receiving detector expert, any experts stitched into it (an optimization model's experts are copied in, so
the directory needs nothing else), the decision threshold (chosen on validation, or calibrated on benign code:
`security.calibration`, kept in config.json with how it was computed), the CWE names and every member's
standardizer. Needs PyTorch at inference (the `stitch` extra), like a stitched flag-tuning model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from stitchopt.errors import InputError
from stitchopt.features.base import FeatureCache, Standardizer
from stitchopt.models.directory import CONFIG_NAME, WEIGHTS_NAME, SavedModel, read_model_directory, stamp
from stitchopt.models.schema import check_config
from stitchopt.security.calibration import CALIBRATION_CONFIG, Calibration, uncalibrated_meaning
from stitchopt.security.detector import batch, function_outputs, scores
from stitchopt.stitching.data import expert_representations
from stitchopt.stitching.ensemble import StitchedEnsemble
from stitchopt.stitching.experts import count_expert, sequence_expert
from stitchopt.stitching.layers import StitchingLayer
from stitchopt.toolchain.discovery import Toolchain

KIND = "detector"
FORMAT = 1
DETECTOR_CONFIG: dict[str, Any] = {
    "kind": str,
    "format": int,
    "llvm": str,
    "members": [{"name": str, "representation": str, "version": int, "size": int, "outputs": int, "hidden": int}],
    "standardizers": dict,
    "cwes": [str],
    "threshold": (int, float),
}


@dataclass(frozen=True)
class Member:
    """One expert of a detector model: what it reads and the shape of its network."""

    name: str  # e.g. "detector:autophase", "optimization:histogram"
    representation: str
    version: int  # the representation's version: its outputs must be computed the same way
    size: int  # count features, or the token vocabulary
    outputs: int  # its head's outputs (a detector's: 1 + CWEs; an optimization expert's: its lists)
    hidden: int


class Finding(NamedTuple):
    risk: float  # probability that the function is bad; `DetectorModel.threshold` is where "bad" starts
    cwe: str  # the most likely CWE


@dataclass
class DetectorModel(SavedModel):
    ensemble: StitchedEnsemble  # members[0] is the detector; the others are stitched into its hidden space
    members: tuple[Member, ...]
    standardizers: dict[str, Standardizer]  # by member name, for the count members
    cwes: tuple[str, ...]
    threshold: float
    llvm_version: str
    calibration: Calibration | None = None  # where `threshold` comes from, when set on benign code

    def calibrated(self, calibration: Calibration) -> DetectorModel:
        """This detector with the calibration's threshold."""
        return replace(self, threshold=calibration.threshold, calibration=calibration)

    def meaning(self) -> str:
        """One line for users: what the risk is and what the threshold means."""
        return self.calibration.meaning() if self.calibration else uncalibrated_meaning(self.threshold)

    def predict(
        self, toolchain: Toolchain, function_bitcodes: Sequence[bytes], cache: FeatureCache | None = None
    ) -> list[Finding]:
        """Risk and CWE guess of each function (bitcode of the function alone, as `datasets.juliet` makes it)."""
        known = {r.name: r for r in expert_representations()}
        needed = {m.representation: known[m.representation] for m in self.members}
        outputs = function_outputs(toolchain, function_bitcodes, list(needed.values()), cache)
        inputs = tuple(batch(outputs[m.representation], self.standardizers.get(m.name)) for m in self.members)
        risk, cwe = scores(self.ensemble, inputs)
        return [Finding(float(r), self.cwes[int(c)]) for r, c in zip(risk, cwe, strict=True)]

    def _config(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            **stamp(FORMAT, self.llvm_version, ""),  # no pass list is involved: no catalogue
            "members": [asdict(m) for m in self.members],
            "standardizers": {n: s.to_dict() for n, s in self.standardizers.items()},
            "cwes": list(self.cwes),
            "threshold": self.threshold,
            **({"calibration": self.calibration.to_dict()} if self.calibration else {}),
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        return {k: v.detach().numpy() for k, v in self.ensemble.state_dict().items()}

    @classmethod
    def from_pretrained(cls, directory: Path) -> DetectorModel:
        config, arrays = read_model_directory(directory, "detector model")
        if not isinstance(config, dict) or config.get("kind") != KIND or config.get("format") != FORMAT:
            raise InputError(
                f"{directory}: not a detector model of format {FORMAT} (make one with the detection study)"
            )
        calibrated = "calibration" in config
        schema = {**DETECTOR_CONFIG, "calibration": CALIBRATION_CONFIG} if calibrated else DETECTOR_CONFIG
        check_config(config, schema, directory / CONFIG_NAME)
        calibration = Calibration.from_dict(config["calibration"]) if calibrated else None
        if calibration is not None and calibration.threshold != config["threshold"]:
            raise InputError(
                f"{directory / CONFIG_NAME}: threshold is not the calibration's: calibrate the detector again"
            )
        members = tuple(Member(**m) for m in config["members"])
        versions = {r.name: r.version for r in expert_representations()}
        for m in members:
            if versions.get(m.representation) != m.version:
                raise InputError(
                    f"{directory}: member {m.name} reads {m.representation} v{m.version}, which this stitchopt "
                    "does not compute; retrain the detector"
                )
        if not members or members[0].outputs != 1 + len(config["cwes"]):
            raise InputError(f"{directory / CONFIG_NAME}: the detector's outputs do not match its CWE list")
        ensemble = build_ensemble(members, set(config["standardizers"]))
        try:
            ensemble.load_state_dict({k: torch.as_tensor(v, dtype=torch.float32) for k, v in arrays.items()})
        except RuntimeError as exc:  # missing, unexpected or mis-shaped tensors
            why = str(exc).strip().splitlines()[-1].strip()
            raise InputError(f"{directory / WEIGHTS_NAME}: the weights do not fit config.json ({why})") from exc
        ensemble.eval()
        return cls(
            ensemble,
            members,
            {n: Standardizer.from_dict(d) for n, d in config["standardizers"].items()},
            tuple(config["cwes"]),
            float(config["threshold"]),
            config["llvm"],
            calibration,
        )


def build_ensemble(members: Sequence[Member], counts: set[str]) -> StitchedEnsemble:
    """The untrained network a configuration describes (weights are loaded into it)."""
    experts = [
        count_expert(m.name, m.size, m.outputs, m.hidden)
        if m.name in counts
        else sequence_expert(m.name, m.size, m.outputs, m.hidden)
        for m in members
    ]
    receiver = members[0].hidden
    return StitchedEnsemble(experts, [StitchingLayer(m.hidden, receiver) for m in members[1:]])
