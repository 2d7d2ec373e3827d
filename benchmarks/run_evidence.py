"""Run evidence for the large wins on held-out Debian units: each package rebuilt with each list, its tests run.

A win of 10% or more below -Oz counts in a reported number only with run evidence (learning/verification.py).
This script gathers it for the Debian test split: from one or more evaluations (`benchmarks/flag_tuning.py --json
F`), every unit whose large win no evidence backs yet, for every method that reached it (the autotuner's
included, so that the reference is judged by the same rule as the model), grouped by package and pipeline. Each
package with a test suite (TESTS) is then

1. built at -O0 with `--coverage` through its own build system, as the dataset built it (same path, same
   configure options), and tested: the share of a unit's lines its tests executed, per object compiled from it
   (`llvm-cov gcov`; a source is often compiled twice, e.g. into the library and into a test program);
2. built once per pipeline through `stitchopt-cc` with `STITCHOPT_LIST` (every unit gets the list where it beats
   -Oz and passes the guards, -Oz elsewhere: more of the package under the list than the one unit), and tested.

A unit is backed when the tests pass, no build step failed that the coverage build did not fail too, and some
object of the unit was built with the pipeline at the size the evaluation measured (the same unit, not a rebuild
that differs) and had at least half of its lines executed in the coverage build. Every (package, pipeline, unit)
attempt, with why it was not backed, is appended to `<out>/attempts.jsonl` after its evidence to
`<out>/evidence.jsonl` (the file `flag_tuning.py --verified` reads); a rerun skips what is there, so it resumes
after any stop.

    python benchmarks/run_evidence.py --evaluation EVAL.json [...] [--packages a,b] [--out DIR] [--work DIR]
        [--jobs 2]
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stitchopt.cache.store import default_cache_dir
from stitchopt.cc.build_log import BuildEntry, read_log
from stitchopt.datasets.sources.apt import DebianArchive
from stitchopt.datasets.sources.debian import BUILD_CFLAGS, BUILD_ROOT, PACKAGES, build_tree, recipe_of, same_times
from stitchopt.datasets.sources.fixed_path import private_root
from stitchopt.learning.verification import RunEvidence, pipeline_key
from stitchopt.toolchain.discovery import find_toolchain

DATASET = "bench://debian-v1/"
TEST_TIMEOUT_S = 1800.0
GCOV_TIMEOUT_S = 60.0
MIN_COVERAGE = 0.5  # of a unit's lines its tests execute: below it, the changed code may never have run
# Packages of the Debian test split whose own test suites run offline, and the command that runs them (in the
# directory the build system lives in).
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
    # CMake packages: their tests are CTest's, in build_tree's build directory. glog's package-config tests
    # configure and build a project against an installed glog, which these builds do not install; its logging
    # and stacktrace tests fail at -O0 with --coverage here (frame layouts, log lines they expect).
    "google-glog": (
        "sh",
        "-c",
        "cd _stitchopt_build && ctest --output-on-failure -E '^(cmake_package_config.*|logging|stacktrace)$'",
    ),
    "muparser": ("sh", "-c", "cd _stitchopt_build && ctest --output-on-failure"),
}
NO_TESTS = {  # the test split's other packages with large wins, and why they give no evidence
    "a52dec": "no test suite",
    "libtar": "no test suite",
    "psmisc": "its tests need DejaGnu",
    "twolame": "its tests need the command-line tool, built only with libsndfile (not built for the dataset)",
    "orocos-kdl": "its tests need CppUnit and ENABLE_TESTS (not built for the dataset)",
    "woff2": "no test suite",
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

    def key(self) -> tuple[str, str, str]:
        return (self.package, pipeline_key(self.pipeline), self.path)


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
        out.write(f"$ {shlex.join(command)}\n")
        out.flush()
        try:
            return subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=out, timeout=timeout).returncode == 0
        except subprocess.TimeoutExpired:
            out.write(f"timed out after {timeout:.0f} s\n")
            return False


@dataclass(frozen=True)
class Built:
    failed: frozenset[str]  # the build steps that failed, by command ("make -k exited 2")
    tested: bool


class PackageTree:
    """A package's tree at the path the dataset built it (so `__FILE__` strings, hence sizes, are the same),
    rebuilt from the fetched source for each build."""

    def __init__(self, package: str, work: Path) -> None:
        self.package = package
        self.recipe = recipe_of(package)
        pinned = next(p for p in PACKAGES if p.name == package)
        archive = DebianArchive(default_cache_dir() / "debian-apt")
        self.source = archive.fetch(pinned.name, pinned.version, work / "fetch" / package, pinned.dsc_sha256)
        self.tree = private_root(BUILD_ROOT) / package
        self.lock = (private_root(BUILD_ROOT) / f"{package}.lock").open("w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)  # a dataset build of this package uses the same path

    def build_and_test(self, env: dict[str, str], log: Path) -> Built:
        """A fresh copy built with `env`, then tested."""
        log.unlink(missing_ok=True)
        shutil.rmtree(self.tree, ignore_errors=True)
        shutil.copytree(self.source, self.tree, symlinks=True)
        same_times(self.tree)
        failed = build_tree(self.tree / self.recipe.subdir, self.recipe, env, log)
        # A TMPDIR of their own: some suites leave files there (glog's log files).
        with tempfile.TemporaryDirectory(prefix="run-evidence-") as scratch:
            tested = _run(
                list(TESTS[self.package]),
                self.tree / self.recipe.subdir,
                {**env, "TMPDIR": scratch},
                log,
                TEST_TIMEOUT_S,
            )
        return Built(frozenset(step.split(":", 1)[0] for step in failed), tested)

    def coverage(self, relative: str, llvm_cov: str) -> dict[str, float]:
        """The share of `relative`'s lines the tests executed, per object compiled from it (the object's path
        in the tree without its suffix), from the .gcda files the tests left."""
        source = self.tree / relative
        shares = {}
        # Make's objects are named foo.o (foo.gcda), CMake's foo.c.o (foo.c.gcda).
        found = {*self.tree.rglob(f"*{source.stem}.gcda"), *self.tree.rglob(f"*{source.name}.gcda")}
        for gcda in sorted(found):
            done = subprocess.run(
                [llvm_cov, "gcov", "-n", "-o", str(gcda), str(source)],  # its .gcno: the .gcda's name
                cwd=gcda.parent,
                capture_output=True,
                text=True,
                timeout=GCOV_TIMEOUT_S,
            )
            for block in done.stdout.split("File '")[1:]:
                name = block.split("'", 1)[0]  # as compiled: absolute, or relative to the compile's directory
                match = _LINES.search(block)
                if match and _same_file(source, name, gcda.parent):
                    shares[str(gcda.with_suffix("").relative_to(self.tree))] = float(match.group(1)) / 100
        return shares

    def object_key(self, entry: BuildEntry) -> str | None:
        """The build-log entry's object as `coverage` names it."""
        if entry.output is None:
            return None
        try:
            return str((Path(entry.cwd) / entry.output).resolve().with_suffix("").relative_to(self.tree.resolve()))
        except ValueError:  # an object outside the tree (e.g. a test harness's in a temporary directory)
            return None

    def close(self) -> None:
        shutil.rmtree(self.tree, ignore_errors=True)
        self.lock.close()


