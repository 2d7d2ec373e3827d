"""Find LLVM as one unit: every tool from one installation, one major version, and say what was searched.

Order: an explicit directory, then `$STITCHOPT_LLVM`, then versioned installs (`llvm-config-NN`, `clang-NN`,
`opt-NN`, newest first), then the unversioned names on PATH. Debian ships an old unversioned `opt` next to
`clang-19`, so a mixture is refused rather than silently used.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from stitchopt.errors import ToolchainError
from stitchopt.toolchain.process import run_tool

REQUIRED_TOOLS = ("clang", "opt", "llc", "llvm-as", "llvm-dis", "llvm-extract", "llvm-link", "llvm-profdata")
SUPPORTED_MAJORS = range(17, 23)
ENV_VAR = "STITCHOPT_LLVM"
_VERSION_RE = re.compile(r"version (\d+)\.(\d+)\.(\d+)")
_TARGET_RE = re.compile(r"Default target: (\S+)")


@dataclass(frozen=True)
class Toolchain:
    """One LLVM installation: where each tool is, its version, and the default target triple."""

    tools: dict[str, Path]
    version: tuple[int, int, int]
    version_text: str  # `opt --version`, which names the vendor build
    default_triple: str
    source: str  # which discovery step chose it
    searched: tuple[str, ...] = field(default=(), compare=False)

    @property
    def major(self) -> int:
        return self.version[0]

    @property
    def version_string(self) -> str:
        return ".".join(map(str, self.version))

    @cached_property
    def identity(self) -> str:
        """Stable id for cache keys and label stamps: same binaries and version text give the same id on any
        machine. The version text's `Host CPU:` line is left out: it names the machine, not what the tools emit
        (their default target CPU is the triple's, never the host's), and with it labels measured on two
        machines could not be merged."""
        where = ";".join(f"{name}={path}" for name, path in sorted(self.tools.items()))
        lines = [line for line in self.version_text.splitlines() if not line.strip().startswith("Host CPU:")]
        digest = hashlib.sha256(("\n".join(lines) + where).encode()).hexdigest()[:16]
        return f"llvm-{self.version_string}-{digest}"

    def tool(self, name: str) -> str:
        return str(self.tools[name])


@dataclass(frozen=True)
class _Candidate:
    source: str
    tools: dict[str, Path]


def find_toolchain(explicit: str | os.PathLike[str] | None = None) -> Toolchain:
    """Return the first complete, consistent, supported LLVM; raise ToolchainError naming all that was tried."""
    searched: list[str] = []
    if explicit is not None:
        return _accept_or_raise(_candidate_from_dir(Path(explicit), f"--llvm {explicit}"), searched)
    env = os.environ.get(ENV_VAR)
    if env:
        return _accept_or_raise(_candidate_from_dir(Path(env), f"${ENV_VAR}={env}"), searched)
    for candidate in _versioned_candidates():
        found = _check(candidate, searched)
        if found is not None:
            return found
    path_candidate = _Candidate("PATH", {t: p for t in REQUIRED_TOOLS if (p := _which(t)) is not None})
    found = _check(path_candidate, searched)
    if found is not None:
        return found
    raise ToolchainError(
        "no usable LLVM 17-22 found (searched: " + "; ".join(searched or ["nothing"]) + "): install clang-19 "
        f"and llvm-19 (`apt-get install clang-19 llvm-19 llvm-19-dev lld-19`) or set {ENV_VAR}=/path/to/llvm/bin"
    )


def remembered_toolchain(state: Path) -> Toolchain:
    """`find_toolchain()`, remembered in the file `state` for processes started by the thousand (the compiler
    wrapper in a build, where discovery's version checks would cost ~0.1 s per compile). The answer is reused
    while $PATH, ${ENV_VAR}, the versioned tools on PATH and every chosen tool file are what they were."""
    context = _discovery_context()
    try:
        data = json.loads(state.read_text())
        if data["context"] == context and data["stamps"] == _stamps(data["toolchain"]["tools"].values()):
            found = data["toolchain"]
            return Toolchain(
                tools={name: Path(path) for name, path in found["tools"].items()},
                version=(found["version"][0], found["version"][1], found["version"][2]),
                version_text=found["version_text"],
                default_triple=found["default_triple"],
                source=found["source"],
            )
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass  # absent, stale or unreadable: discover again
    toolchain = find_toolchain()
    tools = {name: str(path) for name, path in toolchain.tools.items()}
    remembered = {
        "context": context,
        "stamps": _stamps(tools.values()),
        "toolchain": {
            "tools": tools,
            "version": list(toolchain.version),
            "version_text": toolchain.version_text,
            "default_triple": toolchain.default_triple,
            "source": toolchain.source,
        },
    }
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        temporary = state.with_name(f".{state.name}.{os.getpid()}")
        temporary.write_text(json.dumps(remembered))
        os.replace(temporary, state)
    except OSError:
        pass  # an unwritable cache only costs the next process a discovery
    return toolchain


def _discovery_context() -> dict[str, object]:
    """What discovery reads besides the chosen files: the environment and which versioned tools exist."""
    versioned = [
        shutil.which(f"{tool}-{major}") for major in SUPPORTED_MAJORS for tool in ("clang", "opt", "llvm-config")
    ]
    return {"path": os.environ.get("PATH", ""), "llvm": os.environ.get(ENV_VAR, ""), "versioned": versioned}


def _stamps(paths: Iterable[str]) -> list[list[object]]:
    stamps: list[list[object]] = []
    for path in paths:
        info = os.stat(path)
        stamps.append([os.path.realpath(path), info.st_size, info.st_mtime_ns])
    return stamps


def _which(name: str) -> Path | None:
    found = shutil.which(name)
    return Path(found) if found else None


def _candidate_from_dir(bindir: Path, source: str) -> _Candidate:
    if bindir.is_file() and bindir.name.startswith("llvm-config"):
        run = run_tool([str(bindir), "--bindir"], timeout=30)
        bindir = Path(run.stdout.decode().strip())
    tools = {t: bindir / t for t in REQUIRED_TOOLS if (bindir / t).is_file()}
    return _Candidate(f"{source} ({bindir})", tools)


def _versioned_candidates() -> list[_Candidate]:
    """Debian-style `name-NN` executables, newest major first; each resolved to its real bin directory."""
    candidates = []
    for major in sorted(SUPPORTED_MAJORS, reverse=True):
        bindirs: list[Path] = []
        config = _which(f"llvm-config-{major}")
        if config is not None:
            run = run_tool([str(config), "--bindir"], timeout=30)
            if run.returncode == 0:
                bindirs.append(Path(run.stdout.decode().strip()))
        for tool in ("clang", "opt"):
            exe = _which(f"{tool}-{major}")
            if exe is not None:
                bindirs.append(exe.resolve().parent)
        for bindir in dict.fromkeys(bindirs):
            tools = {}
            for t in REQUIRED_TOOLS:
                plain, versioned = bindir / t, _which(f"{t}-{major}")
                if plain.is_file():
                    tools[t] = plain
                elif versioned is not None:
                    tools[t] = versioned
            candidates.append(_Candidate(f"LLVM {major} ({bindir})", tools))
    return candidates


def _versions(tools: dict[str, Path]) -> dict[str, tuple[tuple[int, int, int] | None, str]]:
    def probe(path: Path) -> tuple[tuple[int, int, int] | None, str]:
        run = run_tool([str(path), "--version"], timeout=30)
        text = run.stdout.decode(errors="replace") + run.stderr.decode(errors="replace")
        match = _VERSION_RE.search(text)
        return (tuple(int(g) for g in match.groups()) if match else None, text)  # type: ignore[return-value]

    with ThreadPoolExecutor(max_workers=len(tools) or 1) as pool:
        return dict(zip(tools, pool.map(probe, tools.values()), strict=True))


def _check(candidate: _Candidate, searched: list[str]) -> Toolchain | None:
    """Validate one candidate; on rejection append the reason to `searched` and return None."""
    missing = [t for t in REQUIRED_TOOLS if t not in candidate.tools]
    if len(missing) == len(REQUIRED_TOOLS):
        searched.append(f"{candidate.source}: no LLVM tools")
        return None
    if missing:
        searched.append(f"{candidate.source}: missing {', '.join(missing)}")
        return None
    versions = _versions(candidate.tools)
    majors = {v[0] for v, _ in versions.values() if v is not None}
    unreadable = [t for t, (v, _) in versions.items() if v is None]
    if unreadable:
        searched.append(f"{candidate.source}: cannot read the version of {', '.join(unreadable)}")
        return None
    if len(majors) > 1:
        found = ", ".join(f"{t} {'.'.join(map(str, v))} at {candidate.tools[t]}" for t, (v, _) in versions.items() if v)
        searched.append(f"{candidate.source}: mixed LLVM versions ({found})")
        return None
    version, opt_text = versions["opt"]
    assert version is not None
    if version[0] not in SUPPORTED_MAJORS:
        searched.append(f"{candidate.source}: LLVM {version[0]} is not supported (17-22)")
        return None
    target = _TARGET_RE.search(versions["llc"][1])
    return Toolchain(
        tools=dict(candidate.tools),
        version=version,
        version_text=opt_text.strip(),
        default_triple=target.group(1) if target else "unknown",
        source=candidate.source,
        searched=tuple(searched),
    )


def _accept_or_raise(candidate: _Candidate, searched: list[str]) -> Toolchain:
    found = _check(candidate, searched)
    if found is None:
        raise ToolchainError(f"unusable LLVM: {searched[-1]}; point it at one LLVM bin directory")
    return found
