"""Learned flag tuning end to end on a tiny corpus: labels, training, save/load, predict, optimize, evaluate."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stitchopt.apply.choose import choose
from stitchopt.cache.store import EvaluationStore
from stitchopt.cli.main import exit_status
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import Benchmark, program_path
from stitchopt.datasets.demo import demo_programs
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.labels.labelset import LabelSet
from stitchopt.labels.pool import broad_lists, build_labels
from stitchopt.labels.probed import probed_values
from stitchopt.learning.heldout import FAST, evaluate_model
from stitchopt.learning.kinds import load_model
from stitchopt.learning.train import fast_policy_for_model, train_from_labels
from stitchopt.learning.warm import warm_caches
from stitchopt.models.fast_policy import FastPolicy
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NeighbourChooser
from stitchopt.models.plugin_file import plugin_model
from stitchopt.models.prediction_cache import KIND as PREDICTION
from stitchopt.models.prediction_cache import cached_rank
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import check_pipeline, tuned_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import load_module, write_object
from stitchopt.tune.acceptance import ListValidation, Verified, list_validation

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]
DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def trained(
    toolchain: Toolchain, catalogue: Catalogue, tmp_path_factory: pytest.TempPathFactory
) -> tuple[LabelSet, FlagModel, Path]:
    work = tmp_path_factory.mktemp("flag-model")
    paths = sorted(demo_programs().values())[:5]
    benchmarks = [Benchmark(str(p), p, p.stem, "train") for p in paths]
    with EvaluationStore(work / "cache.sqlite") as store, Evaluator(toolchain, store, jobs=2) as evaluator:
        labels = build_labels(
            evaluator, catalogue, benchmarks, dataset="tiny", pool_programs=3, pool_budget=24, seed=0, broad=False
        )
        labels.save(work / "labels.json.gz")
        model, report, skipped = train_from_labels(
            toolchain, catalogue, LabelSet.load(work / "labels.json.gz"), k=3, store=store
        )
    assert not skipped and len(report.coreset.curve) == len(model.lists) <= 3
    model.save_pretrained(work / "model")
    return labels, model, work


def test_labels_measure_every_list_on_every_program(trained: tuple[LabelSet, FlagModel, Path]) -> None:
    labels, _, _ = trained
    assert len(labels.programs) == 5 and labels.lists
    assert all(len(p.sizes) == len(labels.lists) for p in labels.programs)
    assert all(p.baseline_sizes["Oz"] > 0 for p in labels.programs) and labels.cpu_seconds > 0
    assert all(len(p.seconds) == len(labels.lists) and p.baseline_seconds["Oz"] > 0 for p in labels.programs)
    ratios = labels.ratios()
    assert np.isfinite(ratios).any() and (ratios[np.isfinite(ratios)] > 0).all()


def test_saved_model_predicts_the_same_ranking(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path]
) -> None:
    _, model, work = trained
    loaded = FlagModel.from_pretrained(work / "model", catalogue)
    module = load_module(toolchain, sorted(demo_programs().values())[0])
    original, again = model.rank(toolchain, module), loaded.rank(toolchain, module)
    assert [e.passes for e in original] == [e.passes for e in again]
    assert [e.predicted_ratio for e in again] == pytest.approx([e.predicted_ratio for e in original], rel=1e-4)
    assert any(e.passes is None for e in again)  # -Oz is always a candidate
    rest = [e.predicted_ratio for e in again[1:]]
    assert rest == sorted(rest)  # after the static choice, jit's order: the program's own predictions


def test_rankings_are_cached_per_model_and_ir_and_survive_a_bad_row(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path], tmp_path: Path
) -> None:
    _, model, work = trained
    loaded = FlagModel.from_pretrained(work / "model", catalogue)
    assert loaded.identity == model.identity  # saved and loaded weights predict the same
    module = load_module(toolchain, sorted(demo_programs().values())[1])
    with EvaluationStore(tmp_path / "cache.sqlite") as store:
        first = cached_rank(model, toolchain, module, store)
        key = (model.identity, toolchain.identity, module.sha256, "c")
        assert store.get_artifact(PREDICTION, *key) is not None
        assert cached_rank(loaded, toolchain, module, store) == first
        store.put_artifact(PREDICTION, b"not json", *key)
        assert cached_rank(model, toolchain, module, store) == first
    loaded.ranker.shrink = 1.0 - loaded.ranker.shrink
    del loaded.identity  # the cached property: a changed model is another model
    assert loaded.identity != model.identity


def test_a_ranking_is_the_language_the_unit_is_compiled_as_and_cached_per_language(
    toolchain: Toolchain, catalogue: Catalogue, tmp_path: Path
) -> None:
    """The build wrapper knows `clang -x c++ foo.c` is C++ where the IR's file name says C: the shipped model's
    chooser per language answers it as C++, and the cache does not hand it the C answer of the same IR."""
    shipped = load_model(DEFAULT_MODEL_DIR, catalogue)
    as_named = load_module(toolchain, sorted(demo_programs().values())[0])
    as_cxx = replace(as_named, language="c++")
    with EvaluationStore(tmp_path / "cache.sqlite") as store:
        named, cxx = cached_rank(shipped, toolchain, as_named, store), cached_rank(shipped, toolchain, as_cxx, store)
    assert named == shipped.rank(toolchain, replace(as_named, language="c"))
    assert cxx == shipped.rank(toolchain, as_cxx) and cxx[0] != named[0]


def test_optimize_is_never_larger_than_oz_and_writes_that_object(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path], tmp_path: Path
) -> None:
    _, model, _ = trained
    module = load_module(toolchain, sorted(demo_programs().values())[1])
    with Evaluator(toolchain, EvaluationStore(tmp_path / "c.sqlite"), jobs=2) as evaluator:
        for mode in ("static", "jit"):
            choice = choose(evaluator, catalogue, model, module, mode=mode, k=3)
            assert choice.size_bytes <= choice.oz_size_bytes and choice.compilations >= 1
        write_object(toolchain, module, choice.pipeline, evaluator.baselines["Oz"].options, tmp_path / "out.o")
    assert object_sizes((tmp_path / "out.o").read_bytes()).size_bytes == choice.size_bytes


def test_warmed_caches_leave_static_and_jit_builds_nothing_to_compute(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path], tmp_path: Path
) -> None:
    _, model, _ = trained
    modules = [load_module(toolchain, p) for p in sorted(demo_programs().values())[7:9]]
    with EvaluationStore(tmp_path / "c.sqlite") as store:
        with Evaluator(toolchain, store, jobs=2) as evaluator:
            report = warm_caches(evaluator, catalogue, model, modules, k=2, common=1)
        assert report.units == 2 and len(report.common_lists) == 1
        assert report.compiled == report.requests >= 2 * 2  # -Oz and at least one own list per unit
        for module in modules:
            assert store.get_artifact(PREDICTION, model.identity, toolchain.identity, module.sha256, "c") is not None
        with Evaluator(toolchain, store, jobs=2) as evaluator:
            for module in modules:
                for mode in ("static", "jit"):
                    choose(evaluator, catalogue, model, module, mode=mode, k=2)
            assert evaluator.counters.evaluated == 0 and evaluator.counters.cache_hits > 0
            again = warm_caches(evaluator, catalogue, model, modules, k=2, common=1)
        assert again.compiled == 0 and again.common_lists == report.common_lists


def test_evaluation_reads_every_method_off_the_same_measurements(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path], tmp_path: Path
) -> None:
    _, model, _ = trained
    paths = sorted(demo_programs().values())[5:7]
    benchmarks = [Benchmark(str(p), p, p.stem, "test") for p in paths]
    with Evaluator(toolchain, EvaluationStore(tmp_path / "c.sqlite"), jobs=2) as evaluator:
        evaluation = evaluate_model(evaluator, catalogue, model, benchmarks, ks=(2,))
    methods = {m.method: m for m in evaluation.methods}
    assert {"static", "static + backup", "jit k=2", "-Os", "-O3"} <= set(methods)
    assert methods["static + backup"].geomean_change <= 0 and methods["jit k=2"].regressed == 0
    assert methods["jit k=2"].geomean_change <= methods["static + backup"].geomean_change
    assert len(evaluation.programs) == 2 and evaluation.inference_ms_median > 0
    for outcome in evaluation.programs:  # the plugin's one pipeline: static's list or -Oz
        assert outcome.ratios[FAST] in (1.0, outcome.ratios["static"]) and outcome.compilations[FAST] == 1


def test_fast_builds_statics_list_only_past_the_margin(
    toolchain: Toolchain, trained: tuple[LabelSet, FlagModel, Path]
) -> None:
    """`fast` is what the plugin builds with one pipeline: evaluate and the learning curve read it from here."""
    _, model, _ = trained
    modules = [load_module(toolchain, p) for p in sorted(demo_programs().values())[:6]]
    raw = np.concatenate([model.features(toolchain, m) for m in modules])
    ranked = model.rank_features(raw)
    statics = [order[0].passes for order in ranked]
    never = replace(model, fast=FastPolicy(math.inf, 0.0, 0.0, 0.0))
    always = replace(model, fast=FastPolicy(-math.inf, 0.0, 1.0, 0.0))
    assert never.fast_choices(raw, ranked) == [None] * len(modules)
    assert always.fast_choices(raw, ranked) == statics and any(statics)
    with pytest.raises(ValueError, match="no fast margin"):  # the plugin builds static + backup for such a model
        replace(model, fast=None).fast_choices(raw, ranked)


def test_the_fast_margin_of_a_chooser_tuned_per_language_answers_each_language_with_its_own_setting(
    toolchain: Toolchain, trained: tuple[LabelSet, FlagModel, Path]
) -> None:
    """Set again from labels (`stitchopt plugin export --labels`), a tuned chooser's margin comes from the
    held-out answers of each language's own setting (`test_models.py` checks which rows each answers): the
    labels' units are all C, so the C setting's; a setting training does not compare is one clear line."""
    labels, model, _ = trained
    rng = np.random.default_rng(3)
    x, ratios = rng.normal(size=(4, len(model.standardizer.mean))), rng.uniform(0.9, 1.1, size=(4, len(model.lists)))
    fitted = NeighbourChooser(10, 0.5).fit(x, ratios, ["c", "c", "c++", "c++"])
    tuned = replace(model, chooser=fitted.tuned_per_language([(5, 1.0), (10, 0.5)]))
    as_c = replace(model, chooser=NeighbourChooser(5, 1.0).fit(x, ratios, ["c", "c", "c++", "c++"]))
    assert fast_policy_for_model(tuned, toolchain, labels)[0] == fast_policy_for_model(as_c, toolchain, labels)[0]
    untried = replace(model, chooser=fitted.tuned_per_language([(7, 1.0), (10, 0.5)]))  # no such setting
    with pytest.raises(InputError, match=r"tuned per language \(c k=7 shrink=1, c\+\+ k=10"):
        fast_policy_for_model(untried, toolchain, labels)


def test_finishing_passes_end_every_list_the_model_builds_and_survive_saving(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path], tmp_path: Path
) -> None:
    labels, model, _ = trained
    finished = model.with_finish(("mergefunc",))
    assert finished.labelled_lists() == model.lists and finished.identity != model.identity
    finished.save_pretrained(tmp_path / "model")
    loaded = FlagModel.from_pretrained(tmp_path / "model", catalogue)
    assert loaded.finish == ("mergefunc",) and loaded.lists == tuple((*p, "mergefunc") for p in model.lists)
    module = load_module(toolchain, sorted(demo_programs().values())[0])
    assert [e.passes for e in loaded.rank(toolchain, module)] == [
        None if e.passes is None else (*e.passes, "mergefunc") for e in model.rank(toolchain, module)
    ]
    assert all(text.endswith(",mergefunc") for text in plugin_model(loaded, catalogue).document["lists"])
    policy, _ = fast_policy_for_model(loaded, toolchain, labels)  # found in the labels without its finish
    assert policy == fast_policy_for_model(model, toolchain, labels)[0]
    without = replace(catalogue, passes=tuple(p for p in catalogue.passes if p.name != "mergefunc"))
    with pytest.raises(InputError, match="every list ends with mergefunc, which LLVM"):
        FlagModel.from_pretrained(tmp_path / "model", without)  # an LLVM without it: no list would be left
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    (tmp_path / "model" / "config.json").write_text(json.dumps({**config, "finish": ["globaldce"]}))
    with pytest.raises(InputError, match="field finish is not the end of every list"):
        FlagModel.from_pretrained(tmp_path / "model", catalogue)


def test_a_model_keeping_some_lists_ranks_only_them(
    toolchain: Toolchain, trained: tuple[LabelSet, FlagModel, Path]
) -> None:
    """What drops lists a wider validation turned away from a trained model (the shipped one's 8 of 50)."""
    _, model, _ = trained
    module = load_module(toolchain, sorted(demo_programs().values())[0])
    dropped = model.lists[0]
    kept = model.keeping(range(1, len(model.lists)))
    assert kept.lists == model.lists[1:] and kept.identity != model.identity
    ranked = [e.passes for e in kept.rank(toolchain, module)]
    assert dropped not in ranked and set(ranked) == {None, *kept.lists}
    raw = model.features(toolchain, module)
    assert kept.predict_sizes(raw).shape[1] == model.predict_sizes(raw).shape[1] - 1


@dataclass(frozen=True)
class _RecordingValidation(ListValidation):
    """The real validation, remembering which pipelines it was asked about."""

    checked: list[str] = field(default_factory=list)

    def check(self, pipeline: str) -> Verified:
        self.checked.append(pipeline)
        return super().check(pipeline)


def test_training_validates_each_list_with_its_finish(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path]
) -> None:
    _, _, work = trained
    with EvaluationStore(work / "cache.sqlite") as store, Evaluator(toolchain, store, jobs=2) as evaluator:
        suite = list_validation(evaluator, [str(DATA / "selftest")])
        validation = _RecordingValidation(suite.validator, suite.suites)
        model, _, _ = train_from_labels(
            toolchain,
            catalogue,
            LabelSet.load(work / "labels.json.gz"),
            k=2,
            store=store,
            validation=validation,
            finish=("mergefunc",),
        )
    assert model.finish == ("mergefunc",) and all(passes[-1] == "mergefunc" for passes in model.lists)
    assert validation.checked and all(pipeline.endswith(",mergefunc") for pipeline in validation.checked)
    assert {tuned_pipeline(passes, catalogue) for passes in model.lists} <= set(validation.checked)


