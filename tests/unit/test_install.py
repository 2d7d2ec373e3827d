"""What `make demo` and `make test` install: the demo only the core package, the tests PyTorch's CPU build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _planned(target: str, venv: Path) -> str:
    run = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_make_demo_installs_no_extras(tmp_path: Path) -> None:
    demo = _planned("demo", tmp_path / "venv")
    assert "pip install -q -e ." in demo
    assert "torch" not in demo and ".[" not in demo
    assert "install-system-deps.sh\n" in demo  # without --test: no browser for the report test


def test_make_test_installs_torch_through_the_cpu_build_script(tmp_path: Path) -> None:
    test = _planned("test", tmp_path / "venv")
    assert "install-system-deps.sh --test" in test and "scripts/install-torch.sh" in test
    assert test.index("install-torch.sh") < test.index(".[dev")  # torch first: the extras' range would pull CUDA
    assert "torch==" not in test


@pytest.mark.slow
def test_the_torch_install_picks_a_cpu_build() -> None:
    pip = Path(sys.executable).with_name("pip")
    run = subprocess.run(
        ["bash", str(ROOT / "scripts/install-torch.sh"), str(pip), "--print"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    if "no CPU build of torch is reachable" in run.stderr:
        pytest.skip("neither PyTorch's CPU index nor a +cpu wheel is reachable here")
    planned = run.stdout.strip()
    assert "whl/cpu" in planned or planned.endswith("+cpu"), planned
