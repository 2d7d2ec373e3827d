"""Every report kind built the way users build it (real runs, real LLVM, the `stitchopt` command), then opened
in headless Chromium: no console errors, nothing fetched, every plot drawn; a screenshot of each is kept in
$STITCHOPT_TEST_ARTIFACTS (default: test-artifacts/ in the checkout)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.datasets.benchmarks import Benchmark
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.heldout import evaluate_model
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue
from stitchopt.reports.flag_tuning import write_json
from stitchopt.reports.stitching import write_json as write_study
from stitchopt.stitching.results import CurveRow, ExpertRow, PairAlignment, PairRow, StudyReport
from stitchopt.toolchain.discovery import Toolchain

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent.parent / "data"
ARTIFACTS = Path(os.environ.get("STITCHOPT_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts"))
KINDS = ("run", "evaluation", "model", "validation", "demo")
BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--window-size=1200,2200",
)


def _study() -> StudyReport:
    """A small stitching study by hand (training one takes the `stitch` extra and a minute)."""
    names = ("autophase", "histogram")
    experts = [ExpertRow(n, 0.01, (0.98, 1.0), (0.99, 1.0), 10, 1.0) for n in names]
    experts.append(ExpertRow("ranker (kNN + ridge)", 0.01, (0.97, 1.0), (0.99, 1.0), 0, 0.1))
    pairs = [
        PairRow(a, b, init, 0.001 * (i + 1), 0.5, (0.99, 1.0), 1.0)
        for i, init in enumerate(("lstsq", "ot"))
        for a in names
        for b in names
        if a != b
    ]
    curve = [CurveRow(names[:k], (0.99, 1.0), (0.98, 1.0), 0.01, 1.0) for k in (1, 2)]
    plan = [[0.25, 0.0], [0.0, 0.75]]
    return StudyReport(
        {"train": 2, "validation": 2, "held_out": 2},
        3,
        (0.95, 1.0),
        ("p", "q"),
        ("p", "q"),
        experts,
        pairs,
        curve,
        [PairAlignment(names[0], names[1], 0.5, 0.4, plan, 0.01)],
    )


@pytest.fixture(scope="module")
def reports(toolchain: Toolchain, catalogue: Catalogue, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("reports")
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(work / "cache"), "COLUMNS": "200"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env, cwd=work, timeout=600
        )
        assert done.returncode in (0, 1), done.stderr
        return done

    programs = [str(p) for p in demo_programs().values() if p.stem in ("trie", "ring_buffer")]
    for strategy in ("random", "local"):
        cli(
            "tune",
            *programs,
            "--strategy",
            strategy,
            "--budget",
            "12",
            "--no-validate",
            "--no-minimize",  # answers as searched (minimized: test_tune.py::test_tune_command_reports_replayable_...)
            "-o",
            f"run_{strategy}.json",
            "--log",
            f"trials_{strategy}.jsonl",
        )
    for name in ("run.html", "again.html"):
        cli("report", "run", "run_random.json", "run_local.json", "--log", "trials_random.jsonl", "-o", name)
    cli(
        "validate",
        "-p",
        "function(structurizecfg)",
        "--validate",
        str(DATA / "selftest"),
        "--reduce",
        "--reproducer",
        "repro",
        "-o",
        "validation.json",
    )
    cli("report", "validation", "validation.json", "-o", "validation.html")
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    benchmarks = [Benchmark(p, Path(p), Path(p).stem, "test") for p in programs]
    with Evaluator(toolchain, EvaluationStore(work / "cache" / "evaluations.sqlite"), jobs=2) as evaluator:
        write_json(evaluate_model(evaluator, catalogue, model, benchmarks, ks=(3,)), work / "evaluation.json")
    cli("report", "evaluation", "evaluation.json", "-o", "evaluation.html")
    write_study(_study(), work / "study.json")
    cli(
        "report",
        "model",
        str(DEFAULT_MODEL_DIR),
        "--evaluation",
        "evaluation.json",
        "--study",
        "study.json",
        "-o",
        "model.html",
    )
    demo = cli("demo", "-o", "demo.html", "--k", "2")  # jit mode builds 2 lists per program, not 5
    assert "geomean" in demo.stdout and "hash_table" in demo.stdout and "wrote demo.html" in demo.stderr
    again = cli("demo", "-o", "demo.html", "--k", "2")
    assert "0 evaluated" in again.stderr
    return {kind: work / f"{kind}.html" for kind in KINDS} | {"work": work}


def test_reports_state_their_sources_and_keep_the_records_numbers(reports: dict[str, Path]) -> None:
    work = reports["work"]
    run = json.loads((work / "run_random.json").read_text())
    page = reports["run"].read_text()
    stamp = re.compile(r"generated [^<]*")
    assert stamp.sub("", page) == stamp.sub("", (work / "again.html").read_text())  # deterministic
    assert "run_random.json sha256:" in page and run["catalogue"] in page and run["toolchain"] in page
    for program in run["programs"]:
        assert f"{program['size_change_vs_oz_percent']:+.2f}" in page
    assert page.count("Pareto front") >= 2 and "Search curves" in page
    model = reports["model"].read_text()
    assert "Stitching penalty" in model and "evaluation.json sha256:" in model and "Methods: evaluation" in model
    validation = reports["validation"].read_text()
    assert "href='repro/README.md'" in validation and (work / "repro" / "README.md").is_file()
    assert "test-failed" in validation


def test_markdown_and_csv_carry_the_same_tables(reports: dict[str, Path]) -> None:
    work = reports["work"]
    command = [sys.executable, "-m", "stitchopt", "report", "evaluation", str(work / "evaluation.json"), "--format"]
    markdown = subprocess.run([*command, "md"], capture_output=True, text=True, check=True).stdout
    table = subprocess.run([*command, "csv"], capture_output=True, text=True, check=True).stdout
    evaluation = json.loads((work / "evaluation.json").read_text())
    for method in evaluation["methods"]:
        change = f"{100 * method['geomean_change']:+.2f}"
        assert f"| {method['method']} | {change} |" in markdown and f"{method['method']},{change}" in table
    bad = subprocess.run([*command, "pdf"], capture_output=True, text=True)
    assert bad.returncode == 2 and "format 'pdf' not supported here: use one of html, md, csv" in bad.stderr


def _chromium() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip(
            "no headless Chromium here: install Debian's chromium and chromium-driver (make test does, as root)"
        )
    return browser, driver


@pytest.mark.parametrize("kind", KINDS)
def test_each_report_renders_in_a_real_browser(reports: dict[str, Path], kind: str) -> None:
    browser, driver_path = _chromium()
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in BROWSER_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium leaves its singleton-socket directory in TMPDIR at quit: a TMPDIR of its own, removed after it. Not
    # tmp_path: under pytest-xdist the socket's path would pass the 108 characters a Unix socket may have.
    with tempfile.TemporaryDirectory(prefix="stitchopt-chromium-") as scratch:
        service = webdriver.ChromeService(executable_path=driver_path, env={**os.environ, "TMPDIR": scratch})
        driver = webdriver.Chrome(service=service, options=options)
        try:
            driver.get(reports[kind].as_uri())
            plots = driver.execute_script(
                "return Array.from(document.querySelectorAll('svg.plot')).map(svg => {"
                "  const box = svg.getBoundingClientRect();"
                "  return [box.width, box.height, svg.querySelectorAll('rect, polyline, circle').length]; });"
            )
            fetched = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name);")
            errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            height = driver.execute_script("return document.body.scrollHeight;")
            driver.set_window_size(1200, min(int(height) + 40, 16000))
            driver.save_screenshot(str(ARTIFACTS / f"report-{kind}.png"))
        finally:
            driver.quit()
    assert not errors, errors
    assert not fetched, fetched
    assert plots and all(width > 100 and height > 100 and marks > 0 for width, height, marks in plots), plots
