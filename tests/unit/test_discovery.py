"""Discovery error paths use fake tools (scripts that print a version); the happy path uses the real LLVM."""

import json
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from stitchopt.errors import ToolchainError
from stitchopt.toolchain.discovery import ENV_VAR, REQUIRED_TOOLS, Toolchain, find_toolchain, remembered_toolchain


def _fake_tool(directory: Path, name: str, version: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\necho 'LLVM version {version}'\necho '  Default target: x86_64-pc-linux-gnu'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_real_toolchain_is_one_unit(toolchain: Toolchain) -> None:
    assert set(toolchain.tools) == set(REQUIRED_TOOLS)
    assert len({path.parent for path in toolchain.tools.values()}) == 1
    assert 17 <= toolchain.major <= 22
    assert toolchain.default_triple.startswith(("x86_64", "aarch64"))


def test_refuses_mixed_versions_and_names_them(tmp_path: Path) -> None:
    for name in REQUIRED_TOOLS:
        _fake_tool(tmp_path, name, "19.1.7")
    _fake_tool(tmp_path, "opt", "14.0.6")
    with pytest.raises(ToolchainError, match=r"mixed LLVM versions .*opt 14\.0\.6 at .*/opt"):
        find_toolchain(tmp_path)


def test_refuses_missing_tools(tmp_path: Path) -> None:
    _fake_tool(tmp_path, "opt", "19.1.7")
    with pytest.raises(ToolchainError, match="missing clang, llc"):
        find_toolchain(tmp_path)


def test_refuses_unsupported_version(tmp_path: Path) -> None:
    for name in REQUIRED_TOOLS:
        _fake_tool(tmp_path, name, "14.0.6")
    with pytest.raises(ToolchainError, match="LLVM 14 is not supported"):
        find_toolchain(tmp_path)


def test_environment_variable_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toolchain: Toolchain) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(ToolchainError, match=ENV_VAR):
        find_toolchain()
    monkeypatch.setenv(ENV_VAR, str(toolchain.tools["opt"].parent))
    assert find_toolchain().tools == toolchain.tools


def test_versioned_install_beats_old_unversioned_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, toolchain: Toolchain
) -> None:
    # An old unversioned `opt` first on PATH must not be mixed in (Debian ships opt 14 beside clang-19).
    _fake_tool(tmp_path, "opt", "14.0.6")
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    found = find_toolchain()
    assert found.version == toolchain.version
    assert found.tools["opt"] != tmp_path / "opt"


def test_a_remembered_toolchain_is_reused_until_a_tool_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiler wrapper starts once per compile: it reads discovery from a file, and discovers again when
    a tool file, $PATH or $STITCHOPT_LLVM changes."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in REQUIRED_TOOLS:
        _fake_tool(tools, name, "19.1.7")
    monkeypatch.setenv(ENV_VAR, str(tools))
    state = tmp_path / "cache" / "toolchain.json"
    first = remembered_toolchain(state)
    assert state.is_file() and first.version == (19, 1, 7)
    remembered = json.loads(state.read_text())
    remembered["toolchain"]["version_text"] = "read from the file"
    state.write_text(json.dumps(remembered))
    assert remembered_toolchain(state).version_text == "read from the file"  # reused, no version checks
    for name in REQUIRED_TOOLS:
        (tools / name).unlink()
        _fake_tool(tools, name, "18.1.8")
    assert remembered_toolchain(state).version == (18, 1, 8)  # the tools changed: discovered again
    assert remembered_toolchain(state).identity == find_toolchain().identity
    state.write_text("{not json")
    assert remembered_toolchain(state).version == (18, 1, 8)  # an unreadable state is rediscovered
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(ToolchainError):
        remembered_toolchain(state)  # the environment is part of the answer


def test_the_identity_is_the_same_on_machines_with_other_cpus(toolchain: Toolchain) -> None:
    """Labels measured on two machines must merge: the version text's `Host CPU:` line names the machine, not
    what the tools emit; another build (version text) is another identity."""
    base = "\n".join(line for line in toolchain.version_text.splitlines() if "Host CPU:" not in line)
    machines = [replace(toolchain, version_text=f"{base}\n  Host CPU: {cpu}") for cpu in ("znver4", "rocketlake")]
    assert machines[0].version_text != machines[1].version_text
    assert machines[0].identity == machines[1].identity == toolchain.identity
    other_build = replace(toolchain, version_text=toolchain.version_text + "\n  Build config: +assertions")
    assert other_build.identity != toolchain.identity
