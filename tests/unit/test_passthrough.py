"""Which compiles a model build leaves exactly as the real compiler made them, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitchopt.build.passthrough import pass_through_reason
from stitchopt.toolchain.commands import parse_command


def _reason(args: list[str], tmp_path: Path, *, clang: bool = True) -> str | None:
    parsed = parse_command(args)
    output = Path(parsed.output) if parsed.output else tmp_path / "a.o"
    return pass_through_reason(args, parsed, output, real_compiler_is_clang=clang)


@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        ("-fsanitize=address", "instrumentation"),
        ("--coverage", "instrumentation"),
        ("-fprofile-instr-generate", "instrumentation"),
        ("-fprofile-arcs", "instrumentation"),
        ("-pg", "instrumentation"),
        ("-flto=thin", "LTO"),
        ("-g", "debug info"),
        ("-gline-tables-only", "debug info"),
        ("-ffunction-sections", "section layout"),
        ("-fdata-sections", "section layout"),
    ],
)
def test_flags_a_rebuild_from_ir_would_lose_pass_through(flag: str, reason: str, tmp_path: Path) -> None:
    found = _reason(["-Oz", flag, "-c", "a.c", "-o", str(tmp_path / "a.o")], tmp_path)
    assert found is not None and found.startswith(reason) and flag in found


@pytest.mark.parametrize("flag", ["-g0", "-fno-lto", "-gcc-toolchain=/opt/gcc", "-O2", "-fPIC", "-DG=1"])
def test_other_flags_leave_the_compile_to_the_model(flag: str, tmp_path: Path) -> None:
    assert _reason(["-Oz", flag, "-c", "a.c", "-o", str(tmp_path / "a.o")], tmp_path) is None


def test_outputs_that_are_not_regular_files_and_other_compilers_pass_through(tmp_path: Path) -> None:
    assert "not a regular file" in (_reason(["-c", "a.c", "-o", "/dev/null"], tmp_path) or "")
    assert "not a regular file" in (_reason(["-c", "a.c", "-o", "-"], tmp_path) or "")
    assert "not a regular file" in (_reason(["-c", "a.c", "-o", str(tmp_path)], tmp_path) or "")
    assert "not the toolchain's clang" in (_reason(["-c", "a.c"], tmp_path, clang=False) or "")
    assert _reason(["-c", "conftest.c", "-o", str(tmp_path / "c.o")], tmp_path) == "a build-system probe"
