"""The vulnerability detector and its stitching with optimization experts: an easy synthetic task, then the
study end to end on a few real Juliet cases (tiny experts, few epochs), its report and its model directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("ot")

from stitchopt.cache.store import EvaluationStore  # noqa: E402
from stitchopt.datasets.demo import demo_programs  # noqa: E402
from stitchopt.datasets.juliet import (  # noqa: E402
    SPLITS,
    JulietFunction,
    extract_support,
    family_splits,
    juliet_functions,
    juliet_path,
    read_cases,
    select_cases,
)
from stitchopt.errors import InputError, StitchoptError  # noqa: E402
from stitchopt.features.base import Standardizer  # noqa: E402
from stitchopt.features.by_name import default_representations  # noqa: E402
from stitchopt.passes.catalogue import Catalogue  # noqa: E402
from stitchopt.reports.build import build_report  # noqa: E402
from stitchopt.reports.document import to_html, to_md  # noqa: E402
from stitchopt.stitching.ensemble import StitchedEnsemble, stitch_ensemble  # noqa: E402
from stitchopt.stitching.experts import TrainConfig, count_expert, fit  # noqa: E402
from stitchopt.stitching.layers import StitchingLayer  # noqa: E402
from stitchopt.stitching.model import StitchedModel  # noqa: E402
from stitchopt.toolchain.discovery import Toolchain  # noqa: E402
from stitchopt.vulnerability.calibration import calibrate, held_out_rate, threshold_for  # noqa: E402
from stitchopt.vulnerability.detector import (  # noqa: E402
    best_threshold,
    detector_expert,
    detector_loss,
    scores,
)
from stitchopt.vulnerability.model import DetectorModel  # noqa: E402
from stitchopt.vulnerability.results import DetectionReport, DetectionRow, tally  # noqa: E402
from stitchopt.vulnerability.risks import program_risks  # noqa: E402
from stitchopt.vulnerability.shipped import DEFAULT_DETECTOR_DIR  # noqa: E402
from stitchopt.vulnerability.study import DetectionConfig, DetectionOutcome, detection_study  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
FIXTURES = Path(__file__).parent.parent / "data" / "security"
REMOVING = ("lower-constant-intrinsics", "instcombine<no-verify-fixpoint>", "inline", "dse")  # see test_security_guard
CWES = ("CWE415", "CWE476")
PER_SPLIT = {"train": 2, "validation": 1, "test": 1}  # cases of each CWE
CONFIG = DetectionConfig(TrainConfig(epochs=4, batch=8), TrainConfig(epochs=3, batch=8), hidden=16, jobs=2)


@pytest.fixture(autouse=True, scope="module")
def one_thread() -> Iterator[None]:
    """Torch on one thread: repeatable sums, and no spinning threads on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in module.state_dict().items()}


def _same(before: dict[str, torch.Tensor], module: torch.nn.Module) -> bool:
    return all(torch.equal(before[k], v) for k, v in module.state_dict().items())


