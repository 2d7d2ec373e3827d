"""The baselines measured by stitchopt equal `clang -O0/-Oz/-O3 -c` of the same source, for every fixture."""

import subprocess
from pathlib import Path

import pytest

from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import load_module

DATA = Path(__file__).parent.parent / "data"
FIXTURES = [DATA / "loop_sum.c", DATA / "shapes.cpp", *demo_programs().values()]


def _clang_object(toolchain: Toolchain, source: Path, level: str, tmp_path: Path) -> bytes:
    obj = tmp_path / f"{source.stem}.{level}.o"
    subprocess.run([toolchain.tool("clang"), f"-{level}", "-c", str(source), "-o", str(obj)], check=True)
    return obj.read_bytes()


@pytest.mark.parametrize("source", FIXTURES, ids=lambda p: p.name)
def test_baselines_equal_clang(source: Path, toolchain: Toolchain, evaluator: Evaluator, tmp_path: Path) -> None:
    for level in ("Oz", "O0", "O3"):
        baseline = evaluator.baselines[level]
        module = load_module(toolchain, source, level=level)
        result = evaluator.evaluate(module, baseline.pipeline, baseline.options)
        expected = object_sizes(_clang_object(toolchain, source, level, tmp_path))
        assert result.ok, result.stderr_tail
        assert (result.size_bytes, result.text_bytes) == (expected.size_bytes, expected.text_bytes), level
        assert result.sections == expected.sections


def test_sizes_agree_with_llvm_readelf(toolchain: Toolchain, tmp_path: Path) -> None:
    data = _clang_object(toolchain, DATA / "loop_sum.c", "Oz", tmp_path)
    readelf = Path(toolchain.tools["opt"]).parent / "llvm-readelf"
    listing = subprocess.run(
        [str(readelf), "-S", "-W", str(tmp_path / "loop_sum.Oz.o")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    total = 0
    for line in listing.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 7 and parts[0].startswith("[") and parts[2] != "NOBITS" and "A" in parts[7]:
            total += int(parts[5], 16)
    assert object_sizes(data).size_bytes == total > 0
