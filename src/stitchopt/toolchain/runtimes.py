"""clang's profile runtime, which instrumented builds link: checked up front, so that a missing one is one line
that names the package instead of a linker error halfway through a command."""

from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path

from stitchopt.errors import ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

_PROBE_SOURCE = b"int main(void) { return 0; }\n"
_PROBE_TIMEOUT_S = 60.0


@lru_cache(maxsize=4)
def _instrumented_link_failure(clang: str) -> str | None:
    """None when a `-fprofile-instr-generate` program links, else the first line of why not.

    Linking a tiny program asks clang itself, whatever its runtime layout (per-target directories,
    Debian's `lib/linux/libclang_rt.profile-<arch>.a`, i386 vs i686 names)."""
    with tempfile.TemporaryDirectory(prefix="stitchopt-rt-") as scratch:
        done = run_tool(
            [clang, "-fprofile-instr-generate", "-x", "c", "-", "-o", str(Path(scratch) / "probe")],
            stdin=_PROBE_SOURCE,
            timeout=_PROBE_TIMEOUT_S,
        )
    if done.returncode == 0 and not done.timed_out:
        return None
    lines = [line.strip() for line in done.stderr_text.splitlines() if line.strip()]
    if not lines:
        return "timed out" if done.timed_out else f"exit status {done.returncode}"
    head, sep, tail = lines[0].partition(": ")
    return tail if sep and head.startswith("/") else lines[0]  # ld's own line names the missing file


def profile_runtime_problem(toolchain: Toolchain) -> str | None:
    """Why instrumented programs cannot link with this toolchain, or None when they can."""
    return _instrumented_link_failure(toolchain.tool("clang"))


def profile_runtime_package(toolchain: Toolchain) -> str:
    """Where the profile runtime comes from on Debian and Ubuntu."""
    return f"libclang-rt-{toolchain.major}-dev"


def require_profile_runtime(toolchain: Toolchain) -> None:
    """Raise a one-line ToolchainError when instrumented builds cannot link."""
    problem = profile_runtime_problem(toolchain)
    if problem is not None:
        raise ToolchainError(
            f"profiling builds cannot link ({problem}): install {profile_runtime_package(toolchain)} "
            "(Debian/Ubuntu: clang's profile runtime) or compiler-rt"
        )
