"""The label factory on demo programs: per-unit searches written as shards, resumed by key, function units, the
broadcast matrix, a tiny training run from the label directory, commits of shards, and the Ray path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule
from stitchopt.datasets.benchmarks import Benchmark, benchmark_module
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.groups import (
    GROUPS_DIR,
    GroupMemberKey,
    GroupSettings,
    group_lists,
    load_groups,
    search_group,
    search_groups,
)
from stitchopt.labels.matrix import (
    best_lists,
    broadcast,
    broadcast_pool,
    label_matrix,
    plan_broadcast,
    searched_programs,
)
from stitchopt.labels.measure import Program, load_programs
from stitchopt.labels.search import function_units, search_benchmarks, search_units
from stitchopt.labels.shards import (
    SEARCHES_DIR,
    SearchSettings,
    SearchShard,
    benchmark_key,
    load_matrix,
    load_searches,
    summarize_directory,
)
from stitchopt.labels.verdicts import VERDICTS_DIR, pool_lists
from stitchopt.learning.train import train_from_labels
from stitchopt.models.chooser import SoftmaxChooser, decision_costs
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NeighbourChooser
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble, load_module
from stitchopt.toolchain.split import symbols
from stitchopt.tune.acceptance import ListValidation, Verified
from stitchopt.tune.driver import Budget
from stitchopt.tune.group import GroupMember, GroupScorer, tune_group
from stitchopt.tune.strategies import make_strategy

pytestmark = pytest.mark.usefixtures("one_thread")  # train_from_labels: numpy on one thread


def run_cli(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env, timeout=300
    )


SETTINGS = SearchSettings("local", budget=8, seed=0, minimize=True)
NAMES = ("bit_tricks", "ring_buffer", "prime_sieve")


def programs(toolchain: Toolchain, names: tuple[str, ...] = NAMES) -> list[Program]:
    return [
        Program(f"bench://demo-v1/{name}", name, "train", benchmark_module(toolchain, f"bench://demo-v1/{name}"))
        for name in names
    ]


def search(evaluator: Evaluator, catalogue: Catalogue, units: list[Program], directory: Path) -> list[Path]:
    done = search_units(
        evaluator, catalogue, units, directory, dataset="bench://demo-v1", settings=SETTINGS, shard_units=2
    )
    return list(done.shards)


@dataclass(frozen=True)
class Searched:
    directory: Path
    units: list[Program]
    shards: list[Path]
    store: EvaluationStore


@pytest.fixture(scope="module")
def searched(toolchain: Toolchain, catalogue: Catalogue, tmp_path_factory: pytest.TempPathFactory) -> Searched:
    """The three demo units searched once, into shards of two units; the tests read or copy them."""
    directory = tmp_path_factory.mktemp("labels")
    store = EvaluationStore(directory / "cache.db")
    units = programs(toolchain)
    with Evaluator(toolchain, store, jobs=2) as evaluator:
        shards = search(evaluator, catalogue, units, directory / "labels")
    return Searched(directory / "labels", units, shards, store)


def test_searches_are_shards_that_resume_by_key(
    toolchain: Toolchain, catalogue: Catalogue, searched: Searched, tmp_path: Path
) -> None:
    assert len(searched.shards) == 2  # 2 + 1 units
    found = {u.uri: u for u in load_searches(searched.directory)}
    assert set(found) == {p.uri for p in searched.units}
    for program in searched.units:
        unit = found[program.uri]
        assert unit.ir_sha256 == program.module.sha256 and len(unit.evaluated) == SETTINGS.budget
        assert unit.oz_size > 0 and unit.cpu_seconds > 0
        if unit.best is not None:
            assert unit.best_size is not None and unit.best_size < unit.oz_size
            assert len(unit.best) <= len(unit.bests[-1][0])  # minimized
            assert min(size for _, size in unit.evaluated if size) <= unit.bests[-1][1]
    copy = tmp_path / "labels"
    shutil.copytree(searched.directory, copy)
    with Evaluator(toolchain, searched.store, jobs=2) as evaluator:
        assert search(evaluator, catalogue, searched.units, copy) == []  # everything is already in shards
        lost = copy / SEARCHES_DIR / searched.shards[0].name
        lost_units = {u.uri for u in SearchShard.load(lost).units}
        lost.unlink()
        resumed = search(evaluator, catalogue, searched.units, copy)
    assert {u.uri for p in resumed for u in SearchShard.load(p).units} == lost_units
    assert resumed[0].name == searched.shards[0].name  # the same work gets the same name
    other = SearchSettings("local", budget=6, seed=0, minimize=True)  # other settings are other work
    assert load_searches(copy, settings=other) == []


def test_a_rerun_does_not_load_units_already_in_shards(
    toolchain: Toolchain, catalogue: Catalogue, searched: Searched, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    benchmarks = []
    for program in searched.units:  # the searched units as a built dataset holds them: bitcode files
        path = tmp_path / f"{program.package}.bc"
        path.write_bytes(program.module.bitcode)
        benchmarks.append(Benchmark(program.uri, path, program.package, program.split))
    copy = tmp_path / "labels"
    shutil.copytree(searched.directory, copy)
    loaded: list[Path] = []

    def counted(toolchain: Toolchain, path: Path) -> IRModule:
        loaded.append(path)
        return load_module(toolchain, path)

    monkeypatch.setattr("stitchopt.labels.measure.load_module", counted)
    with Evaluator(toolchain, searched.store, jobs=2) as evaluator:
        rerun = search_benchmarks(evaluator, catalogue, benchmarks, copy, dataset="bench://demo-v1", settings=SETTINGS)
        assert (rerun.searched, rerun.skipped, rerun.shards, loaded) == (0, 3, (), [])
        lost = copy / SEARCHES_DIR / searched.shards[0].name
        lost_uris = {u.uri for u in SearchShard.load(lost).units}
        lost.unlink()
        resumed = search_benchmarks(
            evaluator, catalogue, benchmarks, copy, dataset="bench://demo-v1", settings=SETTINGS, shard_units=2
        )
    assert {b.uri for b in benchmarks if b.path in loaded} == lost_uris  # only the lost shard's units loaded
    assert (resumed.searched, resumed.skipped) == (len(lost_uris), 3 - len(lost_uris))
    assert resumed.shards[0].name == searched.shards[0].name


def test_an_interrupted_run_keeps_what_it_finished(
    toolchain: Toolchain, catalogue: Catalogue, searched: Searched, tmp_path: Path
) -> None:
    """Ctrl-C (or SIGTERM, which the CLI raises as one) after the first unit: its search and its matrix row are
    written as shards of their own, though the shards were to hold more, and a rerun skips them."""

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    pool = broadcast_pool(load_searches(searched.directory), 2)
    with Evaluator(toolchain, searched.store, jobs=2) as evaluator:
        for label in (
            lambda: search_units(
                evaluator, catalogue, searched.units, tmp_path / "s", dataset="d", settings=SETTINGS, on_unit=stop
            ),
            lambda: label_matrix(evaluator, catalogue, searched.units, pool, tmp_path / "m", dataset="d", on_unit=stop),
        ):
            with pytest.raises(KeyboardInterrupt):
                label()
    (kept,) = (tmp_path / "s" / SEARCHES_DIR).glob("*.json.gz")
    assert [u.uri for u in SearchShard.load(kept).units] == [searched.units[0].uri]
    assert [p.uri for p in load_matrix(tmp_path / "m").programs] == [searched.units[0].uri]


def test_sigterm_ends_a_command_as_ctrl_c_does(tmp_path: Path) -> None:
    source = tmp_path / "loop.c"
    source.write_text("int f(int *a, int n) { int s = 0; for (int i = 0; i < n; ++i) s += a[i] * i; return s; }\n")
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache")}
    argv = [sys.executable, "-m", "stitchopt", "tune", str(source), "--budget", "100000", "--no-validate"]
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env) as running:
        time.sleep(5)
        running.terminate()
        _, stderr = running.communicate(timeout=60)
    assert running.returncode == 130 and stderr.rstrip().endswith("stitchopt: interrupted"), stderr


def test_function_units_are_cut_out_and_found_again_by_uri(toolchain: Toolchain) -> None:
    (program,) = programs(toolchain, ("bit_tricks",))
    parts = function_units(toolchain, program, 2)
    assert len(parts) == 2 and all(p.uri.startswith(f"{program.uri}#") for p in parts)
    found = symbols(toolchain, program.module.bitcode, program.uri)
    longest = sorted(zip(found.lines, found.functions, strict=True), reverse=True)[:2]
    assert [p.uri.rpartition("#")[2] for p in parts] == [name for _, name in longest]  # the largest first
    assert longest[0][0] > longest[1][0] > min(found.lines)
    assert benchmark_module(toolchain, parts[0].uri).sha256 == parts[0].module.sha256


def test_broadcast_matrix_trains_a_model(
    toolchain: Toolchain, catalogue: Catalogue, searched: Searched, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    units, store, directory = searched.units, searched.store, tmp_path / "labels"
    shutil.copytree(searched.directory, directory)
    with Evaluator(toolchain, store, jobs=2) as evaluator:
        found = load_searches(directory)
        pool = broadcast_pool(found, 3)
        assert pool and len(pool) <= 3
        assert [p.passes for p in best_lists(found)][: len(pool)] == list(pool)
        done = label_matrix(evaluator, catalogue, units, pool, directory, dataset="bench://demo-v1", shard_units=2)
        assert done.labeled == len(units) and len(done.shards) == 2
        assert label_matrix(evaluator, catalogue, units, pool, directory, dataset="bench://demo-v1").labeled == 0
        labels = load_matrix(directory)
        assert labels.lists == pool and len(labels.programs) == len(units)
        other = label_matrix(evaluator, catalogue, units[:1], pool[:1], directory, dataset="bench://demo-v1")
        assert other.labeled == 1 and other.cpu_seconds == 0  # its one list was measured in the first pool
        grown = (*pool, ("sroa", "instcombine"))
        asked: list[int] = []
        evaluate_many = evaluator.evaluate_many
        monkeypatch.setattr(
            evaluator, "evaluate_many", lambda requests: asked.append(len(requests)) or evaluate_many(requests)
        )
        larger = label_matrix(evaluator, catalogue, units[:1], grown, directory, dataset="bench://demo-v1")
        assert asked == [1]  # the new list alone: the baselines and the other lists are read back
    with pytest.raises(InputError, match="several matrices"):
        load_matrix(directory)  # a second pool: the one meant must be named
    assert load_matrix(done.directory).lists == pool and load_matrix(other.directory).lists == pool[:1]
    first = labels.programs[[p.uri for p in labels.programs].index(units[0].uri)]
    assert load_matrix(other.directory).programs[0].sizes == first.sizes[:1]
    (measured,) = load_matrix(larger.directory).programs
    assert measured.sizes[: len(pool)] == first.sizes and measured.sizes[-1] is not None
    for row, program in zip(labels.ratios(), labels.programs, strict=True):
        unit = next(u for u in found if u.uri == program.uri)
        if unit.best in pool:  # a unit's own best, measured again in the matrix, gives the same size
            assert row[pool.index(unit.best)] == pytest.approx(unit.best_ratio)
    model, report, skipped = train_from_labels(toolchain, catalogue, labels, k=2, store=store)
    assert not skipped and 1 <= len(model.lists) <= 2
    assert {c.name for c in report.candidates} >= {"best single list", "regression ranker"}
    assert np.isfinite([c.static_backup for c in report.candidates]).all()
    raw = np.vstack([model.features(toolchain, p.module) for p in units])
    x = model.standardizer.transform(raw)
    model.chooser = SoftmaxChooser(0.01).fit(x, decision_costs(labels.ratios()[:, : len(model.lists)]))
    model.save_pretrained(tmp_path / "model")
    loaded = FlagModel.from_pretrained(tmp_path / "model", catalogue)
    assert loaded.chooser is not None
    order = [[e.passes for e in ranked] for ranked in loaded.rank_features(raw)]
    expected = np.argsort(-model.chooser.probabilities(x), axis=1, kind="stable")
    choices = [*model.lists, None]
    assert order == [[choices[i] for i in row] for row in expected]  # the chooser orders what the modes try
    model.chooser = NeighbourChooser(2, 0.5).fit(x, labels.ratios()[:, : len(model.lists)])
    model.save_pretrained(tmp_path / "neighbours")
    loaded = FlagModel.from_pretrained(tmp_path / "neighbours", catalogue)
    assert isinstance(loaded.chooser, NeighbourChooser) and loaded.chooser.neighbors == 2
    order = [[e.passes for e in ranked] for ranked in loaded.rank_features(raw)]
    expected = np.argsort(model.chooser.order(x), axis=1, kind="stable")
    assert order == [[choices[i] for i in row] for row in expected]


def test_a_group_search_finds_one_list_for_its_units(
    toolchain: Toolchain, catalogue: Catalogue, searched: Searched, tmp_path: Path
) -> None:
    directory = tmp_path / "labels"
    shutil.copytree(searched.directory, directory)
    found = load_searches(directory)
    assert any(u.best is not None for u in found)  # a seed that beats -Oz on its own unit
    keys = tuple(GroupMemberKey(p.uri, p.module.sha256, p.package) for p in searched.units)
    settings = GroupSettings(size=3, per_package=1, budget=16, seed=0)
    with Evaluator(toolchain, searched.store, jobs=2) as evaluator:
        done = search_groups(evaluator, catalogue, [keys], found, directory, settings)
        assert (done.searched, done.skipped, done.lost) == (1, 0, 0) and done.cpu_seconds > 0
        (group,) = load_groups(directory, toolchain.identity, catalogue.identity)
        assert group.best is not None and group.score < 1.0 and group.evaluations > settings.budget  # + minimizer
        alone = _ratios_on(evaluator, catalogue, searched, group.best)  # the list on each unit on its own
        assert group.ratios == pytest.approx(alone)
        assert group.score == pytest.approx(_with_backup(alone))  # their geomean, each with the -Oz backup
        seeds = list(dict.fromkeys(u.best for u in found if u.best is not None))  # no worse than the best seed
        assert group.score <= min(_with_backup(_ratios_on(evaluator, catalogue, searched, s)) for s in seeds) + 1e-12
        again = search_groups(evaluator, catalogue, [keys], found, directory, settings)
        assert (again.searched, again.skipped) == (0, 1)  # finished groups are not searched again
        refused = SimpleNamespace(check=lambda pipeline: Verified(False, "failed humaneval_cpp: CPP/19 timeout"))
        members = [GroupMember(p.module) for p in searched.units]
        failed = search_group(evaluator, catalogue, members, keys, seeds, settings, cast(ListValidation, refused))
        assert failed.best == group.best and failed.failed_validation  # kept in its shard, marked
        assert group_lists([failed]) == () and group_lists([group]) == (group.best,)  # and out of the pool
        distrusted = [GroupMember(p.module, lambda pipeline: ["looks like a miscompile"]) for p in searched.units]
        oz = evaluator.baselines["Oz"]
        strategy = make_strategy("local", catalogue, 0, oz.pipeline, seeds)
        run = tune_group(GroupScorer(evaluator, distrusted, catalogue), strategy, Budget(evaluations=len(seeds)))
        assert run.best_passes is None and run.suspicious == len(seeds)  # never climbs from a distrusted win
    plan = plan_broadcast(directory, toolchain, catalogue, pool=1)
    assert plan.lists[-1] == group.best and len(plan.lists) <= 2  # the pool's bests, then the groups'
    gone = replace(found[0], uri="bench://demo-v1/not_built_here")  # its package's build here lacks the file
    with pytest.warns(UserWarning, match="1 units have other IR now or are not built"):
        assert [p.uri for p in searched_programs(toolchain, [gone, found[0]])] == [found[0].uri]
    (only,) = plan_broadcast(directory, toolchain, catalogue, pool=1, units=(searched.units[0].uri,)).units
    assert only.uri == searched.units[0].uri  # --units: the same pool, on these units
    with pytest.raises(InputError, match="no unit under bench://demo-v1/nothing to broadcast on"):
        plan_broadcast(directory, toolchain, catalogue, pool=1, units=("bench://demo-v1/nothing",))


def test_add_groups_gives_a_matrixs_units_the_groups_lists(
    toolchain: Toolchain, catalogue: Catalogue, searched: Searched, tmp_path: Path
) -> None:
    """--matrix M --add-groups: M's lists, then the groups' lists it lacks, on M's own units (its function units
    left out with --no-functions) in a new matrix whose old columns are M's rows read back."""
    directory = tmp_path / "labels"
    shutil.copytree(searched.directory, directory)
    found = load_searches(directory)
    keys = tuple(GroupMemberKey(p.uri, p.module.sha256, p.package) for p in searched.units)
    function = function_units(toolchain, searched.units[0], 1)
    old_list = ("sroa", "instcombine")
    with Evaluator(toolchain, searched.store, jobs=2) as evaluator:
        search_groups(evaluator, catalogue, [keys], found, directory, GroupSettings(3, 1, 16, 0))
        (group,) = load_groups(directory, toolchain.identity, catalogue.identity)
        assert group.best is not None and group.best != old_list
        old = label_matrix(
            evaluator, catalogue, [*searched.units, *function], [old_list], directory, dataset="bench://demo-v1"
        )
        with pytest.raises(InputError, match="--add-groups adds lists to the units of a matrix: name it with"):
            plan_broadcast(directory, toolchain, catalogue, add_groups=True)
        assert len(plan_broadcast(directory, toolchain, catalogue, matrix=old.directory, add_groups=True).units) == 4
        plan = plan_broadcast(directory, toolchain, catalogue, matrix=old.directory, add_groups=True, functions=False)
        assert plan.lists == (old_list, group.best)
        assert sorted(u.uri for u in plan.units) == sorted(p.uri for p in searched.units)  # the function left out
        grown = broadcast(evaluator, catalogue, plan, directory)
    assert grown.directory != old.directory and grown.labeled == len(searched.units)
    before = {p.uri: p for p in load_matrix(old.directory).programs}
    for row in load_matrix(grown.directory).programs:  # the old column read back: its compile seconds too
        assert (row.sizes[0], row.seconds[0]) == (before[row.uri].sizes[0], before[row.uri].seconds[0])
        assert row.sizes[1] is not None
    with pytest.raises(InputError, match="already measures every group's list; nothing to add"):
        plan_broadcast(directory, toolchain, catalogue, matrix=grown.directory, add_groups=True)


