"""LLVM's own per-function properties (`print<func-properties>`, the MLGO inliner's features), summed per module.

`opt -passes='print<func-properties>' -enable-detailed-function-properties` prints, for each defined function,
a header line and 44 `Name: value` lines to stderr. `FUNCTION_FEATURES` is that list as LLVM 19 prints it; a
name another LLVM version adds is ignored and one it lacks reads 0, so the vector keeps its layout.
Module features: the sum of each over the functions, `num_functions`, and the maximum of the size features in
`MAX_FEATURES` (one huge function and many small ones differ, though their sums agree).
"""

from __future__ import annotations

import re

import numpy as np

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError, ToolchainError
from stitchopt.features.base import FloatVector
from stitchopt.features.module import FeatureModule
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.process import run_tool

FUNCTION_FEATURES = (
    "BasicBlockCount",
    "BlocksReachedFromConditionalInstruction",
    "Uses",
    "DirectCallsToDefinedFunctions",
    "LoadInstCount",
    "StoreInstCount",
    "MaxLoopDepth",
    "TopLevelLoopCount",
    "TotalInstructionCount",
    "BasicBlocksWithSingleSuccessor",
    "BasicBlocksWithTwoSuccessors",
    "BasicBlocksWithMoreThanTwoSuccessors",
    "BasicBlocksWithSinglePredecessor",
    "BasicBlocksWithTwoPredecessors",
    "BasicBlocksWithMoreThanTwoPredecessors",
    "BigBasicBlocks",
    "MediumBasicBlocks",
    "SmallBasicBlocks",
    "CastInstructionCount",
    "FloatingPointInstructionCount",
    "IntegerInstructionCount",
    "ConstantIntOperandCount",
    "ConstantFPOperandCount",
    "ConstantOperandCount",
    "InstructionOperandCount",
    "BasicBlockOperandCount",
    "GlobalValueOperandCount",
    "InlineAsmOperandCount",
    "ArgumentOperandCount",
    "UnknownOperandCount",
    "CriticalEdgeCount",
    "ControlFlowEdgeCount",
    "UnconditionalBranchCount",
    "IntrinsicCount",
    "DirectCallCount",
    "IndirectCallCount",
    "CallReturnsIntegerCount",
    "CallReturnsFloatCount",
    "CallReturnsPointerCount",
    "CallReturnsVectorIntCount",
    "CallReturnsVectorFloatCount",
    "CallReturnsVectorPointerCount",
    "CallWithManyArgumentsCount",
    "CallWithPointerArgumentCount",
)
MAX_FEATURES = ("BasicBlockCount", "TotalInstructionCount", "MaxLoopDepth")
FEATURE_NAMES = (*FUNCTION_FEATURES, "num_functions", *(f"max_{name}" for name in MAX_FEATURES))
DEFAULT_TIMEOUT_S = 60.0

_HEADER_RE = re.compile(r"Printing analysis results of CFA for function '(.*)':")
_VALUE_RE = re.compile(r"(\w+): (-?\d+)")
_UNSUPPORTED = ("Unknown command line argument", "unknown pass name", "unknown function pass")


def parse_function_properties(stderr: str) -> dict[str, dict[str, int]]:
    """Per function name, every `Name: value` line printed under its header."""
    functions: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in stderr.splitlines():
        if (header := _HEADER_RE.fullmatch(line)) is not None:
            current = functions.setdefault(header.group(1), {})
        elif current is not None and (value := _VALUE_RE.fullmatch(line)) is not None:
            current[value.group(1)] = int(value.group(2))
    return functions


def aggregate(functions: dict[str, dict[str, int]]) -> dict[str, int]:
    """Module features from per-function ones: sums, the function count and the maxima."""
    totals = {name: sum(props.get(name, 0) for props in functions.values()) for name in FUNCTION_FEATURES}
    totals["num_functions"] = len(functions)
    for name in MAX_FEATURES:
        totals[f"max_{name}"] = max((props.get(name, 0) for props in functions.values()), default=0)
    return totals


class FunctionProperties:
    """The analysis LLVM maintains for its ML inliner: loop depth, operand kinds and call shapes, per module."""

    name = "func_properties"
    version = 1

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout = timeout

    def feature_names(self) -> tuple[str, ...]:
        return FEATURE_NAMES

    def per_function(self, module: FeatureModule) -> dict[str, dict[str, int]]:
        """Run the printer pass on the module; raise a one-line error when `opt` fails or times out."""
        argv = opt_command(
            module.toolchain.tool("opt"),
            "print<func-properties>",
            args=["-enable-detailed-function-properties", "-disable-output", "-"],
        )
        run = run_tool(argv, stdin=module.data, timeout=self.timeout)
        if run.timed_out:
            raise InputError(
                f"{module.name}: print<func-properties> took over {self.timeout:.0f} s; raise the timeout "
                "or leave this representation out for very large modules"
            )
        if run.returncode != 0:
            error = first_error(run.stderr_text)
            if any(marker in run.stderr_text for marker in _UNSUPPORTED):
                raise ToolchainError(
                    f"this opt ({module.toolchain.version_string}) cannot run print<func-properties> "
                    f"({error}); use LLVM 19 or drop the func_properties representation"
                )
            raise InputError(f"{module.name}: opt cannot analyse the module: {error}; check it with llvm-as")
        return parse_function_properties(run.stderr_text)

    def extract(self, module: FeatureModule) -> FloatVector:
        totals = aggregate(self.per_function(module))
        return np.array([totals[name] for name in FEATURE_NAMES], dtype=np.float64)