def _easy_task(rows: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Bad when feature 0 is positive; CWE 1 when feature 1 is positive, else CWE 0."""
    x = torch.randn(rows, 6, generator=torch.Generator().manual_seed(seed))
    return x, torch.stack([(x[:, 0] > 0).float(), (x[:, 1] > 0).float()], dim=1)


def test_detector_beats_chance_on_an_easy_task_and_stitching_trains_only_the_layers() -> None:
    x, y = _easy_task(256, 0)
    x_test, y_test = _easy_task(128, 1)
    detector = detector_expert("detector", x, classes=2, hidden=16)
    fit(detector, x, y, TrainConfig(epochs=40, batch=32), loss=detector_loss)
    train_risk, _ = scores(detector, x)
    threshold, _ = best_threshold(train_risk, y[:, 0].numpy() > 0.5)
    risk, cwe = scores(detector, x_test)
    bad = y_test[:, 0].numpy() > 0.5
    assert ((risk >= threshold) == bad).mean() > 0.9
    assert (cwe[bad] == y_test[bad, 1].numpy()).mean() > 0.9

    other = count_expert("optimization", 6, lists=5, hidden=8, seed=1)
    frozen = [_state(detector), _state(other)]
    ensemble, result = stitch_ensemble(
        [detector, other], [x, x], y, TrainConfig(epochs=3, batch=32), init="ot", loss=detector_loss
    )
    assert result.epochs == 3
    assert _same(frozen[0], detector) and _same(frozen[1], other)
    layer = ensemble.layers[0].linear.weight
    assert layer.shape == (16, 8) and all(p.requires_grad for p in ensemble.layers.parameters())


def test_an_operating_point_calls_at_most_as_many_good_functions_bad_as_allowed() -> None:
    good = np.array([0.9, 0.7, 0.7, 0.2])
    for allowed, flagged in ((0, 0), (1, 1), (2, 1), (3, 3), (4, 4)):  # a tie at 0.7 cannot be split
        assert int((good >= threshold_for(good, allowed)).sum()) == flagged
    assert threshold_for(good, 0) > 0.9


def test_threshold_maximizes_f1_and_tally_counts_per_cwe() -> None:
    risk = np.array([0.9, 0.8, 0.7, 0.4, 0.2])
    threshold, f1 = best_threshold(risk, np.array([True, True, False, True, False]))
    assert threshold == 0.4 and f1 == pytest.approx(6 / 7)

    class F:
        def __init__(self, cwe: str, label: str) -> None:
            self.cwe, self.label = cwe, label

    counts = tally([F("A", "bad"), F("A", "good"), F("B", "bad")], [True, True, False], ["A", None, "A"])
    assert (counts["A"].tp, counts["A"].fp, counts["B"].fn) == (1, 1, 1)
    assert counts["A"].cwe_accuracy == 1.0 and counts["B"].cwe_accuracy == 0.0
    assert counts["A"].precision == 0.5 and counts["B"].recall == 0.0


@pytest.fixture(scope="module")
def juliet(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[JulietFunction]]:
    """The functions of a few single-file cases of two small CWEs, 2 train, 1 validation, 1 test each."""
    try:
        path = juliet_path(SHARED_DATA if SHARED_DATA.is_dir() else None)
    except InputError as exc:
        pytest.skip(f"no Juliet data: {exc}")
    cases = read_cases(path)
    splits = family_splits(cases)
    chosen = []
    for cwe in CWES:
        for split, wanted in PER_SPLIT.items():
            chosen += [c for c in select_cases(cases, [split], 1, [cwe]) if len(c.files) == 1][:wanted]
    work = tmp_path_factory.mktemp("juliet")
    with EvaluationStore(work / "cache.sqlite") as store:
        yield juliet_functions(toolchain, chosen, splits, extract_support(path.parent, work), store, jobs=2)


@pytest.fixture(scope="module")
def optimization_model(catalogue: Catalogue) -> StitchedModel:
    """A tiny stitched flag-tuning model (two count experts, random weights): what its experts know does not
    matter here, only that they stay frozen and travel into the detector's directory."""
    representations = default_representations()[:2]
    sizes = {r.name: len(r.feature_names()) for r in representations}
    members = tuple(sizes)
    rng = np.random.default_rng(0)
    standardizers = {n: Standardizer.fit(rng.poisson(3.0, size=(20, k))) for n, k in sizes.items()}
    experts = [count_expert(n, k, lists=3, hidden=8, seed=i) for i, (n, k) in enumerate(sizes.items())]
    ensemble = StitchedEnsemble(experts, [StitchingLayer(8, 8)])
    lists = (("instcombine",), ("simplifycfg",), ("sroa",))
    return StitchedModel(ensemble, members, sizes, standardizers, lists, 8, catalogue.llvm_version, catalogue.identity)


@pytest.fixture(scope="module")
def outcome(
    toolchain: Toolchain,
    juliet: list[JulietFunction],
    optimization_model: StitchedModel,
    tmp_path_factory: pytest.TempPathFactory,
) -> DetectionOutcome:
    directory = tmp_path_factory.mktemp("optimization")
    optimization_model.save_pretrained(directory)
    return detection_study(toolchain, juliet, directory, CONFIG)


@pytest.mark.slow  # compiles Juliet cases and trains the study
def test_study_rows_cover_detectors_stitched_and_control(
    outcome: DetectionOutcome, optimization_model: StitchedModel
) -> None:
    report = outcome.report
    kinds = [r.kind for r in report.rows]
    assert kinds == ["detector"] * 4 + ["stitched"] * 2 + ["control"] * 2
    stitched = [r for r in report.rows if r.kind == "stitched"]
    assert [r.init for r in stitched] == ["lstsq", "ot"]
    assert all(r.members[0] == report.best_detector for r in report.rows if r.kind != "detector")
    assert all(len(r.members) == 3 for r in report.rows if r.kind in ("stitched", "control"))
    assert set(report.cwes) == set(CWES) and set(report.functions) == set(SPLITS)
    test_functions = report.functions["test"]["bad"] + report.functions["test"]["good"]
    assert all(r.overall.functions == test_functions for r in report.rows)
    assert report.winner in outcome.models and report.optimization_model == optimization_model.identity
    for row in stitched:  # the optimization experts were stitched in frozen: their weights are the model's
        copied = outcome.models[row.name].ensemble.experts()[1:]
        for mine, theirs in zip(copied, optimization_model.ensemble.experts(), strict=True):
            assert _same(_state(theirs), mine)


@pytest.mark.slow  # compiles Juliet cases and trains the study
def test_report_round_trips_through_json_and_draws(outcome: DetectionOutcome, tmp_path: Path) -> None:
    anchor = DetectionRow("cppcheck", "anchor", dict(outcome.report.rows[0].counts))
    report = replace(outcome.report, rows=[*outcome.report.rows, anchor])
    assert DetectionReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report
    path = tmp_path / "study.json"
    report.write_json(path)
    drawn = build_report("detection", [path], output_dir=tmp_path)
    html = to_html(drawn, "now")
    assert "<svg" in html and "Per CWE" in html and "cppcheck" in html
    assert "optimization experts (lstsq) vs" in to_md(drawn)
    path.write_text("{}")
    with pytest.raises(InputError, match="not a detection study"):
        DetectionReport.load(path)


@pytest.mark.slow  # compiles Juliet cases and trains the study
def test_model_directory_predicts_like_the_study(
    toolchain: Toolchain, juliet: list[JulietFunction], outcome: DetectionOutcome, tmp_path: Path
) -> None:
    name = next(r.name for r in outcome.report.rows if r.kind == "stitched")
    model = outcome.models[name]
    model.save_pretrained(tmp_path / "detector")
    loaded = DetectorModel.from_pretrained(tmp_path / "detector")
    test = [f for f in juliet if f.split == "test"]
    found = loaded.predict(toolchain, [f.bitcode for f in test])
    assert found == model.predict(toolchain, [f.bitcode for f in test])
    assert loaded.identity == model.identity and len(loaded.members) == 3  # optimization experts copied in
    row = outcome.report.row(name)
    assert [f.risk for f in found] == pytest.approx(row.risks, abs=1e-5)
    assert loaded.threshold == row.threshold and set(f.cwe for f in found) <= set(CWES)


@pytest.mark.slow  # compiles Juliet cases and trains the study
def test_a_bad_model_directory_is_one_input_error(outcome: DetectionOutcome, tmp_path: Path) -> None:
    directory = tmp_path / "detector"
    outcome.winner.save_pretrained(directory)
    config = json.loads((directory / "config.json").read_text())
    broken = {
        "missing": None,
        "kind": {**config, "kind": "stitched"},
        "field": {**config, "threshold": "high"},
        "shape": {**config, "members": [{**config["members"][0], "hidden": 5}, *config["members"][1:]]},
    }
    for why, changed in broken.items():
        target = tmp_path / why
        if changed is not None:
            target.mkdir()
            (target / "config.json").write_text(json.dumps(changed))
            (target / "weights.npz").write_bytes((directory / "weights.npz").read_bytes())
        with pytest.raises(StitchoptError) as caught:
            DetectorModel.from_pretrained(target)
        assert isinstance(caught.value, InputError) and "\n" not in str(caught.value), why


def _cli(tmp_path: Path, *args: str, columns: int = 200) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "stitchopt", "security", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_check_gives_each_function_a_risk_and_fails_a_list_that_removes_a_clear(tmp_path: Path) -> None:
    fixture = str(FIXTURES / "cwe14_fortified.c")
    removing = _cli(tmp_path, "check", fixture, "-p", ",".join(REMOVING), "-o", str(tmp_path / "out.json"))
    assert removing.returncode == 1, removing.stderr
    assert "removes security-relevant code that -Oz keeps" in removing.stdout
    found = json.loads((tmp_path / "out.json").read_text())
    shipped = DetectorModel.from_pretrained(Path(found["model"]))  # the default: the shipped detector
    (program,) = found["programs"]
    assert program["security"]["removed_vs_oz"]["clearing_writes"] >= 1
    functions = program["functions"]
    assert {f["name"] for f in functions} == {"wipe", "session"} and found["threshold"] == shipped.threshold
    assert all(0.0 <= f["risk"] <= 1.0 and f["cwe"] in shipped.cwes for f in functions)
    assert all(f["flagged"] == (f["risk"] >= shipped.threshold) for f in functions)
    malformed = str(FIXTURES.parent / "malformed.c")  # one unreadable program costs the others nothing
    keeping = _cli(tmp_path, "check", fixture, malformed, "-p", "instcombine", "--json")
    assert keeping.returncode == 0 and "skipped" in keeping.stderr and "malformed.c" in keeping.stderr
    (kept,) = json.loads(keeping.stdout)["programs"]
    assert kept["program"] == fixture and not kept["security"]["removed_vs_oz"]


def test_security_commands_refuse_bad_inputs_in_one_line(tmp_path: Path) -> None:
    for args, message in (
        (("check", str(FIXTURES / "cwe14_free.c"), "--model", str(tmp_path)), "not a"),
        (("study", "-o", str(tmp_path / "s.json"), "--experts", str(tmp_path)), "not a"),
    ):
        done = _cli(tmp_path, *args)
        said = [line for line in done.stderr.splitlines() if line.startswith("stitchopt: error:")]
        assert done.returncode == 2 and len(said) == 1 and "Traceback" not in done.stderr, (args, done.stderr)
        assert message in said[0], (args, done.stderr)


def test_calibration_sets_the_threshold_on_benign_code_and_says_when_it_cannot_separate() -> None:
    benign = np.linspace(0.0, 1.0, 200)
    programs = [benign[i::10] for i in range(10)]  # 10 programs alike: a threshold set without one fits it too
    told_apart = calibrate(programs, np.full(50, 0.99), np.zeros(10), ["corpus"], "cmd", target=0.05)
    assert told_apart.benign_false_positive_rate == 0.05 and np.sum(benign >= told_apart.threshold) == 10
    assert told_apart.benign_held_out_false_positive_rate == pytest.approx(0.05, abs=0.02)
    assert told_apart.juliet_recall == 1.0 and told_apart.separation == pytest.approx(0.99)
    assert told_apart.caveat() is None and "5.0% of 200 benign functions (corpus)" in told_apart.meaning()
    like_benign = calibrate(programs, np.full(50, 0.2), np.zeros(10), ["corpus"], "cmd", target=0.05)
    assert like_benign.juliet_recall == 0.0 and like_benign.separation == pytest.approx(0.2)
    assert "does not tell ordinary code from Juliet's flaws" in (like_benign.caveat() or "")


def test_the_held_out_rate_sees_a_program_unlike_the_others() -> None:
    """Two programs unlike each other: the threshold set on both flags 1 of 20 functions, but set on one program
    it flags 1 of the other's 10 (spread) and all 10 of the other (high): 11 of 20 on code it never saw."""
    spread, high = np.linspace(0.0, 1.0, 10), np.full(10, 0.95)
    calibration = calibrate([spread, high], np.ones(5), np.zeros(1), ["corpus"], "cmd", target=0.2)
    assert calibration.benign_false_positive_rate == 0.05
    assert calibration.benign_held_out_false_positive_rate == held_out_rate([spread, high], 0.2) == 0.55


def test_the_shipped_threshold_is_calibrated_and_kept_with_the_model(tmp_path: Path) -> None:
    shipped = DetectorModel.from_pretrained(DEFAULT_DETECTOR_DIR)
    calibration = shipped.calibration
    assert calibration is not None
    assert calibration.command.startswith("python benchmarks/security.py calibrate")
    assert calibration.benign_false_positive_rate <= calibration.target_false_positive_rate
    moved = replace(calibration, threshold=0.5)  # saved and read back with its calibration, which it is named by
    shipped.calibrated(moved).save_pretrained(tmp_path / "recalibrated")
    recalibrated = DetectorModel.from_pretrained(tmp_path / "recalibrated")
    assert recalibrated.calibration == moved and recalibrated.threshold == 0.5
    assert recalibrated.identity != shipped.identity
    edited = tmp_path / "detector"
    shutil.copytree(DEFAULT_DETECTOR_DIR, edited)
    config = json.loads((edited / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**config, "threshold": 0.5}))
    with pytest.raises(InputError, match="calibrate the detector again"):
        DetectorModel.from_pretrained(edited)


