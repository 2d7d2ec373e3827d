"""`stitchopt lift-eval`: lift every pair's assembly with a backend and judge each answer by round trip, in a
table shaped like LLM Compiler's (round trips, BLEU, exact match) plus parse rate and edit distance."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from stitchopt.lifting.backends import Lifter
from stitchopt.lifting.pairs import PairSet
from stitchopt.lifting.roundtrip import bleu, round_trip
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain


@dataclass(frozen=True)
class LiftResult:
    name: str
    parses: bool
    round_trips: bool  # parses and compiles back to assembly
    exact: bool
    edit_distance: float
    error: str


@dataclass(frozen=True)
class LiftEvaluation:
    backend: str
    results: tuple[LiftResult, ...]
    bleu: float  # over the inputs that round-trip
    bleu_signature: str
    split_modules: int
    too_long: int
    seconds: float

    def share(self, attribute: str) -> float:
        return sum(getattr(r, attribute) for r in self.results) / len(self.results) if self.results else 0.0


def lift_eval(
    toolchain: Toolchain, pairs: PairSet, lifter: Lifter, on_pair: Callable[[int], None] | None = None
) -> LiftEvaluation:
    options = load_baselines(toolchain, ("Oz",))["Oz"].options
    start = time.perf_counter()
    results, hypotheses, references = [], [], []
    for index, pair in enumerate(pairs.pairs):
        outcome = round_trip(toolchain, lifter.lift(pair.asm), pair.asm, options)
        results.append(
            LiftResult(
                pair.name, outcome.parses, bool(outcome.asm), outcome.exact, outcome.edit_distance, outcome.error
            )
        )
        if outcome.asm:
            hypotheses.append(outcome.asm)
            references.append(pair.asm)
        if on_pair is not None:
            on_pair(index)
    score, signature = bleu(hypotheses, references) if hypotheses else (0.0, "")
    return LiftEvaluation(
        lifter.name,
        tuple(results),
        score,
        signature,
        pairs.split_modules,
        len(pairs.too_long),
        time.perf_counter() - start,
    )
