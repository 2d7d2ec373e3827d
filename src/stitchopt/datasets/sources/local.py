"""The user's own code: a directory of C/C++ files, or a build's `compile_commands.json`.

With a compilation database each translation unit is compiled with its recorded flags (defines, include
paths, language standard), reduced to what the IR front end needs, as the recording wrapper does.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from stitchopt.datasets.sources.base import BuiltIR, frontend_ir
from stitchopt.errors import DatasetError
from stitchopt.toolchain.commands import parse_command
from stitchopt.toolchain.discovery import Toolchain

_LANGUAGES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".c++": "c++", ".C": "c++"}


class LocalSource:
    version = 1
    licence = "the user's own code"

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self.database = self.path.name == "compile_commands.json"
        self.root = self.path.parent if self.database else self.path
        self.name = f"local-{self.root.name}"
        self.description = f"translation units of {self.path}"

    def units(self) -> list[str]:
        if self.database:
            return [self._relative(c.file) for c in self._commands()]
        return sorted(self._relative(p) for p in self.root.rglob("*") if p.suffix in _LANGUAGES and p.is_file())

    def unit_of(self, name: str) -> str:
        return name

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        path = self.root / unit
        language = _LANGUAGES.get(path.suffix)
        if language is None:
            raise DatasetError(f"{unit}: not a C/C++ source")
        package = unit.split("/", 1)[0] if "/" in unit else self.root.name
        if not self.database:
            bitcode, command = frontend_ir(toolchain, path, language, [f"-I{path.parent}"])
            return [BuiltIR(unit, package, bitcode, command, language)]
        entry = next(c for c in self._commands() if self._relative(c.file) == unit)
        parsed = parse_command(entry.arguments[1:])
        bitcode, command = frontend_ir(toolchain, path, language, parsed.ir_flags, cwd=entry.directory)
        return [BuiltIR(unit, package, bitcode, command, language)]

    def _relative(self, path: Path) -> str:
        resolved = path.resolve()
        try:
            return str(resolved.relative_to(self.root))
        except ValueError:
            return str(resolved)

    def _commands(self) -> list[CompileCommand]:
        """The C/C++ entries, in either of the database's forms (`arguments` list or `command` string)."""
        try:
            entries = json.loads(self.path.read_text())
            commands = [
                CompileCommand(
                    Path(e["directory"]),
                    Path(e["directory"]) / e["file"],
                    list(e["arguments"]) if "arguments" in e else shlex.split(e["command"]),
                )
                for e in entries
            ]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DatasetError(f"{self.path}: not a readable compilation database ({exc})") from exc
        return [c for c in commands if c.file.suffix in _LANGUAGES]


@dataclass(frozen=True)
class CompileCommand:
    directory: Path
    file: Path
    arguments: list[str]  # the compiler first