def _same_file(path: Path, name: str, directory: Path) -> bool:
    """Whether gcov's `name` for a file (absolute, relative to the object's directory, or relative to another
    directory of the compile, e.g. the tree's root) is `path`."""
    if Path(name).is_absolute() or ".." in Path(name).parts:
        return (directory / name).resolve() == path.resolve()
    parts = tuple(part for part in Path(name).parts if part != ".")
    return path.parts[-len(parts) :] == parts


def base_env(jobs: int) -> dict[str, str]:
    return {
        **os.environ,
        "CFLAGS": BUILD_CFLAGS,
        "CXXFLAGS": BUILD_CFLAGS,
        "MAKEFLAGS": f"-j{jobs}",
        "FORCE_UNSAFE_CONFIGURE": "1",
    }


class Recorder:
    """The output directory: evidence first, then the attempt, so that a stop between them loses nothing."""

    def __init__(self, out: Path) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.evidence_file = out / "evidence.jsonl"
        self.attempts_file = out / "attempts.jsonl"
        self.done: set[tuple[str, str, str]] = set()
        if self.attempts_file.is_file():
            for line in self.attempts_file.read_text().splitlines():
                record = json.loads(line)
                if record["pipeline"] is None and record.get("tests") != _tests(record["package"]):
                    continue  # left out under another test command: tried again
                self.done.add((record["package"], pipeline_key(record["pipeline"] or ""), record["unit"]))

    def evidence(self) -> RunEvidence:
        return RunEvidence.load(self.evidence_file) if self.evidence_file.is_file() else RunEvidence()

    def record(self, win: Win, why: str | None, coverage: float | None, **extra: Any) -> None:
        """`why` it is not backed, or None when it is."""
        if why is None:
            backed = {
                "program": win.uri,
                "pipeline": win.pipeline,
                "tests": _tests(win.package),
                "coverage": coverage,
                "methods": list(win.methods),
            }
            _append(self.evidence_file, backed)
        attempt = {"package": win.package, "pipeline": win.pipeline, "unit": win.path, "methods": list(win.methods)}
        _append(self.attempts_file, {**attempt, "backed": why is None, "why": why, **extra, "time": time.time()})
        self.done.add(win.key())
        status(f"[{win.package}] {win.path}: {why or 'backed'} ({', '.join(win.methods)})")

    def left_out(self, package: str, path: str, why: str) -> None:
        """A unit no pipeline is built for (its package has no tests that run here, or they barely run it)."""
        record = {"package": package, "pipeline": None, "unit": path, "why": why, "tests": _tests(package)}
        _append(self.attempts_file, {**record, "time": time.time()})
        self.done.add((package, "", path))
        status(f"[{package}] {path}: {why}")


