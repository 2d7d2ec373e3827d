"""A user's program as the detector's inputs: each defined function alone, neutralized like the Juliet training
functions (`datasets.juliet`), so that the detector reads the user's code the way it learned."""

from __future__ import annotations

from dataclasses import dataclass

from stitchopt.core import IRModule
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.neutral import neutral_function, run_llvm
from stitchopt.toolchain.split import symbols


@dataclass(frozen=True)
class ProgramFunction:
    name: str  # as the program calls it: for the user, never for the model
    bitcode: bytes  # the function alone, the program's own symbols renamed, no debug info


def program_functions(toolchain: Toolchain, module: IRModule) -> list[ProgramFunction]:
    """Every function `module` defines, in module order, each alone and neutralized."""
    stripped = run_llvm(toolchain, ["opt", "-strip-debug", "-", "-o", "-"], module.bitcode, module.name)
    defined = symbols(toolchain, stripped, module.name)

    def renamed(symbol: str) -> bool:
        return symbol in defined.defined

    functions = []
    for name in defined.functions:
        text = neutral_function(toolchain, stripped, name, renamed)
        bitcode = run_llvm(toolchain, ["llvm-as", "-", "-o", "-"], text.encode(), f"{module.name}: {name}")
        functions.append(ProgramFunction(name, bitcode))
    return functions
