"""Run evidence for the large wins on held-out Debian units: each package rebuilt with each list, its tests run.

A win of 10% or more below -Oz counts in a reported number only with run evidence (learning/verification.py).
This script gathers it for the Debian test split: from one or more evaluations (`benchmarks/flag_tuning.py --json
F`), every unit whose large win no evidence backs yet, for every method that reached it (the autotuner's
included, so that the reference is judged by the same rule as the model), grouped by package and pipeline. Each
package with a test suite (TESTS) is then

1. built at -O0 with `--coverage` through its own build system, as the dataset built it (same path, same
   configure options), and tested: the lines of each unit its tests executed (`llvm-cov gcov`);
2. built once per pipeline through `stitchopt-cc` with `STITCHOPT_LIST` (every unit gets the list where it beats
   -Oz and passes the guards, -Oz elsewhere: more of the package under the list than the one unit), and tested.

A unit is backed when its build-log entry shows the pipeline chosen, with the object size the evaluation measured
(the same unit, not a rebuild that differs), the tests pass, and they executed at least half of its lines. Every
attempt is appended to `<out>/attempts.jsonl` (a rerun skips the (package, pipeline) pairs there, so it resumes
after any stop); the backed units to `<out>/evidence.jsonl`, the file `flag_tuning.py --verified` reads.

    python benchmarks/run_evidence.py --evaluation EVAL.json [...] [--packages a,b] [--out DIR] [--work DIR]
        [--jobs 2]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from stitchopt.cache.store import default_cache_dir
from stitchopt.cc.build_log import BuildEntry, read_log
from stitchopt.datasets.sources.apt import DebianArchive
from stitchopt.datasets.sources.debian import (
    BUILD_CFLAGS,
    PACKAGES,
    build_root,
    build_tree,
    recipe_of,
    same_times,
)
from stitchopt.learning.verification import RunEvidence, pipeline_key
from stitchopt.toolchain.discovery import find_toolchain

DATASET = "bench://debian-v1/"
TEST_TIMEOUT_S = 1800.0
MIN_COVERAGE = 0.5  # of a unit's lines its tests execute: below it, the changed code may never have run
# Packages of the Debian test split whose own test suites run offline, and the command that runs them (in the
# directory the build system lives in). The others cannot give evidence: a52dec and libtar have no tests,
# psmisc's need DejaGnu, twolame's its command-line tool, which needs libsndfile (not built for the dataset).
TESTS: dict[str, tuple[str, ...]] = {
    "libscrypt": ("make", "check"),
    "libassuan": ("make", "check"),
    # Debian's patches add test files its Makefile.in (not regenerated: same_times) does not compile, while the
    # tests' list.h is made from every test_*.c there: the added ones are left out.
    "libarchive": (
        "sh",
        "-c",
        "for f in libarchive/test/test_*.c tar/test/test_*.c cpio/test/test_*.c cat/test/test_*.c; do "
        'grep -q "$f" Makefile || rm -f "$f"; done; rm -f */test/list.h; make check',
    ),
    "libconfig": ("sh", "-c", "make check && cd tests && ./libconfig_tests"),  # its make check runs nothing
    "clzip": ("make", "check"),
    "lzip": ("make", "check"),
    # m4's own checks (gnulib's tests/ check gnulib): 198.sysval expects the message of a killed child that this
    # machine's shell words otherwise, and fails at -O0 without any list.
    "m4": ("sh", "-c", "rm -f checks/198.sysval && make -C checks check"),
    "potrace": ("make", "check"),
    "libsrtp2": ("make", "runtest"),
}
_LINES = re.compile(r"Lines executed:\s*([\d.]+)% of (\d+)")


def status(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Win:
    uri: str
    package: str
    path: str  # the source, relative to the package's tree
    pipeline: str
    methods: tuple[str, ...]
    size: int  # the object's allocated bytes with this pipeline, as the evaluation measured them


def unbacked_wins(evaluations: list[Path], evidence: RunEvidence) -> list[Win]:
    """Every (Debian unit, pipeline) whose large win some evaluation left unverified and `evidence` lacks."""
    found: dict[tuple[str, str], tuple[Win, set[str]]] = {}
    for path in evaluations:
        for program in json.loads(path.read_text())["programs"]:
            uri = program["uri"]
            if not uri.startswith(DATASET):
                continue
            for method in program.get("unverified", ()):
                pipeline = program.get("pipelines", {}).get(method)
                if pipeline is None or evidence.ran([uri], pipeline):
                    continue
                package, relative = uri.removeprefix(DATASET).split("/", 1)
                size = round(program["ratios"][method] * program["oz_size"])
                win, methods = found.setdefault(
                    (uri, pipeline_key(pipeline)), (Win(uri, package, relative, pipeline, (), size), set())
                )
                methods.add(method)
    return [Win(w.uri, w.package, w.path, w.pipeline, tuple(sorted(m)), w.size) for w, m in found.values()]


def _run(command: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float) -> bool:
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            return subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=out, timeout=timeout).returncode == 0
        except subprocess.TimeoutExpired:
            out.write(f"timed out after {timeout:.0f} s\n")
            return False


class PackageTree:
    """A package's tree at the path the dataset built it (so `__FILE__` strings, hence sizes, are the same),
    rebuilt from the fetched source for each build."""

    def __init__(self, package: str, work: Path) -> None:
        self.package = package
        self.recipe = recipe_of(package)
        pinned = next(p for p in PACKAGES if p.name == package)
        archive = DebianArchive(default_cache_dir() / "debian-apt")
        self.source = archive.fetch(pinned.name, pinned.version, work / "fetch" / package, pinned.dsc_sha256)
        self.tree = build_root() / package
        self.lock = (build_root() / f"{package}.lock").open("w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)  # a dataset build of this package uses the same path

    def build_and_test(self, env: dict[str, str], log: Path) -> tuple[list[str], bool]:
        """(the build's failed steps, whether the tests passed) of a fresh copy built with `env`."""
        shutil.rmtree(self.tree, ignore_errors=True)
        shutil.copytree(self.source, self.tree, symlinks=True)
        same_times(self.tree)
        failed = build_tree(self.tree / self.recipe.subdir, self.recipe, env, log)
        tested = _run(list(TESTS[self.package]), self.tree / self.recipe.subdir, env, log, TEST_TIMEOUT_S)
        return failed, tested

    def coverage(self, relative: str, llvm_cov: str) -> float | None:
        """The share of `relative`'s lines the tests executed, from the .gcda its object left (None: none)."""
        source = self.tree / relative
        # Beside the source first (another directory may have a file of the same name), then libtool's names.
        counts = sorted(
            source.parents[0].rglob(f"*{source.stem}.gcda"), key=lambda p: (p.parent != source.parent, len(p.name))
        )
        counts += [p for p in self.tree.rglob(f"*{source.stem}.gcda") if p not in counts]
        for gcda in counts:
            done = subprocess.run(
                [llvm_cov, "gcov", "-n", "-o", str(gcda.with_suffix("")), str(source)],
                cwd=gcda.parent,
                capture_output=True,
                text=True,
            )
            for block in done.stdout.split("File '")[1:]:
                name = block.split("'", 1)[0]  # as compiled: relative to the directory of the compile
                match = _LINES.search(block)
                if match and _same_file(source, name):
                    return float(match.group(1)) / 100
        return None

    def close(self) -> None:
        shutil.rmtree(self.tree, ignore_errors=True)
        self.lock.close()


def _same_file(path: Path, name: str) -> bool:
    """Whether gcov's `name` for a file (absolute, or relative to where it was compiled) is `path`."""
    parts = [part for part in Path(name).parts if part != "."]
    return (
        Path(name).is_absolute() and path.resolve() == Path(name).resolve() or path.parts[-len(parts) :] == tuple(parts)
    )


def base_env(jobs: int) -> dict[str, str]:
    return {
        **os.environ,
        "CFLAGS": BUILD_CFLAGS,
        "CXXFLAGS": BUILD_CFLAGS,
        "MAKEFLAGS": f"-j{jobs}",
        "FORCE_UNSAFE_CONFIGURE": "1",
    }


def gather(package: str, wins: list[Win], args: argparse.Namespace, done: set[tuple[str, str]]) -> None:
    toolchain = find_toolchain()
    clang, llvm_cov = toolchain.tool("clang"), str(Path(toolchain.tool("opt")).parent / "llvm-cov")
    logs = args.work / "logs" / package
    logs.mkdir(parents=True, exist_ok=True)
    tree = PackageTree(package, args.work)
    try:
        # In the compiler's name, not CFLAGS: some Makefiles link without CFLAGS and LDFLAGS.
        env = {**base_env(args.jobs), "CC": f"{clang} --coverage", "CXX": f"{clang}++ --coverage"}
        start = time.perf_counter()
        failed, tested = tree.build_and_test(env, logs / "coverage.log")
        coverage = {w.path: tree.coverage(w.path, llvm_cov) for w in wins}
        seen = ", ".join(f"{Path(p).name} {_share(c)}" for p, c in coverage.items())
        took = time.perf_counter() - start
        status(f"[{package}] coverage build: tests {'passed' if tested else 'FAILED'} in {took:.0f} s; {seen}")
        if not tested:
            _attempt(args, package, None, "the tests fail without any list (coverage build)", [])
            return
        unexercised = sorted({w.path for w in wins if (coverage[w.path] or 0.0) < MIN_COVERAGE})
        if unexercised:
            skipped = (
                f"the tests execute less than {MIN_COVERAGE:.0%} of {', '.join(unexercised)}: not built with lists"
            )
            status(f"[{package}] {skipped}")
            _attempt(args, package, None, skipped, [])
        by_pipeline: dict[str, list[Win]] = defaultdict(list)
        for win in wins:
            if win.path not in unexercised:
                by_pipeline[win.pipeline].append(win)
        for number, (pipeline, units) in enumerate(sorted(by_pipeline.items()), 1):
            if (package, pipeline_key(pipeline)) in done:
                continue
            build_log = logs / f"list{number}.jsonl"
            build_log.unlink(missing_ok=True)
            env = {
                **base_env(args.jobs),
                "CC": str(args.wrapper),
                "CXX": str(args.wrapper.with_name("stitchopt-c++")),
                "STITCHOPT_LIST": pipeline,
                "STITCHOPT_BUILD_LOG": str(build_log),
                "STITCHOPT_CACHE_DIR": str(args.work / "cache"),
            }
            start = time.perf_counter()
            failed, tested = tree.build_and_test(env, logs / f"list{number}.log")
            entries = read_log(build_log) if build_log.is_file() else []
            optimized = sum(e.outcome == "optimized" for e in entries)
            backed = []
            for win in units:
                entry = next((e for e in entries if e.unit and e.unit.endswith("/" + win.path)), None)
                why = _why_not(entry, win, tested, coverage[win.path])
                if why is None:
                    backed.append(win)
                status(f"[{package}] {win.path}: {why or 'backed'} ({', '.join(win.methods)})")
            seconds = time.perf_counter() - start
            note = f"{optimized} of {len(entries)} units built with the list; tests {'passed' if tested else 'FAILED'}"
            _attempt(
                args,
                package,
                pipeline,
                note,
                [asdict(w) | {"coverage": coverage[w.path]} for w in backed],
                seconds=seconds,
                failed_steps=failed,
                units=[w.path for w in units],
            )
            with (args.out / "evidence.jsonl").open("a") as out:
                for win in backed:
                    record = {
                        "program": win.uri,
                        "pipeline": win.pipeline,
                        "tests": " ".join(TESTS[package]),
                        "coverage": coverage[win.path],
                        "methods": list(win.methods),
                    }
                    out.write(json.dumps(record) + "\n")
            share = f"{len(backed)} of {len(units)} backed"
            status(f"[{package}] list {number}/{len(by_pipeline)}: {note}, {share}, {seconds:.0f} s")
    finally:
        tree.close()


def _share(coverage: float | None) -> str:
    return "not run" if coverage is None else f"{coverage:.0%}"


def _why_not(entry: BuildEntry | None, win: Win, tested: bool, coverage: float | None) -> str | None:
    """Why a build does not back the unit's win, or None when it does."""
    if entry is None:
        return "not in the build log"
    if entry.outcome != "optimized" or pipeline_key(entry.pipeline or "") != pipeline_key(win.pipeline):
        return f"built {entry.outcome} ({entry.reason or 'the list did not win or failed a guard'})"
    if entry.bytes != win.size:
        return f"{entry.bytes} bytes, the evaluation measured {win.size} (another build of the unit)"
    if not tested:
        return "the tests FAILED"
    if coverage is None:
        return "the tests do not run it"
    if coverage < MIN_COVERAGE:
        return f"the tests execute {coverage:.0%} of its lines ({MIN_COVERAGE:.0%} asked)"
    return None


def _attempt(
    args: argparse.Namespace, package: str, pipeline: str | None, note: str, backed: list[Any], **extra: Any
) -> None:
    record = {"package": package, "pipeline": pipeline, "note": note, "backed": backed, "time": time.time(), **extra}
    with (args.out / "attempts.jsonl").open("a") as out:
        out.write(json.dumps(record) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluation", type=Path, action="append", required=True)
    parser.add_argument("--packages", default=",".join(TESTS), help="of " + ", ".join(TESTS))
    parser.add_argument("--out", type=Path, default=Path("data/heldout/evidence-debian"))
    parser.add_argument("--work", type=Path, default=default_cache_dir() / "run-evidence", help="sources, logs")
    parser.add_argument("--wrapper", type=Path, default=Path(sys.executable).with_name("stitchopt-cc"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    evidence_file = args.out / "evidence.jsonl"
    evidence = RunEvidence.load(evidence_file) if evidence_file.is_file() else RunEvidence()
    done = set()
    if (args.out / "attempts.jsonl").is_file():
        for line in (args.out / "attempts.jsonl").read_text().splitlines():
            record = json.loads(line)
            done.add((record["package"], pipeline_key(record["pipeline"] or "")))
    wins = unbacked_wins(args.evaluation, evidence)
    by_package: dict[str, list[Win]] = defaultdict(list)
    for win in wins:
        by_package[win.package].append(win)
    chosen = [p for p in args.packages.split(",") if p in by_package]
    status(f"{len(wins)} unbacked wins in {len(by_package)} packages; gathering for {', '.join(chosen) or 'none'}")
    for package in chosen:
        if package not in TESTS:
            status(f"[{package}] no test suite known: skipped")
            continue
        gather(package, by_package[package], args, done)


if __name__ == "__main__":
    main()