def _tests(package: str) -> str | None:
    return shlex.join(TESTS[package]) if package in TESTS else None


def _append(path: Path, record: dict[str, Any]) -> None:
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")


def gather(package: str, wins: list[Win], args: argparse.Namespace, recorder: Recorder) -> None:
    """The coverage build of `package`, then one build per pipeline of its exercised wins."""
    clang, llvm_cov = args.clang, args.llvm_cov
    logs = args.work / "logs" / package
    logs.mkdir(parents=True, exist_ok=True)
    tree = PackageTree(package, args.work)
    try:
        # In the compiler's name, not CFLAGS: some Makefiles link without CFLAGS and LDFLAGS.
        env = {**base_env(args.jobs), "CC": f"{clang} --coverage", "CXX": f"{clang}++ --coverage"}
        start = time.perf_counter()
        reference = tree.build_and_test(env, logs / "coverage.log")
        coverage = {path: tree.coverage(path, llvm_cov) for path in sorted({w.path for w in wins})}
        seen = ", ".join(f"{Path(p).name} {max(c.values(), default=0):.0%}" for p, c in coverage.items())
        took = time.perf_counter() - start
        status(
            f"[{package}] coverage build: tests {'passed' if reference.tested else 'FAILED'} in {took:.0f} s; {seen}"
        )
        if not reference.tested:
            for path in coverage:
                recorder.left_out(package, path, "the tests fail without any list (coverage build)")
            return
        by_pipeline: dict[str, list[Win]] = defaultdict(list)
        for win in wins:
            best = max(coverage[win.path].values(), default=0.0)
            if best >= MIN_COVERAGE:
                by_pipeline[win.pipeline].append(win)
            elif (package, "", win.path) not in recorder.done:
                recorder.left_out(package, win.path, f"the tests execute {best:.0%} of its lines at most")
        for pipeline, units in sorted(by_pipeline.items()):
            _list_build(tree, pipeline, units, reference, coverage, args, recorder)
    finally:
        tree.close()


