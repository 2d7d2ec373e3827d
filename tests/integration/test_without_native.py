"""A subprocess-only install (no native extension) must pass the suite, with the native tests skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


@pytest.mark.slow
def test_evaluator_tests_skip_the_native_backend_when_it_is_absent(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_NATIVE": "off", "STITCHOPT_CACHE_DIR": str(tmp_path)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rs",
            "-p",
            "no:cacheprovider",
            str(TESTS / "test_evaluation.py"),
            str(TESTS / "test_native.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    header = run.stdout.split("collected")[0]
    assert "native evaluator unavailable: disabled by STITCHOPT_NATIVE=off" in header
    assert "SKIPPED" in run.stdout and " passed" in run.stdout
