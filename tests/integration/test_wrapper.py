"""`stitchopt-cc` / `stitchopt-c++` as builds run them: same objects as plain clang, plus recorded IR."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stitchopt.toolchain.discovery import Toolchain

BIN = Path(sys.executable).parent

UTIL_H = "#ifndef UTIL_H\n#define UTIL_H\nint scale(int x);\n#endif\n"
UTIL_C = """#include "util.h"
#if FACTOR == 3
int scaled_by_three(int x) { return 3 * x; }
int scale(int x) { return scaled_by_three(x); }
#else
int scale(int x) { return x; }
#endif
"""
MAIN_C = '#include <stdio.h>\n#include "util.h"\nint main(void) { printf("%d\\n", scale(14)); return 0; }\n'
SHAPES_CC = """#include <vector>
struct Shape { virtual ~Shape() = default; virtual int area() const = 0; };
struct Square : Shape { int s; explicit Square(int v) : s(v) {} int area() const override { return s * s; } };
int total(const std::vector<int>& sides) { int t = 0; for (int s : sides) t += Square(s).area(); return t; }
"""


def wrapper(name: str, tmp_path: Path) -> str:
    """The installed console script, else an equivalent shim calling the same entry function."""
    installed = BIN / name
    if installed.is_file():
        return str(installed)
    entry = "main_cxx" if name.endswith("++") else "main_cc"
    shim = tmp_path / "bin" / name
    shim.parent.mkdir(exist_ok=True)
    shim.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c "
        f"'import sys; from stitchopt.cc.wrapper import {entry}; sys.exit({entry}())' \"$@\"\n"
    )
    shim.chmod(0o755)
    return str(shim)


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    src = tmp_path / "proj"
    (src / "include").mkdir(parents=True)
    (src / "include" / "util.h").write_text(UTIL_H)
    (src / "util.c").write_text(UTIL_C)
    (src / "main.c").write_text(MAIN_C)
    (src / "shapes.cc").write_text(SHAPES_CC)
    return src


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_REAL_")}
    return {**clean, "STITCHOPT_RECORD_DIR": str(tmp_path / "rec")}


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def records(tmp_path: Path, name: str = "records.jsonl") -> list[dict[str, object]]:
    path = tmp_path / "rec" / name
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def stored_ir(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "rec" / "ir").glob("*.bc"))


def test_c_objects_match_plain_clang_and_each_tu_is_recorded(
    toolchain: Toolchain, project: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    cc, clang = wrapper("stitchopt-cc", tmp_path), toolchain.tool("clang")
    (project / "build").mkdir()
    (project / "ref").mkdir()
    for name in ("util", "main"):
        flags = ["-O2", "-g", "-Wall", "-DFACTOR=3", "-Iinclude", "-MD", "-MF", f"build/{name}.d", "-c", f"{name}.c"]
        done = run([cc, *flags, "-o", f"build/{name}.o"], project, env)
        assert done.returncode == 0, done.stderr
        ref = [a.replace("build/", "ref/") for a in flags]
        assert run([clang, *ref, "-o", f"ref/{name}.o"], project, env).returncode == 0
        assert (project / "build" / f"{name}.o").read_bytes() == (project / "ref" / f"{name}.o").read_bytes()
        assert "util.h" in (project / "build" / f"{name}.d").read_text()

    lines = records(tmp_path)
    assert [Path(str(r["source"])).name for r in lines] == ["util.c", "main.c"]
    assert {r["language"] for r in lines} == {"c"} and lines[0]["cwd"] == str(project)
    assert lines[0]["compiler"] == [clang] and "-MF" in lines[0]["argv"]  # type: ignore[operator]
    assert "-MF" not in lines[0]["ir_argv"] and "-DFACTOR=3" in lines[0]["ir_argv"]  # type: ignore[operator]
    files = stored_ir(tmp_path)
    assert [f.stem for f in files] == sorted(str(r["sha256"]) for r in lines)
    assert all(hashlib.sha256(f.read_bytes()).hexdigest() == f.stem for f in files)
    assert not list((tmp_path / "rec").glob("tmp-*")) and not (tmp_path / "rec" / "errors.jsonl").exists()

    util_ir = tmp_path / "rec" / "ir" / f"{lines[0]['sha256']}.bc"
    text = run([toolchain.tool("llvm-dis"), str(util_ir), "-o", "-"], project, env).stdout
    assert "define dso_local i32 @scaled_by_three" in text  # the -D reached the IR, unoptimized (not inlined)
    assert "optnone" not in text and "minsize" in text

    again = run([cc, "-O2", "-DFACTOR=3", "-Iinclude", "-c", "main.c", "-o", "build/main2.o"], project, env)
    assert again.returncode == 0, again.stderr
    assert len(records(tmp_path)) == 3 and stored_ir(tmp_path) == files  # same TU: a new line, no new .bc


def test_cxx_object_matches_and_is_recorded_as_cxx(
    toolchain: Toolchain, project: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    flags = ["-std=c++17", "-O1", "-fno-exceptions", "-c", "shapes.cc", "-o"]
    done = run([wrapper("stitchopt-c++", tmp_path), *flags, "shapes.o"], project, env)
    assert done.returncode == 0, done.stderr
    ref = run([toolchain.tool("clang"), "--driver-mode=g++", *flags, "ref.o"], project, env)
    assert ref.returncode == 0, ref.stderr
    assert (project / "shapes.o").read_bytes() == (project / "ref.o").read_bytes()
    [line] = records(tmp_path)
    assert line["language"] == "c++" and "-std=c++17" in line["ir_argv"]  # type: ignore[operator]
    assert len(stored_ir(tmp_path)) == 1


def test_launcher_mode_and_commands_that_record_nothing(
    toolchain: Toolchain, project: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    cc, clang = wrapper("stitchopt-cc", tmp_path), toolchain.tool("clang")
    done = run([cc, clang, "-DFACTOR=3", "-Iinclude", "-c", "util.c", "-o", "util.o"], project, env)
    assert done.returncode == 0, done.stderr
    assert records(tmp_path)[0]["compiler"] == [clang]

    pre = run([cc, "-E", "-DFACTOR=3", "-Iinclude", "util.c"], project, env)
    assert pre.returncode == 0 and "scaled_by_three" in pre.stdout  # preprocessed text passes through
    (project / "args.rsp").write_text("-Iinclude -c main.c -o 'main obj.o'\n")
    assert run([cc, "@args.rsp"], project, env).returncode == 0
    assert (project / "main obj.o").is_file()
    assert run([cc, "util.o", "main obj.o", "-o", "prog"], project, env).returncode == 0  # link only
    assert run([str(project / "prog")], project, env).stdout == "42\n"
    assert [Path(str(r["source"])).name for r in records(tmp_path)] == ["util.c", "main.c"]


def test_compile_error_passes_through_and_records_nothing(project: Path, tmp_path: Path, env: dict[str, str]) -> None:
    (project / "bad.c").write_text("int f(void) { return missing; }\n")
    done = run([wrapper("stitchopt-cc", tmp_path), "-c", "bad.c", "-o", "bad.o"], project, env)
    assert done.returncode == 1 and "missing" in done.stderr
    assert not (tmp_path / "rec").exists()


def test_ir_compile_failure_is_logged_and_the_build_still_succeeds(
    toolchain: Toolchain, project: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    real = tmp_path / "real-cc"  # a compiler accepting a flag that clang rejects
    real.write_text(
        '#!/bin/sh\nfor a; do shift; [ "$a" = "--only-real" ] || set -- "$@" "$a"; done\n'
        f'exec {toolchain.tool("clang")} "$@"\n'
    )
    real.chmod(0o755)
    env = {**env, "STITCHOPT_REAL_CC": str(real)}
    done = run([wrapper("stitchopt-cc", tmp_path), "--only-real", "-Iinclude", "-c", "main.c"], project, env)
    assert done.returncode == 0, done.stderr
    assert (project / "main.o").is_file()
    [error] = records(tmp_path, "errors.jsonl")
    assert error["source"] == str(project / "main.c") and "--only-real" in str(error["reason"])
    assert "\n" not in str(error["reason"])
    assert records(tmp_path) == [] and stored_ir(tmp_path) == []


def test_a_record_dir_that_cannot_be_written_is_one_line_and_the_build_succeeds(
    project: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    done = run(
        [wrapper("stitchopt-cc", tmp_path), "-c", "main.c", "-Iinclude"],
        project,
        {**env, "STITCHOPT_RECORD_DIR": "/proc/rec"},
    )
    assert done.returncode == 0 and (project / "main.o").is_file()
    assert done.stderr == (
        "stitchopt: cannot record main.c: /proc/rec: No such file or directory; "
        "set STITCHOPT_RECORD_DIR to a writable directory\n"
    )


def test_a_real_compiler_that_cannot_run_is_one_line_that_says_what_to_do(
    project: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    cc = wrapper("stitchopt-cc", tmp_path)
    missing = run([cc, "-c", "main.c"], project, {**env, "STITCHOPT_REAL_CC": "no-such-cc -m32"})
    assert missing.returncode == 127 and missing.stderr.count("\n") == 1
    assert missing.stderr.startswith("stitchopt: cannot run no-such-cc: No such file or directory; install it")
    unquoted = run([cc, "-c", "main.c"], project, {**env, "STITCHOPT_REAL_CC": '"clang'})
    assert unquoted.returncode == 127 and unquoted.stderr.count("\n") == 1
    assert "STITCHOPT_REAL_CC: No closing quotation; write it as shell words" in unquoted.stderr
    (project / "open.rsp").write_text("-c 'main.c\n")
    quoted = run([cc, "@open.rsp"], project, {**env, "STITCHOPT_LIST": "default<Oz>"})
    assert quoted.stderr.startswith(
        "stitchopt: cannot read the command's response files (No closing quotation); building as asked\n"
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_build_with_cc_wrapper(project: Path, tmp_path: Path, env: dict[str, str]) -> None:
    (project / "Makefile").write_text(
        "CPPFLAGS = -DFACTOR=3 -Iinclude\nCFLAGS = -O2\n"
        "prog: main.o util.o\n\t$(CC) $(LDFLAGS) -o $@ main.o util.o\n"
        "%.o: %.c include/util.h\n\t$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@\n"
    )
    done = run(["make", "-j2", f"CC={wrapper('stitchopt-cc', tmp_path)}"], project, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert run([str(project / "prog")], project, env).stdout == "42\n"
    assert sorted(Path(str(r["source"])).name for r in records(tmp_path)) == ["main.c", "util.c"]
    assert len(stored_ir(tmp_path)) == 2