def test_wrapper_builds_objects_with_the_model_and_keeps_the_compilers_on_failure(
    toolchain: Toolchain, trained: tuple[LabelSet, FlagModel, Path], tmp_path: Path
) -> None:
    _, _, work = trained
    source = sorted(demo_programs().values())[2]
    wrapper = Path(sys.executable).parent / "stitchopt-cc"
    base = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_")}

    def compile_with(model: str, output: str) -> subprocess.CompletedProcess[str]:
        argv = [str(wrapper), "-O2", "-c", str(source), "-o", output]
        return subprocess.run(
            argv, cwd=tmp_path, env={**base, "STITCHOPT_MODEL": model}, capture_output=True, text=True, timeout=300
        )

    plain = subprocess.run([toolchain.tool("clang"), "-O2", "-c", str(source), "-o", "plain.o"], cwd=tmp_path)
    assert plain.returncode == 0
    tuned = compile_with(str(work / "model"), "tuned.o")
    assert tuned.returncode == 0 and "as asked" not in tuned.stderr, tuned.stderr
    oz = load_module(toolchain, source)
    with Evaluator(toolchain, None, jobs=1) as evaluator:
        oz_size = evaluator.evaluate(oz, evaluator.baselines["Oz"].pipeline, evaluator.baselines["Oz"].options)
    assert object_sizes((tmp_path / "tuned.o").read_bytes()).size_bytes <= (oz_size.size_bytes or 0)
    broken = compile_with(str(tmp_path / "no-such-model"), "kept.o")
    assert broken.returncode == 0 and "not a model directory" in broken.stderr and "building as asked" in broken.stderr
    assert (tmp_path / "kept.o").read_bytes() == (tmp_path / "plain.o").read_bytes()


