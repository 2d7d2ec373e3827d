"""Parsing compiler commands for the recording wrapper: which sources, which mode, which flags reach the IR."""

from pathlib import Path

import pytest

from stitchopt.toolchain.commands import (
    Mode,
    Source,
    expand_response_files,
    ir_command,
    is_cxx_driver,
    is_probe_source,
    looks_like_compiler,
    parse_command,
    split_launcher,
)


def test_compile_with_output_keeps_only_ir_shaping_flags() -> None:
    parsed = parse_command(["-c", "-O2", "-DN=3", "-Iinc", "-std=c11", "-o", "build/a.o", "a.c"])
    assert parsed.mode is Mode.COMPILE
    assert parsed.sources == (Source("a.c", "c"),)
    assert parsed.ir_flags == ("-DN=3", "-Iinc", "-std=c11")


def test_compile_and_link_in_one_command_records_each_source() -> None:
    parsed = parse_command(["a.c", "lib/b.cpp", "helper.o", "libx.a", "-lm", "-o", "prog"])
    assert parsed.mode is Mode.COMPILE
    assert parsed.sources == (Source("a.c", "c"), Source("lib/b.cpp", "c++"))
    assert parsed.ir_flags == ()


@pytest.mark.parametrize("name", ["x.cc", "x.cpp", "x.cxx", "x.c++", "x.C"])
def test_cxx_extensions(name: str) -> None:
    assert parse_command(["-c", name]).sources == (Source(name, "c++"),)


def test_dependency_flags_are_dropped_with_their_arguments() -> None:
    args = ["-MD", "-MF", "a.d", "-MT", "a.o", "-MQ", "$(x)", "-MP", "-MMD", "-MFjoined.d", "-c", "a.c"]
    parsed = parse_command(args)
    assert parsed.mode is Mode.COMPILE
    assert parsed.sources == (Source("a.c", "c"),)
    assert parsed.ir_flags == ()


@pytest.mark.parametrize(
    "args",
    [["-E", "a.c"], ["-M", "a.c"], ["-MM", "-MF", "a.d", "a.c"], ["-fsyntax-only", "a.c"], ["-###", "-c", "a.c"]],
)
def test_commands_that_emit_no_code_record_nothing(args: list[str]) -> None:
    assert parse_command(args).mode is Mode.PREPROCESS


def test_md_with_m_still_compiles() -> None:
    assert parse_command(["-M", "-MD", "-c", "a.c"]).mode is Mode.COMPILE


@pytest.mark.parametrize(
    "args", [["a.o", "b.o", "-o", "prog", "-lm"], ["--version"], ["-c", "start.S"], ["-shared", "x.o", "-o", "x.so"]]
)
def test_commands_without_c_sources_are_link_only(args: list[str]) -> None:
    parsed = parse_command(args)
    assert parsed.mode is Mode.LINK
    assert parsed.sources == ()


def test_x_overrides_the_extension_until_none() -> None:
    parsed = parse_command(["-x", "c++", "a.c", "b.h", "-x", "none", "c.c", "-xc", "d.inc", "-x", "assembler", "e.c"])
    assert parsed.sources == (Source("a.c", "c++"), Source("b.h", "c++"), Source("c.c", "c"), Source("d.inc", "c"))
    assert "-x" not in parsed.ir_flags


def test_cxx_driver_compiles_c_files_as_cxx() -> None:
    assert parse_command(["-c", "a.c"], cxx_driver=True).sources == (Source("a.c", "c++"),)
    assert parse_command(["-x", "c", "-c", "a.c"], cxx_driver=True).sources == (Source("a.c", "c"),)


def test_dropped_and_kept_flags() -> None:
    dropped = [
        "-O3",
        "-Os",
        "-g",
        "-gdwarf-4",
        "-ggdb3",
        "-Wall",
        "-Werror",
        "-Werror=format",
        "-Wl,-rpath,/x",
        "-Wa,--noexecstack",
        "-flto",
        "-flto=thin",
        "-save-temps",
        "-save-temps=obj",
        "-fsyntax-only",
        "-c",
        "-S",
        "-w",
        "-pedantic",
        "-lm",
        "-L/usr/lib",
        "-L",
        "dir",
        "-shared",
        "-pie",
        "-static",
        "-rdynamic",
        "-Xlinker",
        "--gc-sections",
        "-ofoo.o",
    ]
    kept = [
        "-DX",
        "-D",
        "Y=2",
        "-UZ",
        "-U",
        "W",
        "-Iinc",
        "-I",
        "inc2",
        "-isystem",
        "sys",
        "-include",
        "pre.h",
        "-iquote",
        "q",
        "-std=gnu++17",
        "-fPIC",
        "-fno-exceptions",
        "-fsanitize=address",
        "-m32",
        "-march=x86-64",
        "--target=aarch64-linux-gnu",
        "-target",
        "riscv64",
        "-pthread",
        "-Wp,-D_FORTIFY_SOURCE=2",
        "-mllvm",
        "-some-option",
        "-Xclang",
        "-fno-pch-timestamp",
        "-gcc-toolchain",
        "/opt/gcc",
    ]
    parsed = parse_command([*dropped, *kept, "a.cpp"])
    assert parsed.ir_flags == tuple(kept)
    assert parsed.sources == (Source("a.cpp", "c++"),)
    assert parsed.mode is Mode.PREPROCESS  # -fsyntax-only among the dropped


