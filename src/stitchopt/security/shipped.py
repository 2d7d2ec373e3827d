"""Where the detector shipped in the package lives (`stitchopt security check` works out of the box); its own
module so that naming it imports no PyTorch."""

from __future__ import annotations

from pathlib import Path

DEFAULT_DETECTOR_DIR = Path(__file__).parent / "default"
