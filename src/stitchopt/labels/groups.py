"""The label factory's group stage: lists searched for groups of train units that respond alike, for the pool.

The broadcast matrix says which units the same lists help (docs/results.md, "Learning curve": each held-out
unit's best list of a pool of single-unit bests reaches only 57% of its own search). Units are grouped by their
rows (log size over -Oz of every pool list, each with the -Oz backup), nearest first, at most `per_package` of
one package in a group so that a group's list is not one package's habit; each group is searched as one program
(`tune.group`: the geomean over its members with the backup, every win under the member's guards), seeded with
the members' own minimized bests, and its best is minimized on the group, then validated in full when asked
(the IR guards let miscompiling lists through: docs/results.md, "Lists searched for groups of units"). Each
group is a shard of its own in `groups/`, named by its members and settings, so a rerun skips finished groups
(and groups none of their units again) and a stop loses one group's search at most. `broadcast` adds the lists
of groups of train units that did not fail validation to the pool.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from stitchopt.datasets.benchmarks import FUNCTION_SEPARATOR, benchmark_module, dataset_benchmarks
from stitchopt.datasets.manifest import file_sha256
from stitchopt.datasets.uri import SCHEME
from stitchopt.errors import DatasetError, InputError, StitchoptError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.labelset import LabelSet, read_gzip_json, write_gzip_json
from stitchopt.labels.shards import SHARDS_FORMAT, SearchedUnit, readable_shard
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.tune.acceptance import ListValidation, program_guard
from stitchopt.tune.driver import Budget
from stitchopt.tune.group import GroupMember, GroupScorer, minimize_group, tune_group
from stitchopt.tune.strategies import make_strategy

GROUPS_DIR = "groups"


@dataclass(frozen=True)
class GroupSettings:
    """How groups are formed and searched: part of a group shard's name (other settings are other work)."""

    size: int = 6
    per_package: int = 2
    budget: int = 150  # lists evaluated per group, each on every member
    seed: int = 0

    @property
    def identity(self) -> str:
        return f"g{self.size}-p{self.per_package}-b{self.budget}-s{self.seed}"


@dataclass(frozen=True)
class GroupMemberKey:
    uri: str
    ir_sha256: str
    package: str


@dataclass(frozen=True)
class SearchedGroup:
    """One group's search: `best` is None when no list beat -Oz on the group."""

    toolchain: str
    catalogue: str
    settings: GroupSettings
    members: tuple[GroupMemberKey, ...]
    best: PassNames | None
    score: float  # the best's geomean over the members of size / -Oz's, each with the backup (1.0: none)
    ratios: tuple[float | None, ...]  # the best's size / -Oz's per member (None: it failed there)
    evaluations: int
    cpu_seconds: float
    validation: str = ""  # what full validation said of the best ("": not validated)

    @property
    def failed_validation(self) -> bool:
        return self.validation.startswith("failed")

    @property
    def name(self) -> str:
        keys = [f"{m.uri}\0{m.ir_sha256}" for m in self.members]
        stamp = "\n".join([self.toolchain, self.catalogue, self.settings.identity, *keys])
        return f"{self.settings.identity}-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.json.gz"

    def save(self, directory: Path) -> Path:
        data = {
            "format": SHARDS_FORMAT,
            "kind": "group",
            "toolchain": self.toolchain,
            "catalogue": self.catalogue,
            "settings": asdict(self.settings),
            "members": [asdict(m) for m in self.members],
            "best": None if self.best is None else list(self.best),
            "score": self.score,
            "ratios": list(self.ratios),
            "evaluations": self.evaluations,
            "cpu_seconds": round(self.cpu_seconds, 2),
            "validation": self.validation,
        }
        path = directory / GROUPS_DIR / self.name
        write_gzip_json(path, data)
        return path

    @classmethod
    def load(cls, path: Path) -> SearchedGroup:
        data = read_gzip_json(path, "not a stitchopt group shard; delete it and search the groups again")
        if data.get("format") != SHARDS_FORMAT or data.get("kind") != "group":
            raise InputError(f"{path}: not a group shard of format {SHARDS_FORMAT}")
        return cls(
            data["toolchain"],
            data["catalogue"],
            GroupSettings(**data["settings"]),
            tuple(GroupMemberKey(**m) for m in data["members"]),
            None if data["best"] is None else tuple(data["best"]),
            float(data["score"]),
            tuple(data["ratios"]),
            int(data["evaluations"]),
            float(data["cpu_seconds"]),
            str(data.get("validation", "")),
        )


