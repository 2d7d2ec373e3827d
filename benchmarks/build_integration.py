"""Build integration: real open-source C projects built with the model, tested with their own suites.

Each project is built with plain clang -Oz (the baseline), through the wrapper `stitchopt-cc` with the shipped
model (`STITCHOPT_MODEL=default`) in each mode: static, jit (`STITCHOPT_K=5`) and tune (a small budget), all through
its compile server (`stitchopt serve`, started by the first compile of each cold build), static also without
it (`static-inprocess`: a Python process per compile, as before the server), and
with plain clang and the pass plugin (`-fpass-plugin=`): `plugin` (static, exact policy), `plugin-fast` (one
pipeline) and `plugin-jit` (k=5). Plugin builds also sum, from the build log, the seconds each phase took
inside the compiler (features, model, measuring candidates, the chosen pipeline). Every build
is done cold (a fresh `STITCHOPT_CACHE_DIR`) and warm (`make clean` and a rebuild with the same cache), and each
is followed by the project's own test suite. Sizes are allocated bytes (`stitchopt.toolchain.elf`) summed over
every `.o` of the build tree and over every linked executable and shared object it produced, compared with the
-Oz build; units are counted from `STITCHOPT_BUILD_LOG`. Times are wall time (configure, the make of a
cold build, and make after `make clean` with the cache warm) as ratios to the plain clang build's. The
optimization level is -Oz in every build: CMake gets `CMAKE_C_FLAGS=-Oz` with a build type that adds no
flags, autotools gets `CFLAGS=-Oz`, which comes after (and so overrides) any -O the project adds itself.

Sources come from Debian's source packages (`apt-get source`, pinned versions in PROJECTS below), with a
private apt configuration under `--work` (the system's apt sources are not changed; only its mirror address is
read). None of them is in the training corpus (`stitchopt.datasets.sources.pypi.PACKAGES` and what those
packages vendor) or in the excluded benchmark suites. Needs cmake, make and dpkg-source (dpkg-dev).

    python benchmarks/build_integration.py [--projects jansson,json-c,libogg,pcre2]
        [--variants static,jit,tune,static-inprocess,plugin,plugin-fast,plugin-jit] [--tune-budget 30]
        [--validate-limit 20]
        [--jobs 2] [--work DIR] [--wrapper PATH] [--plugin PATH] [-o results.json] [--fetch-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from stitchopt.cc.client import server_paths, stop_server
from stitchopt.datasets.sources.apt import DebianArchive
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.plugin_library import PLUGIN_PATH


@dataclass(frozen=True)
class Project:
    name: str
    package: str  # Debian source package
    version: str  # Debian version, pinned
    system: Literal["cmake", "autotools"]
    options: tuple[str, ...]  # extra configure options (none change the optimization level)
    why: str  # why it is fair: not in the training corpus


PROJECTS = (
    Project(
        "jansson",
        "jansson",
        "2.14-2",
        "cmake",
        ("-DJANSSON_BUILD_SHARED_LIBS=ON",),
        "JSON library; the corpus's JSON code is ujson, simplejson and rapidjson, none vendors jansson",
    ),
    Project(
        "json-c",
        "json-c",
        "0.16-2",
        "cmake",
        ("-DDISABLE_WERROR=ON",),
        "JSON library; not on the corpus list and vendored by none of its packages",
    ),
    Project(
        "libogg",
        "libogg",
        "1.3.5-3",
        "autotools",
        (),
        "Ogg container library (Xiph); no corpus package is a media library",
    ),
    Project(
        "pcre2",
        "pcre2",
        "10.42-1",
        "autotools",
        (),
        "PCRE2 regex engine; the corpus's `regex` package has its own engine and vendors no PCRE",
    ),
)
BASELINE = "oz"
PLUGIN_VARIANTS = {"plugin": {}, "plugin-fast": {"STITCHOPT_POLICY": "fast"}, "plugin-jit": {"STITCHOPT_MODE": "jit"}}
IN_PROCESS = "static-inprocess"  # the wrapper without its compile server (STITCHOPT_SERVER=off), as before it
VARIANTS = (BASELINE, "static", "jit", "tune", IN_PROCESS, *PLUGIN_VARIANTS)
KINDS = ("cold", "warm")


def status(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- building


@dataclass
class Outcome:
    ok: bool = False
    configure_s: float | None = None
    build_s: float | None = None  # make alone (cold: after configure; warm: after make clean)
    tests_ok: bool | None = None
    tests_passed: int | None = None
    tests_failed: int | None = None
    test_s: float | None = None
    objects: dict[str, int] = field(default_factory=dict)  # relative path -> allocated bytes
    binaries: dict[str, int] = field(default_factory=dict)
    units: dict[str, int] = field(default_factory=dict)  # build log outcome -> count
    cache: dict[str, int] = field(default_factory=dict)  # hit / miss / none -> count
    reasons: dict[str, int] = field(default_factory=dict)  # passed_through / failed reasons -> count
    log_seconds: float | None = None
    fallbacks: list[str] = field(default_factory=list)  # the wrapper's own "stitchopt: ..." lines in the build output
    phases: dict[str, float] = field(default_factory=dict)  # plugin builds: seconds per phase, summed over units
    error: str | None = None


@dataclass
class Result:
    project: str
    variant: str
    cold: Outcome
    warm: Outcome


def _run(command: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float) -> tuple[bool, float]:
    """Run `command`, appending its output to `log`; (succeeded, wall seconds)."""
    start = time.perf_counter()
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        try:
            done = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
            ok = done.returncode == 0
        except subprocess.TimeoutExpired:
            out.write(f"\n(timed out after {timeout:.0f} s)\n")
            ok = False
    return ok, time.perf_counter() - start


class Build:
    """One project tree being built one way: its configure, make, clean and test commands.

    Every variant of a project is built at the same path (`tree`), so that paths compiled into the objects
    (`__FILE__` in assertions and messages) have the same length in each; the tree is moved aside afterwards."""

    def __init__(
        self, project: Project, source: Path, tree: Path, env: dict[str, str], jobs: int, cflags: str = "-Oz"
    ) -> None:
        self.project = project
        self.cflags = cflags
        self.tree = tree
        self.source = tree / "src"
        self.build = tree / "build"
        self.env = env
        self.jobs = jobs
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        shutil.copytree(source, self.source, symlinks=True)  # copy2 keeps mtimes: no autotools regeneration
        self.build.mkdir()

    def configure_command(self) -> list[str]:
        cc = self.env["CC"]
        if self.project.system == "cmake":
            return [
                "cmake",
                "-S",
                str(self.source),
                "-B",
                str(self.build),
                f"-DCMAKE_C_COMPILER={cc}",
                "-DCMAKE_BUILD_TYPE=Bench",
                f"-DCMAKE_C_FLAGS={self.cflags}",
                *self.project.options,
            ]
        return [str(self.source / "configure"), f"CC={cc}", f"CFLAGS={self.cflags}", *self.project.options]

    def make_command(self, target: str | None = None) -> list[str]:
        return ["make", f"-j{self.jobs}", *([target] if target else [])]

    def test_command(self) -> list[str]:
        if self.project.system == "cmake":
            return ["ctest", f"-j{self.jobs}", "--timeout", "600", "--output-on-failure"]
        return self.make_command("check")


_CTEST = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")
_AUTOMAKE = re.compile(r"^# (PASS|FAIL|XPASS|ERROR):\s+(\d+)", re.MULTILINE)


def parse_tests(output: str) -> tuple[int | None, int | None]:
    """(passed, failed) from ctest's summary or automake's test-suite summaries; None when neither is there."""
    ctest = _CTEST.findall(output)
    if ctest:
        failed, total = int(ctest[-1][1]), int(ctest[-1][2])
        return total - failed, failed
    counts: Counter[str] = Counter()
    for kind, number in _AUTOMAKE.findall(output):
        counts[kind] += int(number)
    if not counts:
        return None, None
    return counts["PASS"], counts["FAIL"] + counts["XPASS"] + counts["ERROR"]


def _probe(relative: Path) -> bool:
    """A configure-time probe (CMake's compiler identification and checks): no part of the project.
    Under CMake's `CMakeFiles/`, only a target's own `NAME.dir/` holds the project's objects."""
    parts = relative.parts
    if any(part.startswith("conftest") for part in parts):
        return True
    return any(part == "CMakeFiles" and not parts[i + 1].endswith(".dir") for i, part in enumerate(parts[:-1]))


def _elf_type(path: Path) -> int | None:
    with path.open("rb") as handle:
        head = handle.read(18)
    if len(head) < 18 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[16:18], "little" if head[5] == 1 else "big")


