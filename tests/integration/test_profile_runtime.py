"""clang's profile runtime: found where it is installed, and one line naming the package where it is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from stitchopt.toolchain.discovery import REQUIRED_TOOLS, Toolchain
from stitchopt.toolchain.runtimes import profile_runtime_problem

DATA = Path(__file__).parent.parent / "data"


def test_instrumented_programs_link(toolchain: Toolchain) -> None:
    """scripts/install-system-deps.sh installs the profile runtime: hot paths and hybrid --run link it."""
    assert profile_runtime_problem(toolchain) is None


def _llvm_without_profile_runtime(toolchain: Toolchain, where: Path) -> Path:
    """The real tools, but a clang that looks for its runtimes in an empty directory when it instruments."""
    bindir, empty = where / "bin", where / "resource"
    (empty / "lib").mkdir(parents=True)
    bindir.mkdir()
    for name in REQUIRED_TOOLS:
        if name != "clang":
            (bindir / name).symlink_to(toolchain.tools[name])
    clang = bindir / "clang"
    real = toolchain.tool("clang")
    clang.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" -fprofile-instr-generate "*) exec {real} -resource-dir {empty} "$@";; esac\n'
        f'exec {real} "$@"\n'
    )
    clang.chmod(0o755)
    return bindir


def test_a_missing_profile_runtime_is_one_line_naming_the_package(toolchain: Toolchain, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "STITCHOPT_LLVM": str(_llvm_without_profile_runtime(toolchain, tmp_path)),
        "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"),
    }

    def stitchopt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env)

    doctor = stitchopt("doctor")
    assert doctor.returncode == 0
    assert f"profile rt     missing: install libclang-rt-{toolchain.major}-dev" in doctor.stdout
    run = stitchopt("hot", str(DATA / "hot_loop.c"), "--run", "{exe}")
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0, run.stderr
    assert f"install libclang-rt-{toolchain.major}-dev" in run.stderr and "linker" not in run.stderr
    assert "Traceback" not in run.stderr