def test_broad_lists_wrap_searched_lists_around_oz_and_run(toolchain: Toolchain, catalogue: Catalogue) -> None:
    searched = (("sroa", "instcombine"),)
    lists = broad_lists(catalogue, searched)
    assert ("default<Oz>", "default<Oz>") in lists and ("default<Oz>", "mergefunc") in lists
    assert ("default<Oz>", "sroa", "instcombine") in lists and ("sroa", "instcombine", "default<Oz>") in lists
    assert len(set(lists)) == len(lists)
    for passes in lists[:3] + lists[-2:]:
        check_pipeline(toolchain, tuned_pipeline(passes, catalogue))  # raises if opt cannot parse it


def test_training_for_security_measures_every_labeled_list_and_records_the_objective(
    toolchain: Toolchain, catalogue: Catalogue, trained: tuple[LabelSet, FlagModel, Path]
) -> None:
    labels, _, work = trained
    objective = Objective.parse("size=0.3,security=0.7")
    with EvaluationStore(work / "cache.sqlite") as store:
        values = probed_values(toolchain, catalogue, labels, objective, store, jobs=2)["security"]
        model, _, _ = train_from_labels(toolchain, catalogue, labels, k=3, store=store, objective=objective, jobs=2)
    assert values.shape == (len(labels.programs), len(labels.lists) + 1)
    assert np.isfinite(values).all() and (values >= 1.0).all()  # 1 + items lost: never below 1
    assert model.trained_on["objective"] == "size=0.3,security=0.7"
    scored = labels.objective_values(objective, {"security": values})
    assert np.allclose(
        scored[np.isfinite(scored)],
        (0.3 * labels.ratios() + 0.7 * values[:, :-1] / values[:, -1:])[np.isfinite(scored)],
    )