def load_groups(directory: Path, toolchain: str | None = None, catalogue: str | None = None) -> list[SearchedGroup]:
    """The group shards of a label directory (made with this toolchain and catalogue, when given); unreadable
    ones are skipped with a warning naming the file."""
    groups = (readable_shard(SearchedGroup.load, path) for path in sorted((directory / GROUPS_DIR).glob("*.json.gz")))
    return [
        g for g in groups if g is not None and toolchain in (None, g.toolchain) and catalogue in (None, g.catalogue)
    ]


def train_groups(groups: Sequence[SearchedGroup], searched: Sequence[SearchedUnit]) -> list[SearchedGroup]:
    """The groups whose members are all train units of `searched`: the only ones whose lists may join a pool
    that held-out units are judged with."""
    split = {u.key: u.split for u in searched}
    return [g for g in groups if all(split.get((m.uri, m.ir_sha256)) == "train" for m in g.members)]


def group_lists(groups: Sequence[SearchedGroup]) -> tuple[PassNames, ...]:
    """The groups' distinct bests that beat -Oz on their group and did not fail validation, the largest gain
    first."""
    found = sorted(
        (g for g in groups if g.best is not None and g.score < 1.0 and not g.failed_validation),
        key=lambda g: (g.score, g.best),
    )
    return tuple(dict.fromkeys(g.best for g in found if g.best is not None))


def form_groups(
    matrix: LabelSet,
    searched: Sequence[SearchedUnit],
    settings: GroupSettings,
    count: int,
    keep: Callable[[str, str], bool] = lambda uri, ir_sha256: True,
    splits: Sequence[str] = ("train",),
) -> list[tuple[GroupMemberKey, ...]]:
    """Up to `count` groups of `settings.size` module units of the matrix's `splits` (those `keep(uri, ir_sha256)`
    accepts, whose own search beat -Oz), each a seed unit and its nearest units by matrix row, at most
    `settings.per_package` of a package. Seed units are taken in an order fixed by the seed and their URIs (not
    by the matrix's row order); units go to one group at most."""
    own = {u.key: u for u in searched}
    rows = [
        i
        for i, p in enumerate(matrix.programs)
        if p.split in splits
        and FUNCTION_SEPARATOR not in p.uri
        and keep(p.uri, p.ir_sha256)
        and (unit := own.get((p.uri, p.ir_sha256))) is not None
        and unit.best_ratio < 1.0
    ]
    if not rows:
        return []
    vectors = np.log(np.minimum(matrix.ratios()[rows], 1.0))
    uris = [matrix.programs[i].uri for i in rows]
    order = sorted(range(len(rows)), key=lambda i: hashlib.sha256(f"{settings.seed}\0{uris[i]}".encode()).digest())
    free = set(order)
    groups: list[tuple[GroupMemberKey, ...]] = []
    for first in order:
        if len(groups) >= count or len(free) < settings.size:
            break
        if first not in free:
            continue
        distances = np.linalg.norm(vectors - vectors[first], axis=1)
        members, per_package = [first], {matrix.programs[rows[first]].package: 1}
        for other in np.argsort(distances, kind="stable"):
            index = int(other)
            package = matrix.programs[rows[index]].package
            if len(members) == settings.size:
                break
            if index in free and index != first and per_package.get(package, 0) < settings.per_package:
                members.append(index)
                per_package[package] = per_package.get(package, 0) + 1
        if len(members) < settings.size:
            continue
        free.difference_update(members)
        programs = [matrix.programs[rows[i]] for i in members]
        groups.append(tuple(GroupMemberKey(p.uri, p.ir_sha256, p.package) for p in programs))
    return groups


