"""Where the model shipped in the package lives (`optimize` and model builds work out of the box). Its own
module so that a compiler wrapper can name it without importing numpy and the model code."""

from __future__ import annotations

from pathlib import Path

DEFAULT_MODEL_DIR = Path(__file__).parent / "default"