def test_broadcast_grows_a_matrix_with_units_no_search_reached(
    toolchain: Toolchain, catalogue: Catalogue, searched: Searched, tmp_path: Path
) -> None:
    """--unsearched: the pool measured on dataset units no search reached at their IR now (a searched one is not
    measured twice, one rebuilt since its search is), recognized by their file's hash on a rerun; --matrix keeps
    that matrix's lists whatever the pool now is."""
    directory = tmp_path / "labels"
    shutil.copytree(searched.directory, directory)
    unsearched = []
    for name in ("avl_tree", "bit_tricks", "bigint"):  # bit_tricks is searched; bigint's file is text IR
        bitcode = benchmark_module(toolchain, f"bench://demo-v1/{name}").bitcode
        path = tmp_path / (f"{name}.ll" if name == "bigint" else f"{name}.bc")
        if name == "bigint":
            path.write_text(disassemble(toolchain, bitcode, name))
        else:
            path.write_bytes(bitcode)
        unsearched.append(Benchmark(f"bench://demo-v1/{name}", path, name, "train"))
    first_unit = (searched.units[0].uri,)
    with Evaluator(toolchain, searched.store, jobs=2) as evaluator:
        first = broadcast(
            evaluator, catalogue, plan_broadcast(directory, toolchain, catalogue, 2, first_unit), directory
        )
        roots = (*first_unit, *(b.uri for b in unsearched))
        plan = plan_broadcast(directory, toolchain, catalogue, 1, roots, matrix=first.directory, unsearched=unsearched)
        assert plan.lists == load_matrix(first.directory).lists and len(plan.lists) == 2  # not the pool of 1
        assert [b.uri for b in plan.extra] == ["bench://demo-v1/avl_tree", "bench://demo-v1/bigint"]
        grown = broadcast(evaluator, catalogue, plan, directory)
        assert (grown.directory, grown.labeled, grown.skipped, grown.failed) == (first.directory, 2, 1, 0)
        again = broadcast(evaluator, catalogue, plan, directory)  # bigint recognized once loaded, by its IR
        assert (again.labeled, again.skipped) == (0, 3)
    rows = sorted(p.uri for p in load_matrix(first.directory).programs)
    assert rows == sorted([*first_unit, unsearched[0].uri, unsearched[2].uri])
    (summary,) = summarize_directory(directory).matrices  # `labels info`: searched vs only broadcast
    assert (summary.programs, summary.searched, summary.functions) == (3, 1, 0)
    assert plan_broadcast(directory, toolchain, catalogue, 1, unsearched=unsearched, unsearched_limit=0).extra == ()
    assert plan_broadcast(directory, toolchain, catalogue, 1, first_unit, unsearched=unsearched).extra == ()  # --units
    rebuilt = replace(unsearched[1], path=unsearched[0].path)  # bit_tricks built again since its search, other IR
    as_text = tmp_path / "first.ll"  # a unit whose file changes on loading, given loaded and as an extra too
    as_text.write_text(disassemble(toolchain, searched.units[0].module.bitcode, "first"))
    twin = Benchmark(first_unit[0], as_text, searched.units[0].package, "train")
    with Evaluator(toolchain, searched.store, jobs=2) as evaluator:
        plan = plan_broadcast(
            directory, toolchain, catalogue, 1, matrix=first.directory, unsearched=[rebuilt, unsearched[1]]
        )
        assert plan.extra == (rebuilt,)
        broadcast(evaluator, catalogue, plan, directory)
        assert benchmark_key(rebuilt) in {(p.uri, p.ir_sha256) for p in load_matrix(first.directory).programs}
        (loaded,) = load_programs(toolchain, [twin])
        once = label_matrix(evaluator, catalogue, [loaded], plan.lists, tmp_path / "twin", dataset="d", extra=[twin])
        assert (once.labeled, once.skipped) == (1, 1)  # measured once, then recognized by its IR when loaded
    (summary,) = summarize_directory(directory).matrices
    assert summary.programs - summary.searched == 3  # avl_tree, bigint and the rebuilt unit: broadcast only
    with pytest.raises(InputError, match="not a matrix directory of"):
        plan_broadcast(directory, toolchain, catalogue, matrix=directory)
    elsewhere = tmp_path / "other" / first.directory.name
    shutil.copytree(first.directory, elsewhere)
    with pytest.raises(InputError, match="not a matrix directory of"):  # rows would grow this directory's matrix
        plan_broadcast(directory, toolchain, catalogue, matrix=elsewhere)