def _list_build(
    tree: PackageTree,
    pipeline: str,
    units: list[Win],
    reference: Built,
    coverage: dict[str, dict[str, float]],
    args: argparse.Namespace,
    recorder: Recorder,
) -> None:
    """The package built with `pipeline` through the wrapper and tested; each unit's win judged and recorded."""
    name = hashlib.sha256(pipeline.encode()).hexdigest()[:12]
    logs = args.work / "logs" / tree.package
    build_log = logs / f"{name}.jsonl"
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
    built = tree.build_and_test(env, logs / f"{name}.log")
    entries = read_log(build_log) if build_log.is_file() else []
    seconds = round(time.perf_counter() - start, 1)
    optimized = sum(e.outcome == "optimized" for e in entries)
    # Units where the list failed (opt crashed, say): the wrapper built them with the real compiler.
    failed_units = sorted(str(e.unit) for e in entries if e.outcome == "failed")
    status(f"[{tree.package}] list {name}: {optimized} of {len(entries)} units built with it, {seconds:.0f} s")
    for win in units:
        source = (tree.tree / win.path).resolve()
        compiled = [e for e in entries if e.unit and Path(e.unit).resolve() == source]
        # The last compile of each object is the one linked (a later make may build it again).
        mine = list({tree.object_key(e) or str(i): e for i, e in enumerate(compiled)}.values())
        why, share = _judge(win, mine, built, reference, coverage[win.path], tree)
        facts = {"seconds": seconds, "tests_passed": built.tested, "failed_units": failed_units}
        recorder.record(win, why, share, **facts, log=build_log.name)


def _judge(
    win: Win,
    entries: list[BuildEntry],
    built: Built,
    reference: Built,
    coverage: dict[str, float],
    tree: PackageTree,
) -> tuple[str | None, float | None]:
    """(why the build does not back the unit's win or None, the executed share of the object that backs it)."""
    if not built.tested:
        return "the tests FAILED", None
    if built.failed - reference.failed:
        return (
            f"build steps failed that the coverage build passed: {', '.join(sorted(built.failed - reference.failed))}",
            None,
        )
    if not entries:
        return "not in the build log", None
    outcomes = []
    for entry in entries:
        share = coverage.get(tree.object_key(entry) or "", 0.0)
        if entry.outcome != "optimized" or pipeline_key(entry.pipeline or "") != pipeline_key(win.pipeline):
            outcomes.append(
                f"{entry.output}: built {entry.outcome} ({entry.reason or 'the list lost or failed a guard'})"
            )
        elif entry.bytes != win.size:
            outcomes.append(f"{entry.output}: {entry.bytes} bytes, the evaluation measured {win.size}")
        elif share < MIN_COVERAGE:
            outcomes.append(f"{entry.output}: the tests execute {share:.0%} of its lines")
        else:
            return None, share
    return "; ".join(outcomes), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluation", type=Path, action="append", required=True)
    parser.add_argument("--packages", default="", help="only these (default: every package with a win)")
    parser.add_argument("--out", type=Path, default=Path("data/heldout/evidence-debian"))
    parser.add_argument("--work", type=Path, default=default_cache_dir() / "run-evidence", help="sources, logs")
    parser.add_argument("--wrapper", type=Path, default=Path(sys.executable).with_name("stitchopt-cc"))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    toolchain = find_toolchain()
    args.clang, args.llvm_cov = toolchain.tool("clang"), str(Path(toolchain.tool("opt")).parent / "llvm-cov")
    recorder = Recorder(args.out)
    wins = unbacked_wins(args.evaluation, recorder.evidence())
    by_package: dict[str, list[Win]] = defaultdict(list)
    for win in wins:
        if win.key() not in recorder.done and (win.package, "", win.path) not in recorder.done:
            by_package[win.package].append(win)
    chosen = [p for p in (args.packages.split(",") if args.packages else by_package) if p in by_package]
    status(f"{len(wins)} unbacked wins, {sum(map(len, by_package.values()))} not tried; packages: {', '.join(chosen)}")
    for package in chosen:
        if package not in TESTS:
            for path in sorted({w.path for w in by_package[package]}):
                recorder.left_out(package, path, NO_TESTS.get(package, "no test suite known to this script"))
            continue
        try:
            gather(package, by_package[package], args, recorder)
        except Exception as error:  # one package's failure (fetch, build system, llvm-cov) leaves the others
            status(f"[{package}] FAILED: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
