"""How `labels groups` forms groups from a broadcast matrix: nearest rows first, a cap per package, each unit once,
only train module units whose own search beat -Oz."""

from __future__ import annotations

from stitchopt.datasets.uri import is_under
from stitchopt.labels.groups import GroupMemberKey, GroupSettings, SearchedGroup, form_groups, group_lists
from stitchopt.labels.labelset import LabeledProgram, LabelSet
from stitchopt.labels.shards import SearchedUnit

LISTS = (("a",), ("b",))


def row(name: str, package: str, ratios: tuple[float, float], split: str = "train") -> LabeledProgram:
    oz = 1000
    return LabeledProgram(
        f"bench://x-v1/{name}",
        f"sha-{name}",
        package,
        split,
        {"O0": 2 * oz, "Oz": oz, "O3": oz},
        {"O0": 1, "Oz": 1, "O3": 1},
        tuple(round(r * oz) for r in ratios),
        (1, 1),
    )


def unit(program: LabeledProgram, best_ratio: float) -> SearchedUnit:
    best = ("a",) if best_ratio < 1 else None
    size = round(best_ratio * 1000) if best else None
    return SearchedUnit(program.uri, program.ir_sha256, program.package, program.split, 1000, best, size, (), (), 1.0)


def test_groups_are_nearest_units_of_several_packages() -> None:
    rows = [
        row("a1", "p", (0.90, 1.0)),  # helped by list a
        row("a2", "p", (0.91, 1.0)),
        row("a3", "p", (0.92, 1.0)),  # a third unit of p: over the cap of 2
        row("a4", "q", (0.93, 1.0)),
        row("b1", "r", (1.0, 0.90)),  # helped by list b
        row("b2", "s", (1.0, 0.91)),
        row("b3", "t", (1.2, 0.92)),  # larger than -Oz with a: counts as -Oz (the backup)
        row("v1", "u", (0.90, 1.0), split="validation"),  # never grouped: held out
        row("f1#fn", "v", (0.90, 1.0)),  # a function unit: not grouped
        row("n1", "w", (0.95, 1.0)),  # its own search found nothing below -Oz: no signal
    ]
    labels = LabelSet("tc", "cat", "x", LISTS, tuple(rows), 0.0)
    units = [unit(r, 0.95) for r in rows[:-1]] + [unit(rows[-1], 1.0)]
    settings = GroupSettings(size=3, per_package=2, budget=10, seed=1)
    groups = form_groups(labels, units, settings, count=5)
    names = [sorted(m.uri.rsplit("/", 1)[1] for m in group) for group in groups]
    a_group, b_group = sorted(names)
    assert b_group == ["b1", "b2", "b3"]
    assert "a4" in a_group and len(set(a_group) & {"a1", "a2", "a3"}) == 2  # two of package p, no more
    for group in groups:  # the cap holds, and every member is a train module unit
        packages = [m.package for m in group]
        assert max(packages.count(p) for p in packages) <= 2
    assert form_groups(labels, units, settings, count=1) == groups[:1]  # the same order, fewer groups
    only_b = form_groups(labels, units, settings, count=5, keep=lambda uri, _sha: "/b" in uri)
    assert [sorted(m.uri for m in g) for g in only_b] == [sorted(r.uri for r in rows[4:7])]
    assert form_groups(labels, units, GroupSettings(size=6, per_package=1), count=5) == []  # 5 packages


def test_group_lists_keep_wins_best_first() -> None:
    def group(best: tuple[str, ...] | None, score: float) -> SearchedGroup:
        members = (GroupMemberKey("bench://x-v1/a", "s", "p"),)
        return SearchedGroup("tc", "cat", GroupSettings(), members, best, score, (score,), 10, 1.0)

    found = [group(("x",), 0.97), group(("y",), 0.95), group(None, 1.0), group(("x",), 0.99), group(("z",), 1.0)]
    assert group_lists(found) == (("y",), ("x",))


def test_units_are_chosen_by_whole_segments() -> None:
    roots = ("bench://pypi-v1/lz4", "bench://debian-v1/")
    assert is_under("bench://pypi-v1/lz4/lz4libs/lz4.c", roots) and is_under("bench://pypi-v1/lz4", roots)
    assert is_under("bench://debian-v1/grep/src/grep.c#main", roots)
    assert not is_under("bench://pypi-v1/lz4x/a.c", roots) and not is_under("bench://pypi-v1/zstd/a.c", roots)
    assert is_under("bench://demo-v1/bigint#main", ("bench://demo-v1/bigint",))  # a unit's function units
