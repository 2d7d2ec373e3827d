"""The built-in corpus: addressable by URI, realistic in size, and every program checks itself."""

import subprocess
from pathlib import Path

import pytest

from stitchopt.datasets.demo import demo_programs, resolve
from stitchopt.datasets.uri import BenchmarkUri
from stitchopt.errors import DatasetError
from stitchopt.toolchain.discovery import Toolchain

PROGRAMS = demo_programs()


def test_uris_resolve_and_round_trip() -> None:
    assert len(PROGRAMS) >= 20
    for uri, path in PROGRAMS.items():
        assert str(uri) == f"bench://demo-v1/{path.stem}"
        assert resolve(BenchmarkUri.parse(str(uri))) == path
        assert 50 <= len(path.read_text().splitlines()) <= 500
    with pytest.raises(DatasetError, match="unknown dataset"):
        resolve(BenchmarkUri.parse("bench://csmith-v1/1"))
    with pytest.raises(DatasetError, match="malformed benchmark URI"):
        BenchmarkUri.parse("bench:/demo/x")


@pytest.mark.parametrize("path", PROGRAMS.values(), ids=lambda p: p.stem)
def test_program_passes_its_own_checks(path: Path, toolchain: Toolchain, tmp_path: Path) -> None:
    binary = tmp_path / path.stem
    subprocess.run(
        [toolchain.tool("clang"), "-Oz", "-std=c11", "-Wall", "-Werror", str(path), "-o", str(binary)], check=True
    )
    assert subprocess.run([str(binary)], capture_output=True, timeout=30).returncode == 0
