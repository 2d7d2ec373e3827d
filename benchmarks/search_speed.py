"""Search speed: the same seeded searches with prefix reuse off and on (and screening off and on), from a cold
cache each time; wall time, evaluations/s, prefix elements reused, codegen skipped, worker memory, and the
final answers, which must not change with reuse.

    python benchmarks/search_speed.py [--corpus demo|bench://pypi-v1?split=test|DIR|FILE,FILE] [--packages a,b]
        [--programs 4] [--max-ir-kb 60] [--budget 1000] [--strategies local,random]
        [--modes off,reuse,reuse+screen0.02] (screenM: skip codegen above the best's size estimate by M)
        [--jobs 2] [--seed 0] [--also-at 300]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule, Objective
from stitchopt.datasets.benchmarks import dataset_benchmarks, is_dataset_uri, round_robin
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import SEARCH_PREFIX_CACHE_MB, Evaluator
from stitchopt.evaluation.native.pool import NativeBackend
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.tune.driver import Budget, TuningRun, tune
from stitchopt.tune.strategies import make_strategy


def programs(corpus: str, limit: int, max_ir_kb: float | None, packages: list[str] | None) -> list[Path]:
    if corpus == "demo":
        paths = list(demo_programs().values())
    elif Path(corpus).is_dir():  # C, C++ and IR files of one's own
        paths = sorted(p for p in Path(corpus).iterdir() if p.suffix in (".c", ".cpp", ".ll", ".bc"))
    elif all(Path(name).is_file() for name in corpus.split(",")):
        paths = [Path(name) for name in corpus.split(",")]
    elif is_dataset_uri(corpus):
        uri, _, split = corpus.partition("?split=")
        chosen = [b for b in dataset_benchmarks(uri, split=split or None) if not packages or b.package in packages]
        paths = [b.path for b in round_robin(chosen)]
    else:
        raise SystemExit(f"unknown corpus {corpus!r}: demo, bench://<dataset>[?split=...], a directory or files")
    if max_ir_kb is not None:
        paths = [p for p in paths if p.stat().st_size <= max_ir_kb * 1024]
    return paths[:limit]


@dataclass
class ModeRun:
    mode: str
    seconds: float
    evaluated: int
    codegen_skipped: int
    screened: int
    reused_share: float
    worker_rss_mb: float
    runs: list[TuningRun]


def worker_rss_mb(evaluator: Evaluator) -> float:
    """The largest resident set among the native workers (0 for other backends)."""
    if not isinstance(evaluator.backend, NativeBackend):
        return 0.0
    sizes = []
    for pid in evaluator.backend.worker_pids():
        status = Path(f"/proc/{pid}/status").read_text()
        sizes += [int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:")]
    return max(sizes, default=0.0)


def search(
    toolchain: Toolchain,
    catalogue: Catalogue,
    modules: list[IRModule],
    strategy: str,
    mode: str,
    budget: int,
    jobs: int,
    seed: int,
) -> ModeRun:
    prefix_mb = SEARCH_PREFIX_CACHE_MB if "reuse" in mode else 0
    _, screened, margin = mode.partition("screen")
    screen_margin = float(margin or 0) if screened else None
    with (
        tempfile.TemporaryDirectory() as scratch,
        EvaluationStore(Path(scratch) / "cache.sqlite") as store,
        Evaluator(toolchain, store, jobs=jobs, backend="native", prefix_cache_mb=prefix_mb) as evaluator,
    ):
        oz = evaluator.baselines["Oz"]
        for module in modules:  # the -Oz references are not part of the search's time
            evaluator.evaluate(module, oz.pipeline, oz.options)
        before = evaluator.counters.evaluated, evaluator.counters.codegen_skipped, evaluator.counters.screened
        start = time.monotonic()
        runs = [
            tune(
                evaluator,
                module,
                make_strategy(strategy, catalogue, seed, oz.pipeline),
                catalogue,
                Objective(),
                Budget(budget, screen_margin=screen_margin),
            )
            for module in modules
        ]
        seconds = time.monotonic() - start
        reuse = evaluator.prefix_reuse
        return ModeRun(
            mode,
            seconds,
            evaluator.counters.evaluated - before[0],
            evaluator.counters.codegen_skipped - before[1],
            evaluator.counters.screened - before[2],
            reuse.reused_share if reuse is not None else 0.0,
            worker_rss_mb(evaluator),
            runs,
        )


def geomean_change(runs: list[TuningRun], at: int | None = None) -> str:
    """Geomean best vs -Oz after `at` evaluations (the whole run by default; a search with a smaller budget is
    the same search cut short, since batches are fixed)."""
    scores = [min(run.curve[: at or len(run.curve)][-1] if run.curve else run.best_score, 1.0) for run in runs]
    return f"{100 * (math.exp(sum(map(math.log, scores)) / len(scores)) - 1):+.2f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="demo")
    parser.add_argument("--packages", help="comma-separated: only these packages of a dataset corpus")
    parser.add_argument("--programs", type=int, default=4)
    parser.add_argument("--max-ir-kb", type=float)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--strategies", default="local,random")
    parser.add_argument("--modes", default="off,reuse")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--also-at", type=int, help="also report the answers after this many evaluations")
    args = parser.parse_args()
    toolchain = find_toolchain()
    catalogue = load_catalogue(toolchain)
    paths = programs(args.corpus, args.programs, args.max_ir_kb, args.packages.split(",") if args.packages else None)
    modules = [load_module(toolchain, path) for path in paths]
    rows = []
    for strategy in args.strategies.split(","):
        reference: ModeRun | None = None
        for mode in args.modes.split(","):
            run = search(toolchain, catalogue, modules, strategy, mode, args.budget, args.jobs, args.seed)
            reference = reference or run
            same = all(
                (a.best_passes, a.best_result.size_bytes) == (b.best_passes, b.best_result.size_bytes)
                for a, b in zip(run.runs, reference.runs, strict=True)
            )
            earlier = [geomean_change(run.runs, args.also_at)] if args.also_at else []
            rate = run.evaluated / run.seconds
            rows.append(
                [
                    strategy,
                    mode,
                    f"{run.seconds:.0f}",
                    f"{rate:.1f}",
                    f"{reference.seconds / run.seconds:.2f}x",
                    f"{100 * run.reused_share:.0f}%",
                    f"{100 * run.codegen_skipped / max(run.evaluated, 1):.0f}%",
                    f"{100 * run.screened / max(run.evaluated, 1):.0f}%",
                    f"{run.worker_rss_mb:.0f}",
                    *earlier,
                    geomean_change(run.runs),
                    "yes" if same else "no",
                ]
            )
            print(f"{strategy} {mode}: {run.seconds:.0f} s", flush=True)
    header = [
        "strategy",
        "mode",
        "search s",
        "evaluations/s",
        "speed-up (wall, same budget)",
        "prefix elements reused",
        "codegen cached",
        "codegen screened out",
        "worker RSS MB",
        *([f"best vs -Oz at {args.also_at}"] if args.also_at else []),
        f"best vs -Oz at {args.budget}",
        "same answers",
    ]
    title = f"{len(modules)} programs of {args.corpus}, {args.budget} evaluations each, {args.jobs} workers"
    print(to_markdown(Rows(title, header, rows)))


if __name__ == "__main__":
    main()
