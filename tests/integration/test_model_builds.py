"""Model builds through the real wrapper and the real LLVM: everything but the pass pipeline is the compiler's
own, what a pipeline cannot honour is passed through and counted, compile-and-link commands are split, and a
warm rebuild comes from the object cache."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore, store_path
from stitchopt.cc.model_builds import object_with_pipeline, opt_options
from stitchopt.cc.plan import CompilePlan, plan_command
from stitchopt.learning.kinds import load_model
from stitchopt.models.prediction_cache import KIND as PREDICTION
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import load_catalogue
from stitchopt.toolchain.baselines import clang_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble, module_from_bitcode
from stitchopt.toolchain.process import run_tool
from stitchopt.validate.suites import DATA_DIR_ENV, HUMANEVAL_FILE

BIN = Path(sys.executable).parent
SOURCE = """#include <stdio.h>
#include <string.h>
static int table[64];
struct node { struct node *next; int v; };
int sum(struct node *n) { int s = 0; for (; n; n = n->next) s += n->v * table[n->v & 63]; return s; }
void fill(char *buf, const char *src) { strcpy(buf, src); for (int i = 0; i < 64; i++) table[i] = i * 3; }
int main(int argc, char **argv) {
  char b[32]; fill(b, argc > 1 ? argv[1] : "hi"); struct node x = {0, argc};
  printf("%s %d\\n", b, sum(&x)); return 0;
}
"""
UTIL = "int twice(int x) { return 2 * x; }\n"
USES_UTIL = '#include <stdio.h>\nint twice(int);\nint main(void) { printf("%d\\n", twice(21)); return 0; }\n'
FLAG_MATRIX = [
    [],
    ["-g"],
    ["-ffunction-sections", "-fdata-sections"],
    ["-fno-asynchronous-unwind-tables"],
    ["-fPIC"],
    ["-fno-pic"],
    ["-march=haswell"],
    ["-fno-omit-frame-pointer"],
    ["-mcmodel=large"],
    ["-fstack-protector-strong"],
    ["-D_FORTIFY_SOURCE=2"],
    ["-fno-builtin", "-ffreestanding"],
    ["-g", "-ffunction-sections", "-fPIC", "-march=x86-64-v3", "-fno-omit-frame-pointer"],
]


@pytest.fixture()
def unit_dir(tmp_path: Path) -> Path:
    (tmp_path / "a.c").write_text(SOURCE)
    (tmp_path / "util.c").write_text(UTIL)
    (tmp_path / "main.c").write_text(USES_UTIL)
    return tmp_path


@pytest.fixture()
def build_env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_")}
    return {**clean, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "STITCHOPT_BUILD_LOG": str(tmp_path / "log.jsonl")}


def _cc(tmp_path: Path) -> str:
    installed = BIN / "stitchopt-cc"
    if installed.is_file():
        return str(installed)
    shim = tmp_path / "bin" / "stitchopt-cc"
    shim.parent.mkdir(exist_ok=True)
    entry = "import sys; from stitchopt.cc.wrapper import main_cc; sys.exit(main_cc())"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -c '{entry}' \"$@\"\n")
    shim.chmod(0o755)
    return str(shim)


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=300)


def _log(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("flags", FLAG_MATRIX, ids=lambda flags: " ".join(flags) or "plain")
def test_with_clangs_own_oz_pipeline_the_object_is_byte_identical_to_clang_oz(
    toolchain: Toolchain, unit_dir: Path, flags: list[str]
) -> None:
    """Exact by construction: the front end and code generation are clang with the user's flags; only the
    pipeline in between is ours, and clang's -Oz pipeline through it gives clang's -Oz object."""
    clang = toolchain.tool("clang")
    plan = plan_command(
        [*flags, "-O2", "-c", "a.c", "-o", "a.o"], cxx_driver=False, clang=clang, real_compiler_is_clang=True
    )
    assert isinstance(plan, CompilePlan)
    bitcode = unit_dir / "a.bc"
    assert run_tool(plan.frontend_argv(plan.units[0], bitcode), cwd=str(unit_dir)).returncode == 0
    options = opt_options(plan, disassemble(toolchain, bitcode.read_bytes(), "a.bc"))
    pipeline = clang_pipeline(toolchain, "Oz")
    built = object_with_pipeline(plan, toolchain.tool("opt"), options, bitcode, unit_dir / "ours", pipeline)
    reference = run_tool([clang, *flags, "-Oz", "-c", "a.c", "-o", "ref.o"], cwd=str(unit_dir))
    assert reference.returncode == 0
    assert built.path.read_bytes() == (unit_dir / "ref.o").read_bytes()


def test_a_fixed_list_build_is_clang_oz_exactly_with_its_dependency_file(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    env = {**build_env, "STITCHOPT_LIST": clang_pipeline(toolchain, "Oz")}
    flags = ["-g", "-ffunction-sections", "-MD", "-MP", "-c", "a.c"]
    done = _run([_cc(unit_dir), "-O2", *flags, "-o", "ours.o"], unit_dir, env)
    assert done.returncode == 0, done.stderr
    assert _run([toolchain.tool("clang"), "-Oz", *flags, "-o", "ref.o"], unit_dir, env).returncode == 0
    assert (unit_dir / "ours.o").read_bytes() == (unit_dir / "ref.o").read_bytes()
    assert (unit_dir / "ours.d").read_text() == (unit_dir / "ref.d").read_text().replace("ref.o", "ours.o")
    [entry] = _log(unit_dir)
    assert entry["outcome"] == "oz" and entry["candidates"] == 1 and entry["bytes"] == entry["oz_bytes"]


def test_instrumentation_lto_probes_devices_and_other_compilers_pass_through_counted(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    env = {**build_env, "STITCHOPT_MODEL": "default"}
    cc = _cc(unit_dir)
    assert _run([cc, "-Oz", "-fsanitize=address", "-c", "a.c", "-o", "asan.o"], unit_dir, env).returncode == 0
    assert b"__asan" in (unit_dir / "asan.o").read_bytes()
    assert _run([cc, "-Oz", "--coverage", "-c", "a.c", "-o", "cov.o"], unit_dir, env).returncode == 0
    assert b"llvm_gcov" in (unit_dir / "cov.o").read_bytes() or b"__gcov" in (unit_dir / "cov.o").read_bytes()
    assert _run([cc, "-Oz", "-flto", "-c", "a.c", "-o", "lto.o"], unit_dir, env).returncode == 0
    assert (unit_dir / "lto.o").read_bytes()[:2] == b"BC"  # bitcode for the linker, as asked
    probe = _run([cc, "-Oz", "-c", "-x", "c", "/dev/null", "-o", "/dev/null"], unit_dir, env)
    assert probe.returncode == 0 and Path("/dev/null").is_char_device()
    streamed = _run([cc, "-Oz", "-c", "a.c", "-o", "-"], unit_dir, env)
    assert streamed.returncode == 0 and streamed.stdout[:4] == b"\x7fELF" and not (unit_dir / "-").exists()
    reasons = [str(entry["reason"]) for entry in _log(unit_dir)]
    assert [entry["outcome"] for entry in _log(unit_dir)] == ["passed_through"] * 5
    assert reasons[0].startswith("instrumentation (-fsanitize=address)") and reasons[2].startswith("LTO")
    assert "not a regular file" in reasons[3] and "standard output" in reasons[4]
    gcc = shutil.which("gcc")
    if gcc is not None:  # a launcher for another compiler: its object, untouched
        done = _run([cc, gcc, "-Os", "-c", "a.c", "-o", "gcc.o"], unit_dir, env)
        assert done.returncode == 0 and b"GCC" in (unit_dir / "gcc.o").read_bytes()
        assert "not the toolchain's clang" in str(_log(unit_dir)[-1]["reason"])


def test_compile_and_link_commands_are_split_into_optimized_units_and_linked(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    env = {**build_env, "STITCHOPT_MODE": "jit", "STITCHOPT_K": "2"}
    done = _run([_cc(unit_dir), "-O2", "main.c", "util.c", "-o", "prog", "-lm"], unit_dir, env)
    assert done.returncode == 0, done.stderr
    assert b"warning" not in done.stderr  # the link's -lm is not reported unused by the compiles
    assert subprocess.run([str(unit_dir / "prog")], capture_output=True, text=True).stdout == "42\n"
    entries = _log(unit_dir)
    assert [Path(str(entry["unit"])).name for entry in entries] == ["main.c", "util.c"]
    assert [entry["language"] for entry in entries] == ["c", "c"]  # what the model read the units as
    assert all(entry["candidates"] == 2 and entry["output"] is None for entry in entries)
    assert all(int(str(entry["bytes"])) <= int(str(entry["oz_bytes"])) for entry in entries)


def test_a_c_file_compiled_as_cxx_is_answered_as_cxx(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    """`-x c++ util.c` is C++: the model ranks the unit as C++ (its answer cached under that language) and the
    log says so, though the IR names a `.c` file."""
    command = ["-c", "-x", "c++", "util.c", "-o", "util.o"]
    done = _run([_cc(unit_dir), *command], unit_dir, {**build_env, "STITCHOPT_MODE": "static"})
    assert done.returncode == 0, done.stderr
    assert _log(unit_dir)[-1]["language"] == "c++"
    plan = plan_command(command, cxx_driver=False, clang=toolchain.tool("clang"), real_compiler_is_clang=True)
    assert isinstance(plan, CompilePlan)
    bitcode = unit_dir / "util.bc"
    assert run_tool(plan.frontend_argv(plan.units[0], bitcode), cwd=str(unit_dir)).returncode == 0
    module = module_from_bitcode(toolchain, bitcode.read_bytes(), "util.c")
    assert module.source_filename == "util.c"
    model = load_model(DEFAULT_MODEL_DIR, load_catalogue(toolchain))
    key = (model.identity, toolchain.identity, module.sha256)
    with EvaluationStore(store_path(Path(build_env["STITCHOPT_CACHE_DIR"]))) as store:
        assert store.get_artifact(PREDICTION, *key, "c++") is not None
        assert store.get_artifact(PREDICTION, *key, "c") is None


def test_diagnostics_appear_once_and_the_links_output_and_status_are_the_users(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    """Warnings of a unit built before another one fails are held, so the compiler's rerun does not repeat
    them; a link error is the user's own (same status, same messages)."""
    (unit_dir / "warn.c").write_text("int unused_warning(void) { int x; return 0; }\n")
    (unit_dir / "bad.c").write_text("int f( {\n")
    (unit_dir / "undefined.c").write_text("int missing(void);\nint main(void) { return missing(); }\n")
    env = {**build_env, "STITCHOPT_MODEL": "default"}
    for command in (["-Wall", "-c", "warn.c", "bad.c"], ["-Wall", "warn.c", "undefined.c", "-o", "prog"]):
        ours = _run([_cc(unit_dir), *command], unit_dir, env)
        plain = _run([toolchain.tool("clang"), *command], unit_dir, env)
        assert ours.returncode == plain.returncode != 0
        assert ours.stderr.count(b"warning: unused variable") == plain.stderr.count(b"warning: unused variable") == 1
    traced = _run([_cc(unit_dir), "main.c", "util.c", "-Wl,--trace", "-o", "prog"], unit_dir, env)
    assert traced.returncode == 0 and b"libc" in traced.stdout  # the linker's own output reaches the user
    (unit_dir / "extra.c").write_text("#ifdef EXTRA\nint extra_defined = EXTRA;\n#endif\n")
    env = {**env, "STITCHOPT_REAL_CC": f"{toolchain.tool('clang')} -DEXTRA=7"}
    assert _run([_cc(unit_dir), "-c", "extra.c", "-o", "extra.o"], unit_dir, env).returncode == 0
    assert b"extra_defined" in (unit_dir / "extra.o").read_bytes()  # the real compiler's own words count


