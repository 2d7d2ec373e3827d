"""The -O0/-Oz/-O3 baselines, defined as exactly what `clang -Ox -c` does to the same IR.

`default<Oz>` is not clang's -Oz (clang's pipeline differs, e.g. in SLP vectorization), so we ask this
clang for its pipeline with `-mllvm -print-pipeline-passes` and run that string with `opt`, then codegen at
clang's code-generation level for that -O flag. On 20 real translation units this matched `clang -Oz -c`
byte for byte where `default<Oz>` did not.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from stitchopt.core import CodegenOptions
from stitchopt.errors import ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

# clang's -O flag -> llc's -O level (clang maps -Os/-Oz to the default codegen level, -O3 to aggressive).
CODEGEN_LEVEL = {"O0": 0, "O1": 1, "O2": 2, "O3": 3, "Os": 2, "Oz": 2}
REPORTED_BASELINES = ("O0", "Oz", "O3")


@dataclass(frozen=True)
class Baseline:
    name: str  # "Oz"
    pipeline: str
    codegen: CodegenOptions


def clang_pipeline(toolchain: Toolchain, level: str) -> str:
    """The pass pipeline `clang -<level>` runs, printed by clang itself (independent of the source)."""
    run = run_tool(
        [
            toolchain.tool("clang"),
            f"-{level}",
            "-mllvm",
            "-print-pipeline-passes",
            "-x",
            "c",
            "-c",
            "-",
            "-o",
            "/dev/null",
        ],
        stdin=b"int stitchopt_probe;\n",
        timeout=60,
    )
    pipeline = run.stdout.decode().strip().splitlines()
    if run.returncode != 0 or not pipeline:
        raise ToolchainError(f"cannot read clang's -{level} pipeline: {run.stderr_tail(300).strip()}")
    return pipeline[-1]


def load_baselines(toolchain: Toolchain, names: tuple[str, ...] = REPORTED_BASELINES) -> dict[str, Baseline]:
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        pipelines = pool.map(lambda name: clang_pipeline(toolchain, name), names)
        return {
            name: Baseline(name, pipeline, CodegenOptions(opt_level=CODEGEN_LEVEL[name]))
            for name, pipeline in zip(names, pipelines, strict=True)
        }