def test_ofast_keeps_its_fast_math_semantics() -> None:
    assert parse_command(["-Ofast", "-c", "a.c"]).ir_flags == ("-ffast-math",)
    assert parse_command(["-Ofast", "-O2", "-c", "a.c"]).ir_flags == ()


def test_stdin_is_not_a_source() -> None:
    assert parse_command(["-x", "c", "-c", "-", "-o", "x.o"]).mode is Mode.LINK


def test_response_files_are_expanded_with_quotes_and_nesting(tmp_path: Path) -> None:
    (tmp_path / "inner.rsp").write_text("-DINNER 'b c.c'\n")
    (tmp_path / "args.rsp").write_text('-c "-DMSG=\\"hi there\\"" -Iinc\n@inner.rsp\n-o out.o\n')
    expanded = expand_response_files(["@args.rsp", "a.c", "@missing.rsp"], cwd=str(tmp_path))
    assert expanded == ["-c", '-DMSG="hi there"', "-Iinc", "-DINNER", "b c.c", "-o", "out.o", "a.c", "@missing.rsp"]
    parsed = parse_command(expanded)
    assert parsed.sources == (Source("b c.c", "c"), Source("a.c", "c"))
    assert parsed.ir_flags == ('-DMSG="hi there"', "-Iinc", "-DINNER")


def test_recursive_response_file_stops(tmp_path: Path) -> None:
    (tmp_path / "self.rsp").write_text("-DX @self.rsp")
    expanded = expand_response_files(["@self.rsp"], cwd=str(tmp_path))
    assert expanded[-1] == "@self.rsp"
    assert expanded.count("-DX") == 16


@pytest.mark.parametrize(
    "name",
    [
        "cc",
        "gcc",
        "clang",
        "c++",
        "g++",
        "clang++",
        "clang-19",
        "clang++-19",
        "gcc-12",
        "/usr/bin/cc",
        "x86_64-linux-gnu-gcc-12",
        "aarch64-linux-gnu-g++",
    ],
)
def test_compiler_names(name: str) -> None:
    assert looks_like_compiler(name)


@pytest.mark.parametrize("name", ["ccache", "a.c", "stitchopt-cc", "make", "clang-tidy", "cc1", "ld"])
def test_not_compiler_names(name: str) -> None:
    assert not looks_like_compiler(name)


def test_launcher_mode_needs_an_executable_compiler() -> None:
    found = {"/usr/bin/cc": "/usr/bin/cc", "clang++-19": "/usr/bin/clang++-19"}
    assert split_launcher(["/usr/bin/cc", "-c", "a.c"], found.get) == ("/usr/bin/cc", ["-c", "a.c"])
    assert split_launcher(["clang++-19", "-c", "a.cc"], found.get) == ("clang++-19", ["-c", "a.cc"])
    assert split_launcher(["gcc", "-c", "a.c"], found.get) == (None, ["gcc", "-c", "a.c"])  # not on PATH
    assert split_launcher(["-c", "a.c"], found.get) == (None, ["-c", "a.c"])
    assert split_launcher(["a.c"], found.get) == (None, ["a.c"])
    assert split_launcher([], found.get) == (None, [])


def test_launcher_mode_with_a_real_compiler_on_disk(tmp_path: Path) -> None:
    fake = tmp_path / "clang-19"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert split_launcher([str(fake), "-c", "a.c"]) == (str(fake), ["-c", "a.c"])
    fake.chmod(0o644)
    assert split_launcher([str(fake), "-c", "a.c"])[0] is None


def test_cxx_driver_names() -> None:
    assert is_cxx_driver("/usr/bin/clang++-19") and is_cxx_driver("g++") and is_cxx_driver("c++")
    assert not is_cxx_driver("/usr/bin/cc") and not is_cxx_driver("clang-19")


def test_configure_probes_are_not_recorded() -> None:
    assert is_probe_source("/src/build/conftest.c")
    assert is_probe_source("/b/CMakeFiles/3.28.3/CompilerIdC/CMakeCCompilerId.c")
    assert is_probe_source("/b/CMakeFiles/CMakeScratch/TryCompile-x/src.c")
    assert is_probe_source("/usr/share/cmake-3.25/Modules/CMakeCCompilerABI.c")
    assert is_probe_source("/src/build/temp.linux-x86_64-cpython-311/conftest-0.c")
    assert is_probe_source("/b/meson-private/sanity_check_for_c.c")
    assert is_probe_source("/b/meson-private/tmpa1b2c3/testfile.c")
    assert not is_probe_source("/src/lib/config.c")


def test_ir_command_pins_language_and_driver() -> None:
    c = ir_command("clang", ("-DX",), Source("a.c", "c"), "out.bc")
    assert c == [
        "clang",
        "-DX",
        "-Oz",
        "-Xclang",
        "-disable-llvm-passes",
        "-emit-llvm",
        "-c",
        "-w",
        "-o",
        "out.bc",
        "-x",
        "c",
        "a.c",
    ]
    cxx = ir_command("clang", (), Source("a.cc", "c++"), "out.bc")
    assert cxx[1] == "--driver-mode=g++" and cxx[-3:] == ["-x", "c++", "a.cc"]
