"""Hot-block prediction on held-out profiled programs: the LSTM against LLVM's static block frequencies, a
loop-depth heuristic and gradient-boosted trees on the same block features.

    python benchmarks/hot_paths.py [--csmith 100] [--data-dir ../shared/data] [--save-model DIR]

Profiles are cached in the evaluation store (the first run builds and runs every program: minutes).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from stitchopt.cache.store import DB_NAME, EvaluationStore, default_cache_dir
from stitchopt.hotpath.evaluate import Scores, loop_depth, lstm, score, static_frequency
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.studies.hotpath.boosted import train_boosted
from stitchopt.studies.hotpath.corpus import SOURCES, corpus_programs, profile_corpus
from stitchopt.studies.hotpath.train import LSTMConfig, train_lstm
from stitchopt.toolchain.discovery import find_toolchain


def _row(s: Scores, split: str) -> list[str]:
    return [
        s.method,
        split,
        str(s.programs),
        f"{s.blocks:,}",
        f"{100 * s.accuracy:.1f}%",
        f"{100 * s.precision:.1f}%",
        f"{100 * s.recall:.1f}%",
        f"{100 * s.f1:.1f}",
        f"{100 * s.top_functions:.0f}%",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csmith", type=int, default=100, help="Csmith programs in the corpus")
    parser.add_argument("--humaneval", type=int, default=None, help="at most this many HumanEval-X programs")
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--save-model", type=Path, default=None, help="write the trained LSTM here")
    args = parser.parse_args()
    toolchain = find_toolchain()
    start = time.perf_counter()
    with EvaluationStore(default_cache_dir() / DB_NAME) as store:
        programs = corpus_programs(
            toolchain, store, csmith=args.csmith, humaneval=args.humaneval, data_dir=args.data_dir, jobs=args.jobs
        )
        corpus = profile_corpus(toolchain, programs, store, jobs=args.jobs)
    profiled = time.perf_counter() - start
    train, validation = corpus.split("train"), corpus.split("validation")
    start = time.perf_counter()
    model = train_lstm(train, validation, LSTMConfig(hidden=args.hidden, seed=args.seed))
    lstm_seconds = time.perf_counter() - start
    boosted = train_boosted(train, validation, seed=args.seed)
    methods = [
        ("LSTM (ours)", lstm(model)),
        ("gradient-boosted trees", boosted),
        ("LLVM static block frequency", static_frequency),
        ("loop-depth heuristic", loop_depth),
    ]
    rows = []
    for split, origin in (("test", None), *(("test", o) for o in SOURCES)):
        chosen = corpus.split(split, origin)
        if chosen:
            rows += [_row(score(name, predict, chosen), origin or "all held out") for name, predict in methods]
    headers = ["method", "programs", "n", "blocks", "accuracy", "precision", "recall", "F1", "top-5 functions"]
    print(to_markdown(Rows("Hot blocks (90% of executions) on held-out programs", headers, rows)))
    print(
        f"\ncorpus: {len(corpus.programs)} profiled programs ({len(train)} train, {len(validation)} validation, "
        f"{len(corpus.split('test'))} test), {len(corpus.failed)} failed; profiling {profiled:.0f} s, "
        f"LSTM training {lstm_seconds:.0f} s ({model.trained_on['functions']} functions)"
    )
    for failure in corpus.failed:
        print(f"  failed: {failure}")
    if args.save_model is not None:
        model.save_pretrained(args.save_model)
        print(f"model written to {args.save_model}")


if __name__ == "__main__":
    main()
