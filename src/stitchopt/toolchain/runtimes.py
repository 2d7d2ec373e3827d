"""clang's runtime libraries that some commands link: found up front, so that a missing one is one line that
names the package instead of a linker error."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from stitchopt.errors import ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

_PROBE_TIMEOUT_S = 30.0


@lru_cache(maxsize=4)
def _profile_runtime(clang: str, triple: str) -> Path | None:
    done = run_tool([clang, "-print-resource-dir"], timeout=_PROBE_TIMEOUT_S)
    if done.returncode != 0:
        return None
    libraries = Path(done.stdout.decode().strip()) / "lib"
    arch = triple.split("-")[0]
    # the per-target layout, then the older one (Debian's LLVM 19)
    candidates = (libraries / triple / "libclang_rt.profile.a", libraries / "linux" / f"libclang_rt.profile-{arch}.a")
    return next((path for path in candidates if path.is_file()), None)


def profile_runtime(toolchain: Toolchain) -> Path | None:
    """clang's profile runtime for the default target (what `-fprofile-instr-generate` links), or None."""
    return _profile_runtime(toolchain.tool("clang"), toolchain.default_triple)


def profile_runtime_package(toolchain: Toolchain) -> str:
    """Where the profile runtime comes from on Debian and Ubuntu."""
    return f"libclang-rt-{toolchain.major}-dev"


def require_profile_runtime(toolchain: Toolchain) -> None:
    """Raise a one-line ToolchainError when instrumented builds cannot link."""
    if profile_runtime(toolchain) is None:
        raise ToolchainError(
            f"profiling needs clang's profile runtime (libclang_rt.profile), which LLVM {toolchain.version_string} "
            f"here lacks: install {profile_runtime_package(toolchain)} (Debian/Ubuntu) or compiler-rt"
        )