def measure_tree(build: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Allocated bytes of every object file and of every linked executable / shared object under `build`."""
    objects: dict[str, int] = {}
    binaries: dict[str, int] = {}
    for path in sorted(build.rglob("*")):
        relative = path.relative_to(build)
        if path.is_symlink() or not path.is_file() or _probe(relative):
            continue
        kind = _elf_type(path)
        if kind == 1 and path.suffix == ".o":  # ET_REL
            objects[str(relative)] = object_sizes(path.read_bytes()).size_bytes
        elif kind in (2, 3):  # ET_EXEC, ET_DYN
            binaries[str(relative)] = object_sizes(path.read_bytes()).size_bytes
    return objects, binaries


def read_build_log(path: Path, outcome: Outcome) -> None:
    if not path.is_file():
        return
    units: Counter[str] = Counter()
    cache: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    seconds = 0.0
    phases: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry: Any = json.loads(line)
        except ValueError:
            continue  # a line cut short by a killed compile
        if not isinstance(entry, dict):
            continue
        # The wrapper passes configure's probes through and says so; the plugin compiles them like any unit.
        probe = (entry.get("outcome") == "passed_through" and "probe" in str(entry.get("reason"))) or _probe(
            Path(str(entry.get("unit") or ""))
        )
        units["probe" if probe else str(entry.get("outcome"))] += 1
        cache[str(entry.get("cache") or "none")] += 1
        if entry.get("outcome") in ("passed_through", "failed") and entry.get("reason") and not probe:
            reasons[f"{entry['outcome']}: {str(entry['reason']).splitlines()[0][:120]}"] += 1
        seconds += float(entry.get("seconds") or 0.0)
        for phase, spent in (entry.get("phases") or {}).items() if not probe else ():
            phases[phase] += float(spent)
    outcome.units, outcome.cache, outcome.reasons = dict(units), dict(cache), dict(reasons)
    outcome.phases = {phase: round(spent, 3) for phase, spent in sorted(phases.items())}
    outcome.log_seconds = round(seconds, 3)


def _wrapper_messages(log: Path) -> list[str]:
    """What the wrapper printed about itself (e.g. a unit it built as asked after an error, without a log line)."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    return [line.strip()[:300] for line in text.splitlines() if line.startswith("stitchopt:")]


def run_variant(
    project: Project, source: Path, variant: str, args: argparse.Namespace, clang: str, base_env: dict[str, str]
) -> Result:
    root = args.work / "runs" / project.name / variant  # logs, cache, and the tree once built
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    env = dict(base_env)
    cflags = "-Oz"
    if variant == BASELINE:
        env["CC"] = clang
    elif variant in PLUGIN_VARIANTS:
        env.update(CC=clang, **PLUGIN_VARIANTS[variant])
        cflags = f"-Oz -fpass-plugin={args.plugin}"
    else:
        env.update(
            CC=str(args.wrapper),
            STITCHOPT_MODEL="default",
            STITCHOPT_MODE="static" if variant == IN_PROCESS else variant,
            STITCHOPT_CACHE_DIR=str(root / "cache"),
        )
        if variant == IN_PROCESS:
            env["STITCHOPT_SERVER"] = "off"
        stop_server(server_paths(create=False))  # a cold build starts its compile server, as a user's first does
        if variant == "jit":
            env["STITCHOPT_K"] = "5"
        if variant == "tune":
            env["STITCHOPT_BUDGET"] = str(args.tune_budget)
            env["STITCHOPT_VALIDATE_LIMIT"] = str(args.validate_limit)
    build = Build(project, source, args.work / "runs" / project.name / "tree", env, args.jobs, cflags)
    try:
        outcomes = _build_and_test(build, root, project, variant, args)
    finally:
        os.replace(build.tree, root / "tree")
    return Result(project.name, variant, outcomes["cold"], outcomes["warm"])


def _build_and_test(
    build: Build, root: Path, project: Project, variant: str, args: argparse.Namespace
) -> dict[str, Outcome]:
    """Cold build (configure, make) and warm rebuild (make clean, make), each followed by the tests."""
    outcomes = {kind: Outcome() for kind in KINDS}
    for kind in KINDS:
        outcome = outcomes[kind]
        log = root / f"{kind}.out"
        build_log = root / f"{kind}.jsonl"
        if variant != BASELINE:
            build.env["STITCHOPT_BUILD_LOG"] = str(build_log)
        label = f"[{project.name}/{variant}/{kind}]"
        if kind == "cold":
            ok, seconds = _run(build.configure_command(), build.build, build.env, log, args.timeout)
            outcome.configure_s = round(seconds, 3)
            if not ok:
                outcome.error = f"configure failed (see {log})"
                status(f"{label} configure FAILED after {seconds:.1f} s: {log}")
                outcomes["warm"].error = "no cold build"
                break
        else:
            _run(build.make_command("clean"), build.build, build.env, log, args.timeout)
        ok, seconds = _run(build.make_command(), build.build, build.env, log, args.timeout)
        outcome.ok = ok
        outcome.build_s = round(seconds, 3)  # make alone: configure is timed apart
        read_build_log(build_log, outcome)
        outcome.fallbacks = _wrapper_messages(log)
        if not ok:
            outcome.error = f"make failed (see {log})"
            status(f"{label} build FAILED after {seconds:.1f} s: {log}")
            if kind == "cold":
                outcomes["warm"].error = "no cold build"
                break
            continue
        outcome.objects, outcome.binaries = measure_tree(build.build)
        test_log = root / f"{kind}.test.out"
        test_ok, test_s = _run(build.test_command(), build.build, build.env, test_log, args.timeout)
        outcome.tests_ok, outcome.test_s = test_ok, round(test_s, 3)
        outcome.tests_passed, outcome.tests_failed = parse_tests(test_log.read_text(errors="replace"))
        units = ", ".join(f"{n} {name}" for name, n in sorted(outcome.units.items())) or "no build log"
        units += f", {len(outcome.fallbacks)} wrapper errors" if outcome.fallbacks else ""
        status(
            f"{label} built in {outcome.build_s:.1f} s ({len(outcome.objects)} objects, {units}); "
            f"tests {'ok' if test_ok else 'FAILED'} {_tests(outcome)} in {test_s:.1f} s"
        )
    return outcomes


# ---------------------------------------------------------------------------------------------- reporting


def _tests(outcome: Outcome) -> str:
    if outcome.tests_ok is None:
        return "-"
    if outcome.tests_passed is None:
        return "pass" if outcome.tests_ok else "fail"
    return f"{outcome.tests_passed}/{outcome.tests_failed}"


def _change(sizes: dict[str, int], baseline: dict[str, int]) -> float | None:
    """Percent change of the summed sizes over the files both builds have."""
    common = sizes.keys() & baseline.keys()
    before = sum(baseline[name] for name in common)
    if not common or before == 0:
        return None
    return 100.0 * (sum(sizes[name] for name in common) - before) / before


def _shared(binaries: dict[str, int]) -> dict[str, int]:
    return {name: size for name, size in binaries.items() if ".so" in Path(name).name}


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def _ratio(value: float | None, baseline: float | None) -> str:
    return "-" if value is None or not baseline else f"{value / baseline:.2f}x"


def summary(result: Result, baseline: Result) -> dict[str, Any]:
    cold, warm, base = result.cold, result.warm, baseline.cold
    return {
        "objects_vs_oz_percent": _change(cold.objects, base.objects),
        "binaries_vs_oz_percent": _change(cold.binaries, base.binaries),
        "shared_objects_vs_oz_percent": _change(_shared(cold.binaries), _shared(base.binaries)),
        "object_files_missing": sorted(base.objects.keys() - cold.objects.keys()),
        "tests_equal_oz": (cold.tests_ok, cold.tests_passed, cold.tests_failed)
        == (base.tests_ok, base.tests_passed, base.tests_failed),
        "warm_objects_equal_cold": warm.objects == cold.objects if warm.ok else None,
        "configure_time_vs_oz": cold.configure_s / base.configure_s if cold.configure_s and base.configure_s else None,
        "cold_time_vs_oz": cold.build_s / base.build_s if cold.build_s and base.build_s else None,
        "warm_time_vs_oz": warm.build_s / baseline.warm.build_s if warm.build_s and baseline.warm.build_s else None,
    }


def table(results: list[Result], baselines: dict[str, Result], title: str) -> Rows:
    rows = []
    for result in results:
        base = baselines[result.project]
        info = summary(result, base)
        cold, warm = result.cold, result.warm
        tests = _tests(cold) + ("" if result.variant == BASELINE or info["tests_equal_oz"] else " (differs from -Oz)")
        if warm.ok and _tests(warm) != _tests(cold):
            tests += f", warm {_tests(warm)}"
        units = "-" if result.variant == BASELINE else "no log"
        if cold.units:
            u = cold.units
            units = "/".join(str(u.get(k, 0)) for k in ("optimized", "oz", "passed_through", "failed"))
            units += f" ({u['probe']} probes)" if u.get("probe") else ""
        if cold.fallbacks or warm.fallbacks:
            units += f"; wrapper errors {len(cold.fallbacks)}/{len(warm.fallbacks)}"
        looked_up = warm.cache.get("hit", 0) + warm.cache.get("miss", 0)
        hits = f"{warm.cache.get('hit', 0)}/{looked_up}" if looked_up else "-"
        same = {True: "", False: " (objects differ)", None: ""}[info["warm_objects_equal_cold"]]
        rows.append(
            [
                result.project,
                result.variant,
                f"{'yes' if cold.ok else 'NO'}/{'yes' if warm.ok else 'NO'}",
                tests,
                _percent(info["objects_vs_oz_percent"]),
                f"{_percent(info['binaries_vs_oz_percent'])} (.so {_percent(info['shared_objects_vs_oz_percent'])})",
                units,
                f"{cold.configure_s or 0:.1f} s ({_ratio(cold.configure_s, base.cold.configure_s)})",
                f"{cold.build_s or 0:.1f} s ({_ratio(cold.build_s, base.cold.build_s)})",
                f"{warm.build_s or 0:.1f} s ({_ratio(warm.build_s, base.warm.build_s)}){same}",
                hits,
            ]
        )
    return Rows(
        title=title,
        headers=[
            "project",
            "variant",
            "build ok (cold/warm)",
            "tests pass/fail",
            "objects vs -Oz",
            "binaries vs -Oz (shared objects)",
            "units opt/oz/passed/failed",
            "configure (vs clang)",
            "cold make (vs clang)",
            "warm make (vs clang)",
            "warm cache hits",
        ],
        rows=rows,
    )


PHASES = ("features", "model", "candidates", "pipeline")


def phase_table(results: list[Result], baselines: dict[str, Result]) -> Rows:
    """Where a plugin build's time goes: seconds inside the compiler per phase, summed over units (cold
    build), beside the whole cold make and plain clang's."""
    rows = []
    for result in results:
        if result.variant not in PLUGIN_VARIANTS or not result.cold.ok:
            continue
        spent = result.cold.phases
        plain = baselines[result.project].cold.build_s
        rows.append(
            [
                result.project,
                result.variant,
                *(f"{spent.get(phase, 0.0):.2f}" for phase in PHASES),
                f"{result.cold.build_s or 0:.1f}",
                f"{plain or 0:.1f}",
            ]
        )
    headers = ["project", "variant", *(f"{phase} s" for phase in PHASES), "cold make s", "plain make s"]
    return Rows(title="Plugin builds: seconds per phase inside the compiler (cold)", headers=headers, rows=rows)


def _stitchopt_commit() -> str | None:
    done = subprocess.run(
        ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or None


def _default_wrapper() -> Path:
    beside = Path(sys.executable).parent / "stitchopt-cc"
    found = beside if beside.is_file() else shutil.which("stitchopt-cc")
    return Path(found) if found else beside


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", default=",".join(p.name for p in PROJECTS))
    parser.add_argument(
        "--variants", default=",".join(VARIANTS[1:]), help=f"of {', '.join(VARIANTS[1:])}; -Oz always runs"
    )
    parser.add_argument("--tune-budget", type=int, default=30, help="STITCHOPT_BUDGET for tune")
    parser.add_argument("--validate-limit", type=int, default=20, help="STITCHOPT_VALIDATE_LIMIT for tune")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "stitchopt" / "build-bench")
    parser.add_argument("--wrapper", type=Path, default=_default_wrapper(), help="the stitchopt-cc to use")
    parser.add_argument("--plugin", type=Path, default=PLUGIN_PATH, help="the pass plugin to use")
    parser.add_argument("--timeout", type=float, default=10800.0, help="seconds for one configure, make or test step")
    parser.add_argument("--fetch-only", action="store_true", help="download and unpack the sources, then stop")
    parser.add_argument("-o", "--output", type=Path, help="write machine-readable results (JSON) here")
    args = parser.parse_args()

    known = {p.name: p for p in PROJECTS}
    projects = [known[name] for name in args.projects.split(",") if name in known]
    unknown = [name for name in args.projects.split(",") if name not in known]
    variants = [v for v in args.variants.split(",") if v and v != BASELINE]
    if unknown or any(v not in VARIANTS for v in variants):
        parser.error(f"projects are {', '.join(known)}; variants are {', '.join(VARIANTS[1:])}")
    if any(v not in PLUGIN_VARIANTS for v in variants) and not os.access(args.wrapper, os.X_OK):
        parser.error(f"{args.wrapper}: no stitchopt-cc there (use --wrapper)")
    if any(v in PLUGIN_VARIANTS for v in variants) and not args.plugin.is_file():
        parser.error(f"{args.plugin}: no plugin there (use --plugin; `stitchopt plugin path` says where it is)")
    args.work = args.work.absolute()

    toolchain = find_toolchain()
    clang = toolchain.tool("clang")
    apt = DebianArchive(args.work / "apt")
    sources = {
        p.name: apt.fetch(p.package, p.version, args.work / "sources" / f"{p.package}_{p.version}") for p in projects
    }
    if args.fetch_only:
        for name, tree in sources.items():
            print(f"{name}: {tree}")
        return

    base_env = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_") and k != "MAKEFLAGS"}
    base_env.update(LC_ALL="C")
    results: list[Result] = []
    baselines: dict[str, Result] = {}
    for project in projects:
        for variant in [BASELINE, *variants]:
            result = run_variant(project, sources[project.name], variant, args, clang, base_env)
            results.append(result)
            if variant == BASELINE:
                baselines[project.name] = result

    title = (
        f"Build integration (LLVM {toolchain.version_string}, -j{args.jobs}, tune budget {args.tune_budget}, "
        f"validate limit {args.validate_limit})"
    )
    rows = table(results, baselines, title)
    print(f"## {rows.title}\n")
    print(to_markdown(rows))
    phases = phase_table(results, baselines)
    if phases.rows:
        print(f"\n## {phases.title}\n")
        print(to_markdown(phases))
    if args.output:
        document = {
            "llvm": toolchain.version_string,
            "stitchopt_commit": _stitchopt_commit(),
            "jobs": args.jobs,
            "tune_budget": args.tune_budget,
            "validate_limit": args.validate_limit,
            "wrapper": str(args.wrapper),
            "projects": [asdict(p) for p in projects],
            "results": [
                {**asdict(r), "summary": summary(r, baselines[r.project]) if r.variant != BASELINE else None}
                for r in results
            ],
        }
        args.output.write_text(json.dumps(document, indent=1) + "\n")
        status(f"results: {args.output}")


if __name__ == "__main__":
    main()
