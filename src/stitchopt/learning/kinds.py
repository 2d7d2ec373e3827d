"""The model kinds a model directory can hold, chosen from its `config.json`: the closed-form flag model or a
stitched model. Here, above both, so that neither package needs the other."""

from __future__ import annotations

from pathlib import Path

from stitchopt.errors import InputError
from stitchopt.models.directory import model_kind
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.list_model import ListModel
from stitchopt.passes.catalogue import Catalogue


def load_model(directory: Path, catalogue: Catalogue) -> ListModel:
    """A model directory of either kind; a stitched one needs the `stitch` extra (imported only then)."""
    if model_kind(directory) != "stitched":
        return FlagModel.from_pretrained(directory, catalogue)
    try:
        from stitchopt.stitching.model import StitchedModel
    except ImportError as exc:
        raise InputError(
            f"{directory} is a stitched model, which needs PyTorch ({exc}): pip install 'stitchopt[stitch]'"
        ) from exc
    return StitchedModel.from_pretrained(directory, catalogue)
