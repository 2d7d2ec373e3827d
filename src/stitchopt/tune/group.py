"""Search one pass list for several programs at once (a group), and minimize it on the group.

A list found for one program rarely helps another (docs/results.md, "Learning curve": each held-out unit's best
list of a pool of single-program bests reaches 57% of its own search), so a pool for programs never seen needs
lists that help several programs. Here a list's score is the geomean over the group of its object size over
-Oz's, each member with the -Oz backup: a member the list does not shrink or fails on counts as -Oz, so a list
that helps half the group a lot can win over one that helps all of it a little, as it would behind a chooser.

Wins are trusted as single-program search trusts them: a list that would become the best is first measured again
whole on members where it was resumed from a module state, then passes each shrunk member's guards; a list some
member's guards distrust is scored as a failure, so the search never climbs from a likely miscompile.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from stitchopt.core import EvalResult, IRModule
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import EvalRequest, Evaluator
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.tune.acceptance import GuardCheck
from stitchopt.tune.driver import Budget, improves, next_batch
from stitchopt.tune.minimize import Minimized, minimize_scored
from stitchopt.tune.strategies import Strategy


@dataclass(frozen=True)
class GroupMember:
    module: IRModule
    guard: GuardCheck | None = None  # the member's guards (`program_guard`); None: wins are not checked


@dataclass
class GroupRun:
    """What a group search found: `best_passes` is None when no list that every shrunk member's guards trust
    beat -Oz on any member."""

    best_passes: PassNames | None = None
    best_score: float = 1.0  # geomean over members of size / -Oz's, each with the -Oz backup
    evaluations: int = 0  # lists evaluated (each on every member)
    suspicious: int = 0  # lists some member's guards distrusted


class GroupScorer:
    """Lists measured on every member through the evaluator (and so through its cache), scored with the backup."""

    def __init__(self, evaluator: Evaluator, members: Sequence[GroupMember], catalogue: Catalogue):
        if not members:
            raise InputError("a group search needs at least one program")
        self.evaluator, self.members, self.catalogue = evaluator, tuple(members), catalogue
        oz = evaluator.baselines["Oz"]
        self.options = oz.options
        references = evaluator.evaluate_many([EvalRequest(m.module, oz.pipeline, oz.options) for m in members])
        failed = [m.module.name for m, r in zip(members, references, strict=True) if not (r.ok and r.size_bytes)]
        if failed:
            raise InputError(f"-Oz fails on {', '.join(failed)}: leave it out of the group")
        self.oz_sizes = tuple(r.size_bytes or 0 for r in references)
        # opt + llc of every result, cached ones at what they cost when measured (as search shards count): the
        # members' -Oz builds and their own bests, seeds here, are counted in their searches too
        self.cpu_seconds = _cpu_seconds(references)

    def measure(self, candidates: Sequence[PassNames], base: PassNames | None = None) -> list[list[EvalResult]]:
        """Each candidate's results, one per member; `base`: the list they derive from (see EvalRequest)."""
        base_pipeline = tuned_pipeline(base, self.catalogue) if base else None
        requests = [
            EvalRequest(m.module, tuned_pipeline(c, self.catalogue), self.options, base_pipeline)
            for c in candidates
            for m in self.members
        ]
        results = self.evaluator.evaluate_many(requests)
        self.cpu_seconds += _cpu_seconds(results)
        width = len(self.members)
        return [results[i * width : (i + 1) * width] for i in range(len(candidates))]

    def ratios(self, results: Sequence[EvalResult]) -> list[float]:
        """Size over -Oz's per member; inf where the list failed."""
        return [_ratio(r, oz) for r, oz in zip(results, self.oz_sizes, strict=True)]

    @staticmethod
    def score(ratios: Sequence[float]) -> float:
        """Geomean of the ratios, each with the -Oz backup."""
        return math.exp(sum(math.log(min(r, 1.0)) for r in ratios) / len(ratios))

    def checked(self, passes: PassNames, results: Sequence[EvalResult]) -> tuple[list[float], list[str]]:
        """The ratios with resumed wins measured again whole, and what the members' guards say about the wins."""
        pipeline = tuned_pipeline(passes, self.catalogue)
        ratios, doubts = [], []
        for member, result, oz in zip(self.members, results, self.oz_sizes, strict=True):
            if result.resumed and result.ok and result.size_bytes and result.size_bytes < oz:
                result = self.evaluator.remeasure(member.module, pipeline, self.options)
                self.cpu_seconds += _cpu_seconds([result])
            ratio = _ratio(result, oz)
            if ratio < 1.0 and member.guard is not None:
                doubts += [f"{member.module.name}: {reason}" for reason in member.guard(pipeline)[:1]]
            ratios.append(ratio)
        return ratios, doubts

    def trusted_score(self, passes: PassNames) -> float:
        """The list's score (from the cache when measured before), inf when some member's guards distrust it."""
        (results,) = self.measure([passes])
        ratios, doubts = self.checked(passes, results)
        return math.inf if doubts else self.score(ratios)


def _cpu_seconds(results: Sequence[EvalResult]) -> float:
    return sum(r.opt_seconds + r.codegen_seconds for r in results)


def _ratio(result: EvalResult, oz_size: int) -> float:
    return result.size_bytes / oz_size if result.ok and result.size_bytes else math.inf


def tune_group(scorer: GroupScorer, strategy: Strategy, budget: Budget = Budget()) -> GroupRun:
    """Search one list for all of `scorer`'s members within `budget` (its evaluations count lists, each built for
    every member). Proposals come in fixed-size batches from a seeded strategy, so a rerun proposes the same lists
    and finds them in the evaluation cache."""
    run = GroupRun()
    start = time.monotonic()
    since_improvement = 0
    while proposals := next_batch(strategy, budget, run.evaluations, time.monotonic() - start, since_improvement):
        scores = []
        for passes, results in zip(proposals, scorer.measure(proposals, strategy.base()), strict=True):
            score = scorer.score(scorer.ratios(results))
            run.evaluations += 1
            since_improvement += 1
            if improves(run.best_passes, run.best_score, passes, score):
                ratios, doubts = scorer.checked(passes, results)
                score = math.inf if doubts else scorer.score(ratios)
                run.suspicious += bool(doubts)
                if improves(run.best_passes, run.best_score, passes, score):
                    run.best_passes, run.best_score = passes, score
                    since_improvement = 0
            scores.append(score)
        strategy.tell(list(zip(proposals, scores, strict=True)))
    return run


def minimize_group(scorer: GroupScorer, passes: PassNames, *, max_evaluations: int) -> Minimized:
    """Drop the passes that do not help the group and put the rest in canonical order (no insertion: that is a
    search's job), keeping only changes every member's guards trust."""

    def score(candidates: list[PassNames]) -> list[float]:
        return [scorer.score(scorer.ratios(results)) for results in scorer.measure(candidates)]

    return minimize_scored(
        score,
        passes,
        scorer.catalogue,
        insertion=False,
        max_evaluations=max_evaluations,
        trusted=lambda candidate: math.isfinite(scorer.trusted_score(candidate)),
    )
