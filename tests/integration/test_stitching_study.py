"""The stitching study end to end on real LLVM labels of a few demo programs (tiny experts, few epochs)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("ot")

from stitchopt.apply.choose import choose  # noqa: E402
from stitchopt.cache.store import EvaluationStore  # noqa: E402
from stitchopt.core import Objective  # noqa: E402
from stitchopt.datasets.benchmarks import Benchmark  # noqa: E402
from stitchopt.datasets.demo import demo_programs  # noqa: E402
from stitchopt.errors import InputError  # noqa: E402
from stitchopt.evaluation.evaluator import Evaluator  # noqa: E402
from stitchopt.features.base import FeatureCache  # noqa: E402
from stitchopt.features.by_name import default_representations  # noqa: E402
from stitchopt.labels.pool import build_labels  # noqa: E402
from stitchopt.learning.kinds import load_model  # noqa: E402
from stitchopt.learning.train import labeled_features  # noqa: E402
from stitchopt.models.flag_model import FlagModel  # noqa: E402
from stitchopt.models.shipped import DEFAULT_MODEL_DIR  # noqa: E402
from stitchopt.passes.catalogue import Catalogue  # noqa: E402
from stitchopt.passes.pipeline import PassNames  # noqa: E402
from stitchopt.reports.document import to_html  # noqa: E402
from stitchopt.reports.stitching import (  # noqa: E402
    comparisons,
    curve_rows,
    expert_rows,
    load_report,
    pair_rows,
    write_json,
)
from stitchopt.reports.stitching_html import stitching_report  # noqa: E402
from stitchopt.stitching.experts import TrainConfig  # noqa: E402
from stitchopt.stitching.model import StitchedModel, train_stitched  # noqa: E402
from stitchopt.stitching.results import INITIALIZATIONS  # noqa: E402
from stitchopt.stitching.study import run_study  # noqa: E402
from stitchopt.studies.objective_grid import objective_grid  # noqa: E402
from stitchopt.toolchain.discovery import Toolchain  # noqa: E402
from stitchopt.toolchain.frontend import load_module  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]
SPLITS = ("train", "train", "train", "validation", "test", "test")


def _pool(catalogue: Catalogue) -> tuple[PassNames, ...]:
    """The shipped model's first three lists (searched by the label factory) as the pool: labels measured with
    real LLVM, without a search here (build_labels' search and minimization: test_flag_model's labels)."""
    return FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue).labelled_lists()[:3]


def test_study_trains_experts_stitches_every_pair_and_grows_ensembles(
    toolchain: Toolchain, catalogue: Catalogue, tmp_path: Path
) -> None:
    paths = sorted(demo_programs().values())[: len(SPLITS)]
    benchmarks = [Benchmark(str(p), p, p.stem, split) for p, split in zip(paths, SPLITS, strict=True)]
    with EvaluationStore(tmp_path / "cache.sqlite") as store:
        with Evaluator(toolchain, store, jobs=2) as evaluator:
            labels = build_labels(
                evaluator,
                catalogue,
                benchmarks,
                dataset="tiny",
                pool_programs=0,
                extra_lists=_pool(catalogue),
                broad=False,
            )
        report = run_study(
            toolchain,
            labels.subset(lambda p: p.split != "test"),
            labels.subset(lambda p: p.split == "test"),
            labels.lists[:3],
            TrainConfig(epochs=3, batch=2),
            hidden=8,
            cache=FeatureCache(store),
        )
        trained, grown = train_stitched(
            toolchain,
            catalogue,
            labels.subset(lambda p: p.split != "test"),
            labels.lists[:3],
            TrainConfig(epochs=2, batch=2),
            hidden=8,
            cache=FeatureCache(store),
        )
        known = labels.subset(lambda p: p.split != "test")
        counts = labeled_features(toolchain, known, default_representations(), FeatureCache(store))
        grid = objective_grid(
            counts.labels,
            counts.features,
            default_representations(),
            llvm_version="19",
            objectives=[Objective(), Objective.parse("size=1,compile-time=1")],
            k=3,
        )
        with pytest.raises(InputError, match="validation split"):
            run_study(
                toolchain,
                labels.subset(lambda p: p.split == "train"),
                labels,
                labels.lists[:3],
                TrainConfig(epochs=1),
                cache=FeatureCache(store),
            )
    experts = len(report.experts) - 1  # the closed-form ranker is the last row
    assert report.programs == {"train": 3, "validation": 1, "held out": 2}
    assert experts == 4 and report.experts[-1].name.startswith("ranker")
    assert len(report.pairs) == experts * (experts - 1) * len(INITIALIZATIONS)
    assert all(math.isfinite(p.penalty) and 0 <= p.agreement <= 1 for p in report.pairs)
    assert [len(c.members) for c in report.curve] == [1, 2, 3, 4] and len(set(report.curve[-1].members)) == 4
    assert all(r <= 1 for c in report.curve for r in (*c.held_out, *c.validation))  # the -Oz backup
    assert all(o <= r for c in report.curve for o, r in zip(report.oracle, c.held_out, strict=True))
    assert len(pair_rows(report).rows) == len(report.pairs) and curve_rows(report).rows
    excluded = report.held_out_packages[0]
    assert expert_rows(report, excluded).headers[-4] == f"held out without {excluded}"
    assert len(comparisons(report)) == 2
    assert len(report.alignments) == experts * (experts - 1) // 2
    assert all(abs(sum(map(sum, a.plan)) - 1.0) < 1e-6 for a in report.alignments)  # blocks keep the mass
    write_json(report, tmp_path / "study.json")
    assert load_report(tmp_path / "study.json") == report
    page = to_html(stitching_report(tmp_path / "study.json", report, excluded), "now")
    assert page.count("<svg") == len(INITIALIZATIONS) + 1 + len(report.alignments)
    assert f"{report.pairs[0].penalty:+.4f}" in page and "<script" not in page and "http" not in page
    assert [len(g.members) for g in grown] == [1, 2, 3, 4] and trained.members in [g.members for g in grown]
    trained.save_pretrained(tmp_path / "stitched")
    loaded = StitchedModel.from_pretrained(tmp_path / "stitched", catalogue)
    module = load_module(toolchain, paths[-1])
    first, again = trained.rank(toolchain, module), loaded.rank(toolchain, module)
    assert [e.passes for e in first] == [e.passes for e in again] and len(first) == 4  # 3 lists and -Oz
    assert [e.predicted_ratio for e in again] == pytest.approx([e.predicted_ratio for e in first], rel=1e-5)
    assert [r.objective for r in grid] == ["size=1", "size=1,compile-time=1"] and any(r.pareto for r in grid)
    assert -1 < grid[0].size_change <= 0  # for size alone, the -Oz backup never makes a choice larger
    with pytest.raises(InputError, match="not a stitched model"):
        StitchedModel.from_pretrained(tmp_path, catalogue)
    damaged = tmp_path / "damaged"  # a configuration the weights do not fit, then one without a field
    shutil.copytree(tmp_path / "stitched", damaged)
    config = json.loads((damaged / "config.json").read_text())
    (damaged / "config.json").write_text(json.dumps({**config, "hidden": config["hidden"] + 1}))
    with pytest.raises(InputError, match="weights do not fit config.json"):
        StitchedModel.from_pretrained(damaged, catalogue)
    (damaged / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "members"}))
    with pytest.raises(InputError, match="field members is missing"):
        StitchedModel.from_pretrained(damaged, catalogue)
    chosen = load_model(tmp_path / "stitched", catalogue)  # the modes take a stitched model like the shipped one
    assert isinstance(chosen, StitchedModel) and chosen.identity == trained.identity
    with EvaluationStore(tmp_path / "modes.sqlite") as store, Evaluator(toolchain, store, jobs=2) as evaluator:
        for mode in ("static", "jit"):
            choice = choose(evaluator, catalogue, chosen, module, mode=mode, k=2)
            assert choice.size_bytes <= choice.oz_size_bytes