@pytest.mark.slow  # the detector on the 350 functions of the demo corpus
def test_the_shipped_calibration_is_reproduced_from_the_demo_corpus(toolchain: Toolchain) -> None:
    shipped = DetectorModel.from_pretrained(DEFAULT_DETECTOR_DIR)
    assert shipped.calibration is not None and shipped.calibration.corpus == ("bench://demo-v1",)
    benign = program_risks(toolchain, shipped, list(demo_programs().values()), jobs=2)  # the same risks as 1 job
    again = calibrate(benign, np.ones(1), np.zeros(1), shipped.calibration.corpus, "")
    assert sum(len(risks) for risks in benign) == shipped.calibration.benign_functions
    assert again.threshold == pytest.approx(shipped.threshold, abs=1e-6)
    assert again.benign_false_positive_rate == shipped.calibration.benign_false_positive_rate
    assert again.benign_held_out_false_positive_rate == shipped.calibration.benign_held_out_false_positive_rate


def test_check_says_what_the_risk_means_in_an_80_column_terminal(tmp_path: Path) -> None:
    program = tmp_path / "plain.c"
    program.write_text("int add(int a, int b) { return a + b; }\nint max(int a, int b) { return a > b ? a : b; }\n")
    shown = _cli(tmp_path, "check", str(program), columns=80)
    assert shown.returncode == 0, shown.stderr
    assert "…" not in shown.stdout and all(len(line) <= 80 for line in shown.stdout.splitlines())
    said = " ".join(shown.stdout.split())
    assert "risk: the detector's probability" in said and "benign functions (bench://demo-v1)" in said
    assert "caveat: this detector does not tell ordinary code from Juliet's flaws" in said  # measured: it does not
    found = json.loads(_cli(tmp_path, "check", str(program), "--json").stdout)
    shipped = DetectorModel.from_pretrained(DEFAULT_DETECTOR_DIR)
    assert found["threshold"] == shipped.threshold and found["calibration"]["threshold"] == shipped.threshold
    assert found["meaning"] == shipped.meaning() and found["caveat"]
    (functions,) = [p["functions"] for p in found["programs"]]
    assert all(f["flagged"] == (f["risk"] >= shipped.threshold) for f in functions)
