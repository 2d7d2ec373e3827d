"""Real C/C++ code from PyPI source distributions, built through the recording compiler wrapper.

Each package's sdist is downloaded by pip (by name and exact version), unpacked, and built into a wheel with
`CC=stitchopt-cc CXX=stitchopt-c++`; every translation unit the build compiles is recorded as IR (the
vendored libraries these packages carry: zstd, brotli, lz4, Lua, QuickJS, LMDB, libstemmer, cmark, ...).
None of the packages or libraries named in DEVELOPERS.md (libjpeg, libtiff, lame, libmad, lout, ghostscript,
ispell, gsm, rsynth, bzip2) or any published benchmark suite is on the list.
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from stitchopt.datasets.sources.base import BuiltIR
from stitchopt.datasets.sources.fixed_path import fixed_tree
from stitchopt.datasets.sources.recorded import placement, recorded_modules, recording_env
from stitchopt.datasets.sources.sdist import fetch_sdist
from stitchopt.errors import DatasetError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

DOWNLOAD_TIMEOUT_S = 600.0
# Builds happen at one fixed path: setuptools compiles some packages by absolute path, which clang writes into the
# IR (`fixed_path`); under a random scratch directory their IR hash changed with every build.
BUILD_ROOT = Path("/tmp/stitchopt-pypi-v1")
BUILD_TIMEOUT_S = 1800.0
_MESON_BACKEND_RE = re.compile(r"""^\s*build-backend\s*=\s*["']mesonpy["']""", re.MULTILINE)


@dataclass(frozen=True)
class PypiPackage:
    name: str
    version: str
    domain: str
    # Paths (prefixes in the sdist) of libraries this sdist vendors that another curated package ships as its own code:
    # not recorded, so the same library cannot land in two splits (e.g. c-ares, whose home is `pycares`).
    vendored: tuple[str, ...] = ()


PACKAGES = (
    PypiPackage("lz4", "4.4.5", "compression"),
    PypiPackage("zstandard", "0.25.0", "compression"),
    PypiPackage("brotli", "1.2.1", "compression"),
    PypiPackage("zopfli", "0.4.3", "compression"),
    PypiPackage("pyppmd", "1.3.1", "compression"),
    PypiPackage("pybcj", "1.0.8", "compression"),
    PypiPackage("inflate64", "1.0.4", "compression"),
    PypiPackage("deflate", "0.9.0", "compression"),
    PypiPackage("pycryptodome", "4.4.0", "crypto"),
    PypiPackage("xxhash", "4.1.0", "hashing"),
    PypiPackage("mmh3", "5.3.1", "hashing"),
    PypiPackage("crc32c", "2.9.post0", "hashing"),
    PypiPackage("argon2-cffi-bindings", "26.2.0", "crypto"),
    PypiPackage("ujson", "6.1.0", "serialization"),
    PypiPackage("msgpack", "1.2.4", "serialization"),
    PypiPackage("simplejson", "4.3.0", "serialization"),
    PypiPackage("cmarkgfm", "2025.10.22", "parsing"),
    PypiPackage("ruamel.yaml.clib", "0.2.15", "parsing"),
    PypiPackage("python-rapidjson", "1.25", "serialization"),
    PypiPackage("markupsafe", "3.0.4", "text"),
    PypiPackage("lmdb", "3.0.0", "database"),
    PypiPackage("unqlite", "1.2.0", "database"),
    PypiPackage("lupa", "2.8", "interpreter"),
    PypiPackage("quickjs", "1.19.4", "interpreter"),
    PypiPackage("httptools", "0.9.0", "networking"),
    PypiPackage("multidict", "7.2.1", "networking"),
    PypiPackage("netifaces", "0.11.0", "networking"),
    PypiPackage("websockets", "17.4", "networking"),
    PypiPackage("bitarray", "3.12.3", "math"),
    PypiPackage("pyroaring", "1.2.0", "math"),
    PypiPackage("editdistance", "0.8.1", "math"),
    PypiPackage("regex", "2026.11.15", "text"),
    PypiPackage("pyahocorasick", "2.3.1", "text"),
    PypiPackage("marisa-trie", "1.4.1", "text"),
    PypiPackage("faust-cchardet", "3.2.0", "text"),
    PypiPackage("psutil", "7.2.2", "systems"),
    PypiPackage("setproctitle", "1.3.8", "systems"),
    PypiPackage("wrapt", "2.5.2", "systems"),
    PypiPackage("greenlet", "3.5.6", "systems"),
    PypiPackage("pyrsistent", "0.20.0", "data structures"),
    # Larger bundled code (c-ares, libev, libuv, libsodium, numpy, BLIS, ERFA, Chipmunk, upb, zlib-ng,
    # BoringSSL and abseil): most of the translation units and of the build time; grpcio, the slowest, last.
    PypiPackage("pycares", "5.2.1", "networking"),
    PypiPackage("uvloop", "0.23.0", "networking"),
    PypiPackage("gevent", "26.9.0", "networking", vendored=("deps/c-ares/", "deps/libuv/")),
    PypiPackage("pynacl", "1.6.2", "crypto"),
    PypiPackage("numpy", "2.3.5", "math"),
    PypiPackage("blis", "1.3.4", "math"),
    PypiPackage("pyerfa", "2.0.1.5", "science"),
    PypiPackage("ephem", "4.2.1", "science"),
    PypiPackage("pymunk", "7.3.1", "physics"),
    PypiPackage("mercurial", "7.2.4", "version control", vendored=("contrib/python-zstandard/",)),
    PypiPackage("protobuf", "7.36.2", "serialization"),
    PypiPackage("zlib-ng", "1.1.0", "compression"),
    PypiPackage("cython", "3.3.1", "compilers"),
    PypiPackage("uwsgi", "2.0.31", "networking"),
    PypiPackage("astropy", "8.0.2", "science"),
    PypiPackage("pywavelets", "1.9.0", "math"),
    PypiPackage("hiredis", "3.5.0", "database"),
    PypiPackage("pylzma", "0.6.1", "compression"),
    PypiPackage("zfec", "1.6.0.1.post0", "math"),
    PypiPackage("yappi", "1.7.6", "systems"),
    PypiPackage("grpcio", "1.85.1", "networking", vendored=("third_party/cares/",)),
)


class PypiSource:
    name = "pypi"
    version = 1
    licence = "each package's own open-source licence (see its sdist); IR is derived from it"

    def __init__(self, packages: tuple[PypiPackage, ...] = PACKAGES) -> None:
        self.packages = {p.name: p for p in packages}
        self.description = "PyPI sdists built with stitchopt-cc: " + ", ".join(
            f"{p.name}=={p.version}" for p in packages
        )

    def units(self) -> list[str]:
        return list(self.packages)

    def unit_of(self, name: str) -> str:
        return name.split("/", 1)[0]

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        package = self.packages.get(unit)
        if package is None:
            raise DatasetError(f"pypi: {unit} is not on the curated list")
        archive = fetch_sdist(package.name, package.version, scratch / "sdist", timeout=DOWNLOAD_TIMEOUT_S)
        with fixed_tree(BUILD_ROOT, unit) as unpacked:
            tree = _unpack_sdist(archive, unpacked)
            records = scratch / "records"
            _build_wheel(toolchain, tree, scratch, records)
            return _recorded(package, tree, records)


def _unpack_sdist(archive: Path, unpacked: Path) -> Path:
    """The source tree of the sdist `archive`, unpacked into `unpacked`."""
    _unpack(archive, unpacked)
    roots = [p for p in unpacked.iterdir() if p.is_dir()]
    return roots[0] if len(roots) == 1 else unpacked


def _unpack(archive: Path, destination: Path) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(destination)
        return
    try:
        with tarfile.open(archive) as bundle:
            bundle.extractall(destination, filter="data")
    except tarfile.TarError as exc:
        raise DatasetError(f"{archive.name}: not a readable sdist ({exc})") from exc


def _build_wheel(toolchain: Toolchain, tree: Path, scratch: Path, records: Path) -> None:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(tree), "-w", str(scratch / "wheel")]
    if _builds_with_meson(tree):
        # meson-python's default build directory is `.mesonpy-<random>` in the tree, and the sources it
        # generates there would be named after it: one fixed name keeps them the same on every build.
        command += ["--config-settings", "build-dir=build"]
    run = run_tool(
        command,
        timeout=BUILD_TIMEOUT_S,
        env=recording_env(toolchain, records, scratch / "launchers"),
        cwd=str(tree),
    )
    if run.returncode != 0 and not (records / "records.jsonl").is_file():
        raise DatasetError(f"build failed: {_pip_error(run.stderr_text)}")


def _builds_with_meson(tree: Path) -> bool:
    """Whether the sdist's pyproject.toml names meson-python as its build backend (a line match: tomllib is
    not in Python 3.10)."""
    try:
        text = (tree / "pyproject.toml").read_text(errors="replace")
    except OSError:
        return False
    return _MESON_BACKEND_RE.search(text) is not None


def _pip_error(stderr: str) -> str:
    """pip's own error line, else the last line that is not a warning (pip prints many of those)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:") or "error:" in line and "exited" not in line]
    useful = [line for line in lines if not line.startswith(("WARNING:", "note:", "hint:"))]
    return (errors[-1:] or useful[-1:] or ["no message"])[0][:300]


def _recorded(package: PypiPackage, tree: Path, records: Path) -> list[BuiltIR]:
    """What the wrapper recorded, named `<package>/<path in the sdist>`, without the libraries it vendors that
    another curated package ships as its own code."""
    return recorded_modules(records, tree, placement(package.name, dropped=package.vendored), package.name)
