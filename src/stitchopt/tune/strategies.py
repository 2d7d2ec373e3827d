"""Search strategies: they only propose pass lists (`ask`) and learn from scores (`tell`).

The driver owns evaluation, caching and budgets. Every strategy takes an explicit `random.Random`, so a run
is reproducible from its seed, and replaying it against a warm cache re-proposes exactly the same lists.
Scores are objective values: 1.0 is -Oz, lower is better.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from typing import Protocol

from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames


class Strategy(Protocol):
    name: str

    def ask(self, count: int) -> list[PassNames]:
        """Up to `count` lists to evaluate next; an empty list means the strategy is done."""
        ...

    def tell(self, scored: Sequence[tuple[PassNames, float]]) -> None: ...

    def base(self) -> PassNames | None:
        """The list that the last `ask()`'s proposals were derived from, if any: a hint that lets the evaluator
        resume them from that list's module states (the same objects as whole runs; see EvalRequest)."""
        ...


class RandomSearch:
    """Lists of `min_length`..`max_length` passes drawn uniformly from the catalogue (LLM Compiler's autotuner)."""

    name = "random"

    def __init__(self, passes: Sequence[str], rng: random.Random, min_length: int = 1, max_length: int = 50):
        self.passes = list(passes)
        self.rng = rng
        self.min_length, self.max_length = min_length, max_length

    def ask(self, count: int) -> list[PassNames]:
        return [
            tuple(self.rng.choices(self.passes, k=self.rng.randint(self.min_length, self.max_length)))
            for _ in range(count)
        ]

    def tell(self, scored: Sequence[tuple[PassNames, float]]) -> None:
        """Random search learns nothing."""

    def base(self) -> PassNames | None:
        return None


class GreedySearch:
    """Append the pass that improves most, one position at a time (CompilerGym's greedy search).

    Each step proposes the current list plus every catalogue pass; it stops when no pass improves or the
    list reaches `max_length`.
    """

    name = "greedy"

    def __init__(self, passes: Sequence[str], max_length: int = 50):
        self.passes = list(passes)
        self.max_length = max_length
        self.current: PassNames = ()
        self.current_score = float("inf")
        self._pending: list[PassNames] = []
        self._step_results: list[tuple[PassNames, float]] = []
        self.done = False

    def ask(self, count: int) -> list[PassNames]:
        if self.done:
            return []
        if not self._pending and not self._step_results:
            self._pending = [(*self.current, name) for name in self.passes]
        batch, self._pending = self._pending[:count], self._pending[count:]
        return batch

    def tell(self, scored: Sequence[tuple[PassNames, float]]) -> None:
        self._step_results.extend(scored)
        if self._pending:
            return
        best, score = min(self._step_results, key=lambda item: item[1])
        self._step_results = []
        if score < self.current_score:
            self.current, self.current_score = best, score
            self.done = len(self.current) >= self.max_length
        else:
            self.done = True

    def base(self) -> PassNames | None:
        """Every proposal of a step extends the current list by one pass."""
        return self.current or None


class LocalSearch:
    """A (1+lambda) evolutionary search: mutate the best list (insert, delete, replace, swap, or splice a
    random run of passes) and move to any mutant that is at least as good, so it can drift across plateaus.
    A share `explore` of proposals are fresh random lists, so it can jump to another basin.

    It starts from `seeds` (by default the flattened expansion of clang's -Oz pipeline), scoring them first.
    """

    name = "local"

    def __init__(
        self,
        passes: Sequence[str],
        rng: random.Random,
        seeds: Sequence[PassNames],
        max_length: int = 120,
        explore: float = 0.25,
    ):
        self.passes = list(passes)
        self.rng = rng
        self.max_length = max_length
        self.explore = explore
        self._seeds = [tuple(seed) for seed in seeds if seed]
        self._fresh = RandomSearch(passes, rng)
        self.best: PassNames = self._seeds[0] if self._seeds else (self.rng.choice(self.passes),)
        self.best_score = float("inf")

    def ask(self, count: int) -> list[PassNames]:
        if self._seeds:
            batch, self._seeds = self._seeds[:count], self._seeds[count:]
            return batch
        return [
            self._fresh.ask(1)[0] if self.rng.random() < self.explore else self._mutate(self.best) for _ in range(count)
        ]

    def tell(self, scored: Sequence[tuple[PassNames, float]]) -> None:
        for candidate, score in scored:
            if score < self.best_score or (score == self.best_score and len(candidate) <= len(self.best)):
                self.best, self.best_score = candidate, score

    def base(self) -> PassNames | None:
        """Mutants (most proposals) are edits of the best list, once it has a score: a list that failed (or has
        not run yet) is never recorded, so its failure cannot be taken for its neighbours'."""
        return self.best if math.isfinite(self.best_score) else None

    def _mutate(self, parent: PassNames) -> PassNames:
        child = list(parent)
        for _ in range(1 + int(self.rng.expovariate(1.0))):  # mostly one edit, sometimes several
            operation = self.rng.choice(("insert", "delete", "replace", "swap", "splice"))
            position = self.rng.randrange(len(child) + (operation == "insert")) if child else 0
            if operation == "insert" or not child:
                child.insert(position, self.rng.choice(self.passes))
            elif operation == "delete" and len(child) > 1:
                del child[position]
            elif operation == "replace":
                child[position] = self.rng.choice(self.passes)
            elif operation == "swap" and len(child) > 1:
                other = min(position + 1, len(child) - 1)
                child[position], child[other] = child[other], child[position]
            elif operation == "splice":
                child[position:position] = self.rng.choices(self.passes, k=self.rng.randint(1, 4))
        return tuple(child[: self.max_length])


_LEAF_RE = re.compile(r"([a-z0-9-]+(?:<[^<>]*>)?)(?=[,)]|$)")


def flatten_pipeline(pipeline: str, catalogue: Catalogue) -> PassNames:
    """The catalogue passes of a nested pipeline, in order and with their parameters; others are dropped.

    Used to seed local search with clang's -Oz pipeline. Nesting is lost (e.g. the inliner's interleaving
    with function simplification), so the flat list is close to -Oz but not the same.
    """
    return tuple(leaf for leaf in _LEAF_RE.findall(pipeline) if catalogue.get(leaf) is not None)


STRATEGIES = ("random", "greedy", "local")


def make_strategy(
    name: str, catalogue: Catalogue, seed: int, oz_pipeline: str, seeds: Sequence[PassNames] = ()
) -> Strategy:
    """A fresh strategy by name; `local` starts from `seeds` (e.g. a model's top lists), then the flattened -Oz
    pipeline. The other strategies take no seeds."""
    rng = random.Random(seed)
    if seeds and name != "local":
        raise ValueError(f"only local search takes seeds, not {name!r}")
    if name == "random":
        return RandomSearch(catalogue.names(), rng)
    if name == "greedy":
        return GreedySearch(catalogue.names())
    if name == "local":
        return LocalSearch(catalogue.names(), rng, [*seeds, flatten_pipeline(oz_pipeline, catalogue)])
    raise ValueError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)}")