def _cli_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """A command's exit status and its --json document (the only thing on stdout)."""
    status = exit_status([*args, "--json"])
    return status, json.loads(capsys.readouterr().out)


def test_optimize_builds_an_empty_file_at_oz_in_every_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """clang builds an empty C file (an object of 0 B); optimize refused it: `-Oz itself fails (ok)`."""
    monkeypatch.setenv("STITCHOPT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "empty.c").write_text("")
    for mode in ("static", "jit", "hybrid"):
        output = tmp_path / f"{mode}.o"
        status, answer = _cli_json(["optimize", str(tmp_path / "empty.c"), "-o", str(output), "--mode", mode], capsys)
        assert status == 0 and answer["mode"] == mode and answer["oz_backup"], answer
        assert answer["size_bytes"] == answer["oz_size_bytes"] == answer["size_change_vs_oz_percent"] == 0
        assert output.read_bytes()[:4] == b"\x7fELF" and object_sizes(output.read_bytes()).size_bytes == 0


def test_predict_shows_the_measured_oz_size_and_what_the_order_is(
    toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The -Oz row showed the size model's estimate (~198 B where -Oz builds 390 B) and #1 predicting less than
    #2 went unexplained: now -Oz is measured, each size is the list's predicted ratio times it, and the table
    says why the order is not that of the predictions where it is not."""
    monkeypatch.setenv("STITCHOPT_CACHE_DIR", str(tmp_path / "cache"))
    program = DATA / "loop_sum.c"
    subprocess.run([toolchain.tool("clang"), "-Oz", "-c", str(program), "-o", str(tmp_path / "oz.o")], check=True)
    oz_size = object_sizes((tmp_path / "oz.o").read_bytes()).size_bytes
    status, ranking = _cli_json(["predict", str(program), "--top", "100"], capsys)
    assert status == 0 and ranking["oz_size_bytes"] == oz_size and ranking["language"] == "c"
    for row in ranking["ranked"]:
        assert row["predicted_size_bytes"] == pytest.approx((1 + row["predicted_change_vs_oz"]) * oz_size)
    assert next(row for row in ranking["ranked"] if row["passes"] == "-Oz")["predicted_size_bytes"] == oz_size
    assert exit_status(["predict", str(program), "--top", "100"]) == 0
    table = capsys.readouterr().out
    assert f"(-Oz measured: {oz_size:,} B), a C source:" in table and f"  {oz_size:,} B  -Oz\n" in table
    changes = [row["predicted_change_vs_oz"] for row in ranking["ranked"]]
    assert ("#1 is the model's choice" in table) == (changes[0] > min(changes))


def test_optimize_json_replays_a_list_with_opt_and_the_oz_backup_with_clang_oz(
    toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One document on stdout; the -Oz backup's replay was opt with the expanded -Oz pipeline (4,000 characters):
    now `clang -Oz`. Each replay, run on the unoptimized IR, builds an object of the size the answer says."""
    monkeypatch.setenv("STITCHOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    program = str(program_path("bench://demo-v1/ring_buffer", toolchain))  # the shipped model's static: -Oz
    assert exit_status(["ir", program, "-o", "in.bc"]) == 0
    for mode, backup in (("static", True), ("jit", False)):
        status, answer = _cli_json(["optimize", program, "-o", f"{mode}.o", "--mode", mode], capsys)
        assert status == 0 and answer["oz_backup"] is backup is (answer["passes"] == "-Oz"), answer
        if backup:
            assert answer["replay"] == f"{toolchain.tool('clang')} -Oz -c in.bc -o out.o"
        else:
            assert answer["replay"].startswith(toolchain.tool("opt"))
            assert f"-passes={answer['passes']}" in answer["replay"]
        subprocess.run(answer["replay"], shell=True, check=True)
        assert object_sizes(Path("out.o").read_bytes()).size_bytes == answer["size_bytes"]
        assert object_sizes(Path(f"{mode}.o").read_bytes()).size_bytes == answer["size_bytes"]
