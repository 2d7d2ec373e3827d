"""LLM Compiler as one more representation for the stitching study, when its weights are present: each module
read through the flag-tuning prompt, its last hidden layer averaged over the tokens. The study then trains an
expert on it and stitches it to the others like any count representation."""

from __future__ import annotations

import hashlib

import numpy as np

from stitchopt.features.base import FloatVector
from stitchopt.features.module import FeatureModule
from stitchopt.lifting.llm_compiler import FLAG_TUNING, LLMCompiler


class LLMCompilerRepresentation:
    version = 1

    def __init__(self, backend: LLMCompiler) -> None:
        self.backend = backend
        config = backend.model.config.to_json_string()
        self.name = f"llm-compiler-{hashlib.sha256(config.encode()).hexdigest()[:12]}"  # the cache key
        self.size = int(backend.model.config.hidden_size)

    def feature_names(self) -> tuple[str, ...]:
        return tuple(f"hidden_{i}" for i in range(self.size))

    def extract(self, module: FeatureModule) -> FloatVector:
        return np.array(self.backend.embed(FLAG_TUNING.format(ir=module.text)), dtype=np.float64)
