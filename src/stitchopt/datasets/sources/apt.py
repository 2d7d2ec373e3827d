"""Debian source packages through a private apt state: `apt-get source` of one exact version, its `.dsc`
checked against a pinned sha256 (the `.dsc` lists the checksums of the package's other files, which
`dpkg-source` checks on unpacking), without changing the system's apt configuration (only its mirror address
is read)."""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from stitchopt.errors import DatasetError

DEBIAN_RELEASE = "bookworm"
APT_TIMEOUT_S = 900.0


def debian_mirror() -> str:
    """The Debian archive address this machine's apt already uses (its entry for DEBIAN_RELEASE)."""
    entries: list[tuple[list[str], list[str], list[str]]] = []  # (types, uris, suites)
    sources = Path("/etc/apt/sources.list")
    if sources.is_file():
        for line in sources.read_text().splitlines():
            words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
            if len(words) >= 3:
                entries.append(([words[0]], [words[1]], [words[2]]))
    for path in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.MULTILINE))
            if fields.get("Enabled", "yes").lower() != "no":
                entries.append(
                    (fields.get("Types", "").split(), fields.get("URIs", "").split(), fields.get("Suites", "").split())
                )
    for types, uris, suites in entries:
        if ("deb" in types or "deb-src" in types) and DEBIAN_RELEASE in suites and uris:
            return uris[0]
    raise DatasetError(
        f"no apt source for Debian {DEBIAN_RELEASE} in /etc/apt: Debian sources cannot be fetched on this machine"
    )


class DebianArchive:
    """`apt-get source` through a private apt state under `root` (a deb-src list of its own)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lists = root / "lists"
        self._updated = False

    def _options(self) -> list[str]:
        return [
            "-o",
            f"Dir::Etc::SourceList={self.root / 'sources.list'}",
            "-o",
            f"Dir::Etc::SourceParts={self.root / 'sources.list.d'}",
            "-o",
            f"Dir::State::Lists={self.lists}",
            "-o",
            f"Dir::Cache={self.root / 'cache'}",
            "-o",
            "APT::Sandbox::User=root",
        ]

    def _apt(self, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        if shutil.which("apt-get") is None:
            raise DatasetError("apt-get not found: Debian source packages are fetched with apt (Debian/Ubuntu)")
        try:
            return subprocess.run(
                ["apt-get", *self._options(), "-q", *argv],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=APT_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            raise DatasetError(f"apt-get {argv[0]} took over {APT_TIMEOUT_S:.0f} s (network?)") from exc

    def update(self) -> None:
        for sub in ("lists/partial", "cache/archives/partial", "sources.list.d"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "sources.list").write_text(f"deb-src {debian_mirror()} {DEBIAN_RELEASE} main\n")
        print(f"apt: reading the {DEBIAN_RELEASE} source index", file=sys.stderr, flush=True)
        done = self._apt("update")
        if done.returncode != 0:
            raise DatasetError(f"apt-get update failed: {_apt_error(done.stderr)}")
        self._updated = True

    def fetch(self, package: str, version: str, destination: Path, dsc_sha256: str | None = None) -> Path:
        """The unpacked source tree (Debian patches applied) of `package=version`, downloaded once into
        `destination`; with `dsc_sha256`, a `.dsc` with any other hash is refused."""
        stamp = destination / ".fetched"
        if stamp.is_file():
            return destination / stamp.read_text().strip()
        if not any(self.lists.glob("*Sources*")):
            self.root.mkdir(parents=True, exist_ok=True)
            with (self.root / "update.lock").open("w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # parallel fetches read the index once, not at once
                if not any(self.lists.glob("*Sources*")):
                    self.update()
        shutil.rmtree(destination, ignore_errors=True)
        destination.mkdir(parents=True)
        argv = ("source", "--only-source", f"{package}={version}")
        done = self._apt(*argv, cwd=destination)
        if done.returncode != 0 and not self._updated:  # an old index: read it again once
            self.update()
            done = self._apt(*argv, cwd=destination)
        if done.returncode != 0:
            raise DatasetError(f"apt-get source {package}={version} failed: {_apt_error(done.stderr)}")
        if dsc_sha256 is not None:
            check_dsc(destination, package, dsc_sha256)
        trees = [p for p in destination.iterdir() if p.is_dir()]
        if len(trees) != 1:
            raise DatasetError(f"{destination}: expected one unpacked tree, found {[p.name for p in trees]}")
        stamp.write_text(trees[0].name)
        return trees[0]


def check_dsc(directory: Path, package: str, expected: str) -> None:
    """The one `.dsc` of `package` in `directory` has sha256 `expected`, or DatasetError says which differs."""
    found = sorted(directory.glob(f"{package}_*.dsc"))
    if len(found) != 1:
        raise DatasetError(f"{directory}: expected one {package}_*.dsc, found {[p.name for p in found]}")
    actual = hashlib.sha256(found[0].read_bytes()).hexdigest()
    if actual != expected:
        raise DatasetError(f"{found[0].name}: sha256 {actual} is not the pinned {expected}")


def _apt_error(text: str) -> str:
    """apt's first error (the later ones only sum it up), else its last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("E:")]
    return (errors or lines[-1:] or ["no message"])[0][:300]