def built_as_searched(keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (URI, IR hash) pairs whose dataset unit is built here with that IR (a bitcode file is loaded as it is,
    so its hash is the module's): a group with another member would be searched on other code, or wait for its
    package to be built."""
    wanted = list(keys)
    paths: dict[str, Path] = {}
    for dataset in {uri.removeprefix(SCHEME).partition("/")[0] for uri, _ in wanted}:
        try:
            paths.update((b.uri, b.path) for b in dataset_benchmarks(f"{SCHEME}{dataset}"))
        except DatasetError:  # not built here
            continue
    return {
        (uri, sha)
        for uri, sha in wanted
        if (path := paths.get(uri)) is not None and path.is_file() and file_sha256(path) == sha
    }


@dataclass(frozen=True)
class GroupProgress:
    searched: int
    skipped: int  # already in the directory's group shards
    lost: int  # groups left out: a member's IR differs now, or cannot be built
    shards: tuple[Path, ...]
    cpu_seconds: float


def search_groups(
    evaluator: Evaluator,
    catalogue: Catalogue,
    groups: Sequence[tuple[GroupMemberKey, ...]],
    searched: Sequence[SearchedUnit],
    directory: Path,
    settings: GroupSettings,
    *,
    on_group: Callable[[int, int, SearchedGroup | None], None] | None = None,
    on_shard: Callable[[Path], None] | None = None,
    validation: ListValidation | None = None,
) -> GroupProgress:
    """Search every group not yet in `directory`'s group shards; each finished group is written (and passed to
    `on_shard`) at once; with `validation`, each best is validated in full (a failed one stays in its shard,
    marked, and out of the pool). `on_group(done, total, group)` follows progress (None: a group left out, its
    IR lost or -Oz failing on a member)."""
    stamps = (evaluator.toolchain.identity, catalogue.identity)
    done = {g.members for g in load_groups(directory, *stamps) if g.settings == settings}
    todo = [g for g in groups if g not in done]
    own = {u.key: u for u in searched}
    written: list[Path] = []
    lost = 0
    cpu = 0.0
    for index, keys in enumerate(todo):
        members = _members(evaluator, keys)
        seeds = [u.best for k in keys if (u := own.get((k.uri, k.ir_sha256))) is not None and u.best is not None]
        unique = list(dict.fromkeys(seeds))
        try:
            group = search_group(evaluator, catalogue, members, keys, unique, settings, validation) if members else None
        except InputError:  # -Oz fails on a member (a toolchain other than the searches'): the group is lost
            group = None
        if group is None:
            lost += 1
            if on_group is not None:
                on_group(index + 1, len(todo), None)
            continue
        path = group.save(directory)
        written.append(path)
        cpu += group.cpu_seconds
        if on_shard is not None:
            on_shard(path)
        if on_group is not None:
            on_group(index + 1, len(todo), group)
    return GroupProgress(len(written), len(groups) - len(todo), lost, tuple(written), cpu)


def search_group(
    evaluator: Evaluator,
    catalogue: Catalogue,
    members: Sequence[GroupMember],
    keys: tuple[GroupMemberKey, ...],
    seeds: Sequence[PassNames],
    settings: GroupSettings,
    validation: ListValidation | None = None,
) -> SearchedGroup:
    """One group's local search from `seeds` (then the flattened -Oz pipeline), its best minimized."""
    scorer = GroupScorer(evaluator, members, catalogue)
    strategy = make_strategy("local", catalogue, settings.seed, evaluator.baselines["Oz"].pipeline, seeds)
    run = tune_group(scorer, strategy, Budget(evaluations=settings.budget))
    best, evaluations = run.best_passes, run.evaluations
    if best is not None:
        # at most half the search's lists: a best grown from the flattened -Oz pipeline has a hundred passes
        minimized = minimize_group(scorer, best, max_evaluations=max(1, settings.budget // 2))
        evaluations += minimized.evaluations
        if minimized.score <= run.best_score:
            best = minimized.passes
    ratios: tuple[float | None, ...] = tuple(None for _ in members)
    score = 1.0
    if best is not None:  # measured again (from the cache) and checked as any answer is
        (results,) = scorer.measure([best])
        checked, doubts = scorer.checked(best, results)
        if doubts or scorer.score(checked) >= 1.0:
            best = None
        else:
            score, ratios = scorer.score(checked), tuple(None if math.isinf(r) else round(r, 6) for r in checked)
    verdict = validation.check(tuned_pipeline(best, catalogue)).note if validation and best is not None else ""
    stamps = (evaluator.toolchain.identity, catalogue.identity)
    return SearchedGroup(*stamps, settings, keys, best, score, ratios, evaluations, scorer.cpu_seconds, verdict)


def _members(evaluator: Evaluator, keys: Sequence[GroupMemberKey]) -> list[GroupMember] | None:
    """The group's IR rebuilt from its dataset, each member under its guards; None when one member's IR differs
    from the searched unit's (another dataset build) or cannot be had."""
    members = []
    for key in keys:
        try:
            module = benchmark_module(evaluator.toolchain, key.uri)
        except StitchoptError:  # the dataset unit cannot be built here
            return None
        if module.sha256 != key.ir_sha256:
            return None
        members.append(GroupMember(module, program_guard(evaluator, module)))
    return members