def _ratios_on(evaluator: Evaluator, catalogue: Catalogue, searched: Searched, passes: tuple[str, ...]) -> list[float]:
    oz = evaluator.baselines["Oz"]
    ratios = []
    for program in searched.units:
        built = evaluator.evaluate(program.module, tuned_pipeline(passes, catalogue), oz.options)
        reference = evaluator.evaluate(program.module, oz.pipeline, oz.options)
        assert reference.size_bytes
        ratios.append(built.size_bytes / reference.size_bytes if built.ok and built.size_bytes else float("inf"))
    return ratios


def _with_backup(ratios: list[float]) -> float:
    return float(np.exp(np.log(np.minimum(ratios, 1.0)).mean()))


def test_labels_cli_commits_each_shard_and_reports_cpu_hours(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    for argv in (["init", "-q"], ["config", "user.email", "t@example.org"], ["config", "user.name", "t"]):
        subprocess.run(["git", "-C", str(repository), *argv], check=True)
    subprocess.run(["git", "-C", str(repository), "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    cache = tmp_path / "cache"
    assert run_cli(cache, "datasets", "build", "demo", "--limit", "2", "--jobs", "1").returncode == 0
    labels = repository / "labels"
    search = ["labels", "search", "bench://demo-v1", "-o", str(labels), "--split", "train,validation,test"]
    # unminimized (test_searches_are_shards_that_resume_by_key checks minimized searches): 24 evaluations are what
    # both units need to find lists that beat -Oz, which the broadcast needs
    done = run_cli(
        cache, *search, "--programs", "2", "--budget", "24", "--no-minimize", "--shard-units", "1", "--commit"
    )
    assert done.returncode == 0 and "2 units searched" in done.stderr, done.stderr
    assert "search: 1/2, " in done.stderr and "search: 2/2, done" in done.stderr  # not a terminal
    log = subprocess.run(["git", "-C", str(repository), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.count(f"labels: {SEARCHES_DIR}/") == 2
    broadcast = run_cli(cache, "labels", "broadcast", str(labels), "--pool", "2", "--commit")
    assert broadcast.returncode == 0 and "coverage (geomean vs -Oz with backup): K=1:" in broadcast.stderr
    assert "(2 measured now, 0 already in it, 0 without -Oz," in broadcast.stderr, broadcast.stderr
    info = json.loads(run_cli(cache, "labels", "info", str(labels), "--json").stdout)
    assert info["searched_units"] == 2 and info["search_cpu_hours"] > 0
    (matrix,) = info["matrices"]
    assert matrix["programs"] == 2 and matrix["cpu_hours"] > 0
    log = subprocess.run(["git", "-C", str(repository), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.count("labels: matrix-") == 1
    grouping = ["labels", "groups", str(labels), "--split", "train,validation", "--per-package", "1", "--budget", "4"]
    grouping += ["--no-validate"]
    grouped = run_cli(cache, *grouping, "--size", "2", "--commit")
    assert grouped.returncode == 0 and "1 groups searched (0 of these settings already" in grouped.stderr, (
        grouped.stderr
    )
    again = run_cli(cache, *grouping, "--size", "2")  # the group counts toward --groups; its units join no other
    assert again.returncode == 0 and "0 groups searched (1 of these settings already" in again.stderr, again.stderr
    log = subprocess.run(["git", "-C", str(repository), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.count(f"labels: {GROUPS_DIR}/") == 1
    selftest = str(Path(__file__).parents[1] / "data" / "selftest")
    validated = run_cli(cache, "labels", "validate", str(labels), "--validate", selftest, "--commit")
    pool = len(pool_lists(labels))  # the matrix's lists and the group's
    assert validated.returncode == 0 and f"{pool} pool lists ({pool} validated now)" in validated.stderr, (
        validated.stderr
    )
    assert f"validate: {pool}/{pool}, done" in validated.stderr
    log = subprocess.run(["git", "-C", str(repository), "log", "--format=%s"], capture_output=True, text=True).stdout
    assert log.count(f"labels: {VERDICTS_DIR}/") == 1
    again = run_cli(cache, "labels", "validate", str(labels), "--validate", selftest)
    assert again.returncode == 0 and f"{pool} pool lists (0 validated now)" in again.stderr, again.stderr
    assert (
        f"{VERDICTS_DIR}: {pool} of the pools' {pool} lists validated"
        in run_cli(cache, "labels", "info", str(labels)).stdout
    )
    info = json.loads(run_cli(cache, "labels", "info", str(labels), "--json").stdout)
    assert info["groups"]["groups"] == 1 and info["groups"]["cpu_hours"] > 0
    model = tmp_path / "model"
    trained = run_cli(cache, "train", str(labels), "--no-functions", "--no-validate", "-o", str(model))
    assert trained.returncode == 0, trained.stderr
    assert json.loads((model / "config.json").read_text())["trained_on"]["units"] == "modules"
    assert "groups: 1 groups searched" in run_cli(cache, "labels", "info", str(labels)).stdout
    too_large = run_cli(cache, *grouping, "--size", "3")
    assert too_large.returncode == 2 and "no group of 3 train,validation module units" in too_large.stderr
    assert too_large.stderr.count("\n") == 1
    shard = next((labels / SEARCHES_DIR).glob("*.json.gz"))
    bad = labels / SEARCHES_DIR / "cut-short.json.gz"  # a shard a kill cut short costs its own units only
    bad.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    (labels / SEARCHES_DIR / "not-gzip.json.gz").write_bytes(b"\x1f\x8b not quite gzip")
    queued = ["bench://demo-v1", "--split", "train,validation,test", "--functions", "1", "--json"]
    info = run_cli(cache, "labels", "info", str(labels), *queued)
    assert info.returncode == 0 and f"{bad}: skipped" in info.stderr and "not-gzip.json.gz: skipped" in info.stderr
    summary = json.loads(info.stdout)
    assert summary["searched_units"] == 2 and summary["queued_units"] == 2  # one function of each unit to do
    assert sorted((p["modules"], p["functions"], p["queued"]) for p in summary["packages_detail"]) == [(1, 0, 1)] * 2
    refused = run_cli(cache, "labels", "search", "bench://demo-v1", "-o", str(tmp_path / "x"), "--commit")
    assert refused.returncode == 2 and "not inside a git repository" in refused.stderr
    missing = run_cli(cache, "labels", "info", str(tmp_path / "absent"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1


@pytest.mark.slow
def test_the_ray_path_makes_the_same_labels(toolchain: Toolchain, catalogue: Catalogue, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    units = programs(toolchain, ("bit_tricks",))
    settings = SearchSettings("local", budget=6, seed=0, minimize=False)
    for name, backend in (("local", None), ("ray", "ray")):
        with Evaluator(toolchain, EvaluationStore(tmp_path / f"{name}.db"), backend=backend, jobs=2) as evaluator:
            search_units(evaluator, catalogue, units, tmp_path / name, dataset="demo", settings=settings)
    (local,) = load_searches(tmp_path / "local")
    (remote,) = load_searches(tmp_path / "ray")
    assert (remote.evaluated, remote.best, remote.best_size) == (local.evaluated, local.best, local.best_size)
