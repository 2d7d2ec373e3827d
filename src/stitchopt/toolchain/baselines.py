"""The -O0/-Oz/-O3 baselines, defined as exactly what `clang -Ox -c` does to the same IR.

`default<Oz>` is not clang's -Oz (clang's pipeline differs, e.g. in SLP vectorization), so we ask this
clang for its pipeline with `-mllvm -print-pipeline-passes`, repair what the printer loses, run that
string with `opt` under the thresholds clang sets for that -O flag, then generate code at clang's level for
it. For C sources this matches `clang -O0/-Oz/-O3 -c` byte for byte, where `default<Oz>` does not.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from stitchopt.core import CompileOptions
from stitchopt.errors import ToolchainError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

# clang's -O flag -> llc's -O level (clang maps -Os/-Oz to the default codegen level, -O3 to aggressive).
CODEGEN_LEVEL = {"O0": 0, "O1": 1, "O2": 2, "O3": 3, "Os": 2, "Oz": 2}
# What clang derives from its -O flag that the printed pipeline does not carry: the inliner's default
# threshold (InlineParams: Oz 5, Os 50, O3 250, else 225), and at O3 the hot-call-site and unroll thresholds.
OPT_FLAGS: dict[str, tuple[str, ...]] = {
    "O3": ("-inlinedefault-threshold=250", "-locally-hot-callsite-threshold=525", "-unroll-threshold-default=300"),
    "Os": ("-inlinedefault-threshold=50",),
    "Oz": ("-inlinedefault-threshold=5",),
}
REPORTED_BASELINES = ("O0", "Oz", "O3")


@dataclass(frozen=True)
class PipelineFixup:
    """A textual repair of clang's printed pipeline, so that opt runs what clang runs."""

    reason: str
    pattern: re.Pattern[str]
    replacement: str
    count: int = 0  # 0 = every match
    levels: tuple[str, ...] = ("O1", "O2", "O3", "Os", "Oz")


# What the printer loses of clang's pipeline (LLVM 19; each is harmless where it does not match):
PIPELINE_FIXUPS = (
    PipelineFixup(
        "the second simple-loop-unswitch runs only when indvars asks for it (ExtraLoopPassManager), a "
        "condition the printed text drops and opt cannot express",
        re.compile(r"(loop\(loop-idiom,indvars),simple-loop-unswitch<[^>]*>"),
        r"\1",
    ),
    PipelineFixup(
        "the first vector-combine is the early-folds-only variant, which prints as the full pass",
        re.compile(r"(sroa<modify-cfg>),vector-combine,(mldst-motion)"),
        r"\1,\2",
        count=1,
    ),
    PipelineFixup(
        "coroutine splitting reuses frame storage in clang, a parameter the printer omits",
        re.compile(r"(?<![-\w])coro-split(?![<\w-])"),
        "coro-split<reuse-storage>",
    ),
    PipelineFixup(
        "clang turns function specialization off at -Os/-Oz, a parameter the printer omits",
        re.compile(r"(?<![-\w])ipsccp(?![<\w-])"),
        "ipsccp<no-func-spec>",
        levels=("Os", "Oz"),
    ),
)


def repair_pipeline(printed: str, level: str) -> str:
    for fixup in PIPELINE_FIXUPS:
        if level in fixup.levels:
            printed = fixup.pattern.sub(fixup.replacement, printed, count=fixup.count)
    return printed


@dataclass(frozen=True)
class Baseline:
    name: str  # "Oz"
    pipeline: str
    options: CompileOptions


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
    return repair_pipeline(pipeline[-1], level)


def load_baselines(toolchain: Toolchain, names: tuple[str, ...] = REPORTED_BASELINES) -> dict[str, Baseline]:
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        pipelines = pool.map(lambda name: clang_pipeline(toolchain, name), names)
        return {
            name: Baseline(
                name, pipeline, CompileOptions(codegen_level=CODEGEN_LEVEL[name], opt_flags=OPT_FLAGS.get(name, ()))
            )
            for name, pipeline in zip(names, pipelines, strict=True)
        }
