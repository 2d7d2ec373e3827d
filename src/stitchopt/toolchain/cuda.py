"""Find what GPU code needs beside LLVM: the NVPTX back end, a CUDA toolkit (ptxas, headers, libdevice) and
LLVM's OpenMP offload bitcode, each reported with what is missing and how to get it.

A CUDA toolkit is a directory laid out like `/usr/local/cuda` (`bin/ptxas`, `include/cuda_runtime.h`,
`nvvm/libdevice/libdevice.10.bc`). Order: `$STITCHOPT_CUDA`, `$CUDA_PATH`, `$CUDA_HOME`, the NVIDIA wheels of
the `gpu` extra (`site-packages/nvidia/cu*/`), `/usr/local/cuda` and `/usr/local/cuda-*` (newest first); the
first complete one wins, else the first with a ptxas, else `ptxas` on PATH (device IR is then measured, `.cu`
files cannot be compiled). Nothing is downloaded.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from stitchopt.errors import InputError, ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

ENV_VAR = "STITCHOPT_CUDA"
CUDA_INSTALL_HINT = "install the gpu extra (`pip install 'stitchopt[gpu]'`) or set $STITCHOPT_CUDA to a CUDA toolkit"
OFFLOAD_INSTALL_HINT = "install libomp-19-dev (`sudo bash scripts/install-system-deps.sh --gpu`)"
_PTXAS_VERSION_RE = re.compile(r"release (\d+)\.(\d+), V(\d+\.\d+\.\d+)")
_PTXAS_ARCH_RE = re.compile(r"'(sm_\d+[a-z]?)'")  # `ptxas --help`: --gpu-name's allowed values
# Headers clang 19's CUDA wrapper still includes and CUDA 13 no longer ships: empty stand-ins, searched after
# every other directory (-idirafter), so a CUDA that ships them keeps its own.
STANDIN_DIR = Path(__file__).with_name("cuda_standins")


@dataclass(frozen=True)
class CudaToolkit:
    """`ptxas` and, when the toolkit has them, CUDA's headers and libdevice (`root` is then `--cuda-path`)."""

    ptxas: Path
    version: str  # ptxas's own, e.g. 13.0.88: part of every device measurement's cache key
    root: Path | None  # None: ptxas alone, device code compiles without CUDA's headers
    source: str

    @property
    def headers(self) -> bool:
        return self.root is not None


def find_cuda() -> CudaToolkit:
    """`$STITCHOPT_CUDA` when set (an error when it has no working ptxas), else the first complete toolkit
    (ptxas, headers, libdevice), else the first with a working ptxas. ToolchainError names every place
    tried when none works."""
    searched: list[str] = []
    partial: CudaToolkit | None = None
    for source, root in _candidate_roots():
        ptxas = root / "bin" / "ptxas"
        version = _ptxas_version(ptxas) if ptxas.is_file() else None
        if version is None:
            problem = "no bin/ptxas" if not ptxas.is_file() else f"{ptxas} does not run"
            if source == f"${ENV_VAR}":
                raise ToolchainError(f"${ENV_VAR}={root}: {problem}; point it at a CUDA toolkit or unset it")
            searched.append(f"{source} ({root}): {problem}")
            continue
        complete = (root / "include" / "cuda_runtime.h").is_file() and _libdevice(root).is_file()
        if complete or source == f"${ENV_VAR}":  # the user's choice stands, complete or not
            return CudaToolkit(ptxas, version, root if complete else None, source)
        partial = partial or CudaToolkit(ptxas, version, None, source)
    on_path = shutil.which("ptxas")
    if partial is None and on_path is not None and (version := _ptxas_version(Path(on_path))) is not None:
        partial = CudaToolkit(Path(on_path), version, None, "PATH")
    if partial is not None:
        return partial
    searched.append("PATH: no ptxas")
    raise ToolchainError(f"no CUDA toolkit found (searched: {'; '.join(searched)}): {CUDA_INSTALL_HINT}")


def _candidate_roots() -> list[tuple[str, Path]]:
    roots = [
        (f"${name}", Path(value)) for name in (ENV_VAR, "CUDA_PATH", "CUDA_HOME") if (value := os.environ.get(name))
    ]
    spec = importlib.util.find_spec("nvidia")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        roots += [("the gpu extra", path) for path in sorted(Path(location).glob("cu*"), reverse=True)]
    local = Path("/usr/local")
    versioned = sorted(local.glob("cuda-*"), key=lambda p: _version_key(p.name), reverse=True)
    roots += [("/usr/local", path) for path in [local / "cuda", *versioned]]
    return roots


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name))


def _ptxas_version(ptxas: Path) -> str | None:
    try:
        run = run_tool([str(ptxas), "--version"], timeout=30)
    except OSError:
        return None
    match = _PTXAS_VERSION_RE.search(run.stdout.decode(errors="replace"))
    return match.group(3) if run.returncode == 0 and match else None


def require_ptxas_arch(cuda: CudaToolkit, arch: str) -> None:
    """InputError, before anything is compiled, where this ptxas cannot build `arch` (CUDA 13 dropped sm_70 and
    sm_72); nothing where its help lists no architectures to tell."""
    known = _ptxas_archs(cuda.ptxas)
    if known and arch not in known:
        plain = sorted((name for name in known if name[-1].isdigit()), key=lambda name: int(name[3:]))
        raise InputError(f"ptxas {cuda.version} cannot build {arch}: use one of {', '.join(plain)}")


@functools.cache
def _ptxas_archs(ptxas: Path) -> frozenset[str]:
    try:
        run = run_tool([str(ptxas), "--help"], timeout=30)
    except OSError:
        return frozenset()
    text = run.stdout.decode(errors="replace")
    start = text.find("--gpu-name")
    return frozenset(_PTXAS_ARCH_RE.findall(text[start : text.find("\n--", start + 1)])) if start >= 0 else frozenset()


def _libdevice(root: Path) -> Path:
    return root / "nvvm" / "libdevice" / "libdevice.10.bc"


def nvptx_registered(toolchain: Toolchain) -> bool:
    """Whether this LLVM's llc was built with the NVPTX back end (Debian's is)."""
    run = run_tool([toolchain.tool("llc"), "--version"], timeout=30)
    return b"nvptx64" in run.stdout


def openmp_offload_bitcode(toolchain: Toolchain, arch: str) -> Path | None:
    """LLVM's OpenMP device runtime for `arch` (`libomptarget-nvptx-sm_90.bc`), or None when not installed."""
    lib = Path(toolchain.tool("clang")).resolve().parent.parent / "lib"
    for candidate in (lib / f"libomptarget-nvptx-{arch}.bc", lib / "libomptarget-nvptx.bc"):
        if candidate.is_file():
            return candidate
    return None


def require_nvptx(toolchain: Toolchain) -> None:
    """ToolchainError, saying what to use instead, unless this LLVM can generate GPU code."""
    if not nvptx_registered(toolchain):
        raise ToolchainError(
            f"LLVM {toolchain.version_string} at {toolchain.tool('llc')} has no NVPTX back end: use Debian's "
            "llvm-19 (built with it) or set STITCHOPT_LLVM to an LLVM built with NVPTX"
        )
