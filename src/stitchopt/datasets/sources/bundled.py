"""Programs that come with stitchopt or beside it: the demo corpus and the HumanEval-X C++ programs."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from stitchopt.datasets.demo import demo_programs
from stitchopt.datasets.sources.base import BuiltIR, frontend_ir
from stitchopt.errors import DatasetError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.suites import SuiteProgram, jsonl_suite


class DemoSource:
    name = "demo"
    version = 1
    licence = "part of stitchopt"
    description = "the built-in self-checking C programs"

    def units(self) -> list[str]:
        return [uri.name for uri in demo_programs()]

    def unit_of(self, name: str) -> str:
        return name

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        paths = {uri.name: path for uri, path in demo_programs().items()}
        bitcode, command = frontend_ir(toolchain, paths[unit], "c")
        return [BuiltIR(unit, unit, bitcode, command)]


class HumanEvalSource:
    """HumanEval-X C++ (Apache-2.0), read from a path: the file is not shipped with stitchopt."""

    name = "humaneval-cpp"
    version = 1
    licence = "HumanEval-X (CodeGeeX), Apache-2.0"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.description = f"HumanEval-X C++ programs from {path}"

    @cached_property
    def _programs(self) -> dict[str, SuiteProgram]:
        """Read the file once, not once per unit."""
        return {p.name: p for p in jsonl_suite(self.path).programs}

    def units(self) -> list[str]:
        return list(self._programs)

    def unit_of(self, name: str) -> str:
        return name.replace("-", "/")

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        program = self._programs.get(unit)
        if program is None:
            raise DatasetError(f"{self.path}: no task {unit}")
        bitcode, command = frontend_ir(toolchain, program.source, "c++", program.compile_args)
        name = unit.replace("/", "-")  # CPP/12 -> CPP-12: URI names stay one path segment
        return [BuiltIR(name, name, bitcode, command, language="c++")]
