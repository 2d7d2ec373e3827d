"""How a model build reads a compiler command: which units, which flags, which link, and what it leaves to the
real compiler (with the reason the build log counts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitchopt.cc.plan import QUIET_UNUSED, CompilePlan, PassThrough, plan_command
from stitchopt.toolchain.commands import Source

CLANG = "/usr/lib/llvm/bin/clang"


def _plan(args: list[str], *, clang: bool = True, cxx: bool = False) -> CompilePlan | PassThrough | None:
    return plan_command(args, cxx_driver=cxx, clang=CLANG, real_compiler_is_clang=clang)


def _compile(args: list[str]) -> CompilePlan:
    plan = _plan(args)
    assert isinstance(plan, CompilePlan), plan
    return plan


@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        ("-fsanitize=address", "instrumentation"),
        ("--coverage", "instrumentation"),
        ("-fprofile-instr-generate", "instrumentation"),
        ("-fprofile-arcs", "instrumentation"),
        ("-pg", "instrumentation"),
        ("-fprofile-instr-use=x.profdata", "profile-guided"),
        ("-flto=thin", "LTO"),
        ("-S", "the output is not an object"),
        ("-E", "the output is not an object"),
        ("-emit-llvm", "the output is not an object"),
        ("-save-temps", "side files"),
        ("-gsplit-dwarf", "side files"),
        ("-Wp,-MD,deps.d", "side files"),
        ("-fsanitize-coverage=trace-pc-guard", "instrumentation"),
        ("-fmemory-profile", "instrumentation"),
        ("-fdebug-info-for-profiling", "instrumentation"),
        ("-fpass-plugin=x.so", "compiler plugins"),
        ("-fstack-usage", "side files"),
        ("-save-stats=obj", "side files"),
        ("-frecord-command-line", "the object records the command line"),
        ("-Wframe-larger-than=64", "backend warnings"),
        ("-include-pch", "a precompiled header"),
    ],
)
def test_what_the_pipeline_alone_cannot_honour_passes_through(flag: str, reason: str) -> None:
    found = _plan(["-Oz", flag, "-c", "a.c", "-o", "a.o"])
    assert isinstance(found, PassThrough) and found.reason.startswith(reason) and found.sources == (Source("a.c", "c"),)


@pytest.mark.parametrize(
    "flag", ["-g", "-ffunction-sections", "-fno-lto", "-O2", "-fPIC", "-DG=1", "-mcmodel=large", "-march=native"]
)
def test_codegen_flags_reach_both_the_front_end_and_code_generation(flag: str) -> None:
    plan = _compile(["-O2", flag, "-c", "a.c", "-o", "a.o"])
    frontend = plan.frontend_argv(plan.units[0], Path("t.bc"))
    codegen = plan.codegen_argv(Path("t.bc"), Path("t.o"), optimize=False)
    if flag != "-O2":
        assert flag in frontend and flag in codegen
    assert "-O2" not in frontend and frontend.count("-Oz") == codegen.count("-Oz") >= 1
    assert frontend[-3:] == ["-x", "c", "a.c"]
    assert plan.units[0].output == Path("a.o") and plan.link is None


def test_outputs_that_are_not_regular_files_probes_and_other_compilers_pass_through(tmp_path: Path) -> None:
    def reason(args: list[str], clang: bool = True) -> str:
        found = _plan(args, clang=clang)
        assert isinstance(found, PassThrough), found
        return found.reason

    assert "not a regular file" in reason(["-c", "a.c", "-o", "/dev/null"])
    assert "standard output" in reason(["-c", "a.c", "-o", "-"])
    assert "not a regular file" in reason(["-c", "a.c", "-o", str(tmp_path)])
    assert "not the toolchain's clang" in reason(["-c", "a.c"], clang=False)
    assert reason(["-c", "conftest.c", "-o", "conftest.o"]) == "a build-system probe"
    assert "not C/C++" in reason(["-c", "a.c", "b.s"])
    assert "dependency files of a compile-and-link" in reason(["-MD", "a.c", "-o", "prog"])
    assert _plan(["a.o", "b.o", "-o", "prog"]) is None  # a link: nothing to build
    assert _plan(["--version"]) is None


def test_a_header_with_a_precompiled_twin_passes_through(tmp_path: Path) -> None:
    header = tmp_path / "all.h"
    assert isinstance(_plan(["-include", str(header), "-c", "a.c", "-o", "a.o"]), CompilePlan)
    header.with_suffix(".h.pch").write_bytes(b"CPCH")
    found = _plan(["-include", str(header), "-c", "a.c", "-o", "a.o"])
    assert isinstance(found, PassThrough) and "precompiled header" in found.reason


def test_the_level_is_oz_where_the_users_was_so_later_flags_still_override_it() -> None:
    assert _compile(["-fno-slp-vectorize", "-O2", "-c", "a.c"]).flags == ("-fno-slp-vectorize", "-Oz")
    assert _compile(["-O2", "-fno-slp-vectorize", "-c", "a.c"]).flags == ("-Oz", "-fno-slp-vectorize")
    assert _compile(["-fno-vectorize", "-c", "a.c"]).flags == ("-Oz", "-fno-vectorize")
    assert _compile(["-Ofast", "-fno-fast-math", "-c", "a.c"]).flags == ("-Oz", "-ffast-math", "-fno-fast-math")


def test_dependency_files_keep_the_names_and_targets_clang_derives_from_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "obj").mkdir()
    assert isinstance(_plan(["-MD", "-c", "src/a.c", "-o", "missing/a.o"]), PassThrough)
    plan = _compile(["-MD", "-c", "a.c", "-o", ".hidden"])
    assert plan.units[0].dependency_flags == ("-MD", "-MF", ".d", "-MQ", ".hidden")  # as LLVM names it
    plan = _compile(["-MD", "-MP", "-c", "src/a.c", "-o", "obj/a.o"])
    assert plan.units[0].dependency_flags == ("-MD", "-MP", "-MF", "obj/a.d", "-MQ", "obj/a.o")
    plan = _compile(["-MMD", "-c", "src/a.c"])
    assert plan.units[0].dependency_flags == ("-MMD", "-MF", "a.d", "-MQ", "a.o")
    plan = _compile(["-MD", "-MF", "deps/x.d", "-MT", "x", "-c", "a.c", "-o", "a.o"])
    assert plan.units[0].dependency_flags == ("-MD", "-MF", "deps/x.d", "-MT", "x")


def test_compile_and_link_becomes_one_compile_per_source_and_the_users_link() -> None:
    plan = _compile(["-O2", "-DX=1", "main.c", "lib/util.c", "extra.o", "-o", "prog", "-lm"])
    assert [unit.source.path for unit in plan.units] == ["main.c", "lib/util.c"]
    assert all(unit.output is None for unit in plan.units)
    link = plan.link_argv(["cc"], [Path("/s/0.o"), Path("/s/1.o")])
    assert link == ["cc", "-O2", "-DX=1", "/s/0.o", "/s/1.o", "extra.o", "-o", "prog", "-lm", QUIET_UNUSED]
    assert QUIET_UNUSED in plan.frontend_argv(plan.units[0], Path("t.bc"))  # -lm is the link's


def test_several_sources_with_c_write_an_object_each_in_the_current_directory() -> None:
    plan = _compile(["-c", "a.c", "dir/b.cc"])
    assert [unit.output for unit in plan.units] == [Path("a.o"), Path("b.o")]
    assert [unit.source.language for unit in plan.units] == ["c", "c++"]
    assert "--driver-mode=g++" in plan.clang
    assert isinstance(_plan(["-c", "a.c", "b.c", "-o", "x.o"]), PassThrough)
