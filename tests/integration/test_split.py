"""Per-function split and relink on a real program: every symbol survives and the program still works."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from stitchopt.datasets.demo import demo_programs
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module
from stitchopt.toolchain.process import run_tool
from stitchopt.toolchain.split import extract_function, relink, symbols, without_functions

pytestmark = pytest.mark.slow


def _run_program(toolchain: Toolchain, bitcode: bytes, work: Path, name: str) -> subprocess.CompletedProcess[bytes]:
    (work / f"{name}.bc").write_bytes(bitcode)
    build = run_tool([str(toolchain.tool("clang")), f"{name}.bc", "-o", name, "-lm"], cwd=str(work))
    assert build.returncode == 0, build.stderr_text
    return subprocess.run([str(work / name)], capture_output=True, timeout=60, check=False)


def test_functions_optimized_apart_and_relinked_keep_every_symbol_and_the_behaviour(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    module = load_module(toolchain, demo_programs()[next(u for u in demo_programs() if u.name == "bigint")])
    original = symbols(toolchain, module.bitcode, module.name)
    assert len(original.functions) >= 3 and original.exported < original.defined  # it has static symbols too
    hot = list(original.functions[:2])
    parts = [extract_function(toolchain, module.bitcode, f) for f in hot]
    parts = [
        run_tool([str(toolchain.tool("opt")), f"-passes={pipeline}", "-", "-o", "-"], stdin=part).stdout
        for part, pipeline in zip(parts, ("default<O3>", "instcombine,simplifycfg"), strict=True)
    ]  # each hot function with its own list, the rest with another
    rest = run_tool(
        [str(toolchain.tool("opt")), "-passes=default<Oz>", "-", "-o", "-"],
        stdin=without_functions(toolchain, module.bitcode, hot),
    ).stdout
    joined = relink(toolchain, [*parts, rest], original.exported)
    again = symbols(toolchain, joined, "joined")
    assert again.defined == original.defined and again.exported == original.exported  # every symbol, same linkage
    expected = _run_program(toolchain, module.bitcode, tmp_path, "original")
    got = _run_program(toolchain, joined, tmp_path, "joined")
    assert (got.returncode, got.stdout) == (expected.returncode, expected.stdout)


def test_unknown_function_is_a_one_line_error(toolchain: Toolchain) -> None:
    module = load_module(toolchain, next(iter(demo_programs().values())))
    with pytest.raises(InputError, match="llvm-extract failed"):
        extract_function(toolchain, module.bitcode, "no_such_function")
