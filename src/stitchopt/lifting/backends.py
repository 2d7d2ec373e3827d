"""Lifters: assembly in, LLVM IR text out. `RetrievalLifter` is the honest non-neural baseline: the IR of the
reference pair whose assembly is most similar (TF-IDF over assembly tokens, cosine), its functions renamed to
the input's. `llm_compiler.LLMCompiler` is the neural one, when its weights are on disk."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from stitchopt.features.ir_blocks import parse_functions
from stitchopt.lifting.pairs import LiftPair
from stitchopt.lifting.roundtrip import asm_tokens

_FUNCTION_LABEL_RE = re.compile(r"^\s*\.type\s+([^,\s]+),\s*@function", re.M)
_NUMBER_RE = re.compile(r"-?\d+")


class Lifter(Protocol):
    name: str

    def fits(self, pair: LiftPair) -> bool:
        """Whether prompt and answer fit the backend's context (True for backends without one)."""
        ...

    def lift(self, asm: str) -> str: ...


def defined_functions(asm: str) -> list[str]:
    """Functions an assembly file defines, in order (`.type name,@function`)."""
    return _FUNCTION_LABEL_RE.findall(asm)


def rename_functions(ir: str, old: Sequence[str], new: Sequence[str]) -> str:
    """`@old[i]` -> `@new[i]` for the pairs both lists have (in one pass, so swaps are safe)."""
    mapping = {f"@{a}": f"@{b}" for a, b in zip(old, new, strict=False) if a != b}
    if not mapping:
        return ir
    pattern = re.compile("|".join(re.escape(k) + r"(?![-\w$.])" for k in sorted(mapping, key=len, reverse=True)))
    return pattern.sub(lambda m: mapping[m.group(0)], ir)


def _terms(asm: str) -> Counter[str]:
    """Assembly tokens with numbers folded, so offsets and constants do not split otherwise equal code."""
    return Counter(_NUMBER_RE.sub("0", token) for token in asm_tokens(asm))


class RetrievalLifter:
    name = "retrieval"

    def __init__(self, reference: Sequence[LiftPair]) -> None:
        self.reference = list(reference)
        counts = [_terms(pair.asm) for pair in self.reference]
        documents = Counter(term for count in counts for term in count)
        self.idf = {term: math.log((1 + len(counts)) / (1 + df)) + 1 for term, df in documents.items()}
        self.vectors = [self._vector(count) for count in counts]

    def _vector(self, count: Counter[str]) -> dict[str, float]:
        vector = {t: n * self.idf.get(t, 0.0) for t, n in count.items()}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return {t: v / norm for t, v in vector.items()}

    def fits(self, pair: LiftPair) -> bool:
        return True

    def nearest(self, asm: str) -> LiftPair:
        query = self._vector(_terms(asm))
        scores = [sum(query.get(t, 0.0) * v for t, v in vector.items()) for vector in self.vectors]
        return self.reference[max(range(len(scores)), key=lambda i: (scores[i], -i))]

    def lift(self, asm: str) -> str:
        if not self.reference:
            return ""
        neighbour = self.nearest(asm)
        theirs = [f.name for f in parse_functions(neighbour.ir)]
        return rename_functions(neighbour.ir, theirs, defined_functions(asm))