def test_a_warm_rebuild_comes_from_the_object_cache_and_codegen_flags_are_in_its_key(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    env = {**build_env, "STITCHOPT_MODEL": "default"}
    cc = _cc(unit_dir)
    for output in ("cold.o", "warm.o"):
        assert _run([cc, "-O2", "-c", "a.c", "-o", output], unit_dir, env).returncode == 0
    assert _run([cc, "-O2", "-fno-pic", "-c", "a.c", "-o", "nopic.o"], unit_dir, env).returncode == 0
    cold, warm, nopic = _log(unit_dir)
    assert (cold["cache"], warm["cache"], nopic["cache"]) == ("miss", "hit", "miss")
    assert (unit_dir / "cold.o").read_bytes() == (unit_dir / "warm.o").read_bytes()
    assert warm["plain_seconds"] is None and warm["pipeline"] == cold["pipeline"]
    assert (unit_dir / "nopic.o").read_bytes() != (unit_dir / "cold.o").read_bytes()


def test_a_unit_that_fails_names_itself_and_the_compiler_builds_it_as_asked(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    env = {**build_env, "STITCHOPT_LIST": "no-such-pass"}
    done = _run([_cc(unit_dir), "-O2", "-c", "a.c", "-o", "a.o"], unit_dir, env)
    assert done.returncode == 0
    assert b"a.c: unknown pass 'no-such-pass'" in done.stderr and b"built it as asked" in done.stderr
    assert done.stderr.count(b"\n") == 1
    assert _run([toolchain.tool("clang"), "-O2", "-c", "a.c", "-o", "ref.o"], unit_dir, env).returncode == 0
    assert (unit_dir / "a.o").read_bytes() == (unit_dir / "ref.o").read_bytes()
    [entry] = _log(unit_dir)
    assert entry["outcome"] == "failed" and str(entry["reason"]).startswith("unknown pass 'no-such-pass'")
    bad = _run([_cc(unit_dir), "-c", "a.c", "-o", "b.o"], unit_dir, {**build_env, "STITCHOPT_MODE": "fastest"})
    assert bad.returncode == 0 and bad.stderr.count(b"\n") == 1 and b"use one of static, jit, tune" in bad.stderr
    broken = unit_dir / "broken.c"
    broken.write_text("int f( {\n")
    failed = _run([_cc(unit_dir), "-c", "broken.c"], unit_dir, {**build_env, "STITCHOPT_MODEL": "default"})
    plain = _run([toolchain.tool("clang"), "-c", "broken.c"], unit_dir, build_env)
    assert failed.returncode == plain.returncode == 1
    assert failed.stderr == plain.stderr  # the compiler's own diagnostics, once
    assert len(_log(unit_dir)) == 1  # a compile error is the user's, not a failure of the model build
    lost = _run(
        [_cc(unit_dir), "-c", "a.c"],
        unit_dir,
        {**build_env, "STITCHOPT_MODEL": "default", "STITCHOPT_CACHE_DIR": "/dev/null/cache"},
    )
    assert lost.returncode == 0 and lost.stderr.count(b"\n") == 1 and b"building as asked" in lost.stderr
    assert _log(unit_dir)[-1]["outcome"] == "failed" and "evaluation cache" in str(_log(unit_dir)[-1]["reason"])


def test_a_list_opt_cannot_parse_fails_the_unit_like_an_unknown_pass(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    """The user's own list is never dropped silently: `opt` rejecting it (unbalanced parentheses) is one line
    and a `failed` unit, and the compiler builds the command as asked."""
    env = {**build_env, "STITCHOPT_LIST": "function(sroa"}
    done = _run([_cc(unit_dir), "-O2", "-c", "a.c", "-o", "a.o"], unit_dir, env)
    assert done.returncode == 0
    assert done.stderr.count(b"\n") == 1 and b"a.c: opt exited 1: invalid pipeline 'function(sroa'" in done.stderr
    assert b"built it as asked" in done.stderr
    assert _run([toolchain.tool("clang"), "-O2", "-c", "a.c", "-o", "ref.o"], unit_dir, env).returncode == 0
    assert (unit_dir / "a.o").read_bytes() == (unit_dir / "ref.o").read_bytes()
    [entry] = _log(unit_dir)
    assert entry["outcome"] == "failed" and "invalid pipeline 'function(sroa'" in str(entry["reason"])


def test_an_output_that_cannot_be_written_is_logged_failed_with_the_compilers_status(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    env = {**build_env, "STITCHOPT_MODEL": "default"}
    done = _run([_cc(unit_dir), "-c", "a.c", "-o", "/proc/a.o"], unit_dir, env)
    plain = _run([toolchain.tool("clang"), "-c", "a.c", "-o", "/proc/a.o"], unit_dir, env)
    assert done.returncode == plain.returncode != 0
    ours = done.stderr.decode().replace(plain.stderr.decode(), "", 1)  # the compiler's own error, then ours
    assert ours.count("\n") == 1 and "a.c: cannot write /proc/a.o: No such file or directory;" in ours
    assert f"the compiler failed too (exit {plain.returncode})" in ours and "built it as asked" not in ours
    [entry] = _log(unit_dir)
    assert entry["outcome"] == "failed" and entry["reason"] == "cannot write /proc/a.o: No such file or directory"


def test_a_tune_build_whose_search_fails_keeps_the_models_choice_or_oz_and_says_why(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    """No validation suite (a csmith that fails, as a slow seed did): the unit is still built as static mode
    builds it, never the plain command's object; one warning line says why, and the object is not cached."""
    fake = unit_dir / "fake"
    (fake / "include" / "csmith").mkdir(parents=True)
    (fake / "include" / "csmith" / "csmith.h").touch()
    csmith = fake / "bin" / "csmith"
    csmith.parent.mkdir()
    csmith.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "csmith fake" && exit 0\necho "out of luck" >&2\nexit 1\n'
    )
    csmith.chmod(0o755)
    env = {**build_env, "STITCHOPT_MODE": "tune", "PATH": f"{csmith.parent}{os.pathsep}{build_env['PATH']}"}
    for output in ("first.o", "again.o"):
        done = _run([_cc(unit_dir), "-O2", "-c", "a.c", "-o", output], unit_dir, env)
        assert done.returncode == 0, done.stderr
        assert done.stderr.count(b"\n") == 1 and done.stderr.startswith(b"stitchopt: warning: ")
        assert b"a.c: the tune search failed (csmith --seed 1 failed" in done.stderr and b"out of luck" in done.stderr
    first, again = _log(unit_dir)
    assert first["outcome"] in ("optimized", "oz") and again["cache"] == "miss"  # a rebuild searches again
    assert int(str(first["bytes"])) <= int(str(first["oz_bytes"])) and first["candidates"] == 1
    assert "the tune search failed" in str(first["reason"])
    assert _run([toolchain.tool("clang"), "-Oz", "-c", "a.c", "-o", "oz.o"], unit_dir, env).returncode == 0
    if first["outcome"] == "oz":
        assert (unit_dir / "first.o").read_bytes() == (unit_dir / "oz.o").read_bytes()


def test_a_read_only_cache_is_one_warning_line_and_the_build_goes_on(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    """On a read-only mount (a private mount namespace, as root) the wrapper says so as the CLI does: one
    line, no Python source location."""
    env = {**build_env, "STITCHOPT_MODEL": "default"}
    cc = _cc(unit_dir)
    assert _run([cc, "-c", "util.c"], unit_dir, env).returncode == 0  # creates the cache
    cache = build_env["STITCHOPT_CACHE_DIR"]
    mount = f'mount --bind {cache} {cache} && mount -o remount,bind,ro {cache} && exec "$@"'
    done = _run(["unshare", "--mount", "sh", "-c", mount, "sh", cc, "-c", "a.c"], unit_dir, env)
    if done.returncode != 0 and (b"unshare:" in done.stderr or b"mount:" in done.stderr):
        pytest.skip(f"no private read-only mount here: {done.stderr.decode().strip()[:200]}")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(b"\n") == 1 and done.stderr.startswith(b"stitchopt: warning: the evaluation cache")
    assert b"read-only" in done.stderr and b"CacheWarning" not in done.stderr
    assert _log(unit_dir)[-1]["outcome"] in ("optimized", "oz")


@pytest.mark.slow
def test_tune_mode_searches_each_unit_within_its_budget_and_keeps_only_validated_lists(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    data = Path(os.environ.get(DATA_DIR_ENV, Path(__file__).parents[3] / "shared" / "data"))
    if not (data / HUMANEVAL_FILE).is_file():
        pytest.skip(f"no HumanEval-X data at {data}")
    env = {**build_env, "STITCHOPT_MODE": "tune", "STITCHOPT_BUDGET": "12", "STITCHOPT_VALIDATE_LIMIT": "3"}
    done = _run([_cc(unit_dir), "-O2", "-c", "a.c", "-o", "a.o"], unit_dir, {**env, DATA_DIR_ENV: str(data)})
    assert done.returncode == 0, done.stderr
    [entry] = _log(unit_dir)
    assert entry["mode"] == "tune" and entry["outcome"] in ("optimized", "oz")
    assert int(str(entry["bytes"])) <= int(str(entry["oz_bytes"])) and 1 <= int(str(entry["candidates"])) <= 2
    if entry["outcome"] == "optimized":
        assert subprocess.run([toolchain.tool("clang"), "a.o", "-o", "prog"], cwd=unit_dir).returncode == 0
        assert subprocess.run([str(unit_dir / "prog"), "x"], capture_output=True, text=True).stdout == "x 12\n"


def test_the_build_report_sums_up_a_log_of_replaced_passed_through_and_failed_units(
    toolchain: Toolchain, unit_dir: Path, build_env: dict[str, str]
) -> None:
    cc = _cc(unit_dir)
    jit = {**build_env, "STITCHOPT_MODE": "jit", "STITCHOPT_K": "3"}
    assert _run([cc, "-O2", "main.c", "util.c", "a.c", "-c"], unit_dir, jit).returncode == 0
    assert _run([cc, "-fsanitize=address", "-c", "a.c", "-o", "asan.o"], unit_dir, jit).returncode == 0
    assert _run([cc, "-c", "a.c"], unit_dir, {**build_env, "STITCHOPT_LIST": "no-such-pass"}).returncode == 0
    entries = _log(unit_dir)
    saved = sum(int(str(e["oz_bytes"])) - int(str(e["bytes"])) for e in entries if e["outcome"] in ("optimized", "oz"))
    report = subprocess.run(
        [sys.executable, "-m", "stitchopt", "report", "build", "log.jsonl", "-o", "build.html"],
        cwd=unit_dir,
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    page = (unit_dir / "build.html").read_text()
    assert "of 5 units smaller than -Oz" in page and "instrumentation" in page and "no-such-pass" in page
    printed = subprocess.run(
        [sys.executable, "-m", "stitchopt", "report", "build", "log.jsonl", "--format", "csv", "-o", "build.csv"],
        cwd=unit_dir,
        capture_output=True,
        text=True,
    )
    assert printed.returncode == 0, printed.stderr
    rows = list(csv.reader((unit_dir / "build.csv").read_text().splitlines()))
    header = next(row for row in rows if row[:1] == ["mode"])
    jit_row = dict(zip(header, next(row for row in rows if row[:1] == ["jit"]), strict=True))
    assert (jit_row["units"], jit_row["passed"], jit_row["saved"]) == ("4", "1", str(saved))
