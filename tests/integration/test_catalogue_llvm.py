"""Every catalogue pass, and random lists of them, run through the real `opt`."""

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from stitchopt.core import IRModule
from stitchopt.errors import PipelineError
from stitchopt.passes.catalogue import DEFAULT_PIPELINES, Catalogue
from stitchopt.passes.pipeline import check_pipeline, nest
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import ToolRun, run_tool

PARSE_ERRORS = ("unknown ", "invalid pipeline", "invalid use of", "expected ", "pass parameter")


def _run_opt(toolchain: Toolchain, module: IRModule, pipeline: str) -> ToolRun:
    return run_tool(
        [toolchain.tool("opt"), f"-passes={pipeline}", "-disable-output", "-"],
        stdin=module.bitcode,
        timeout=120,
    )


def _failures(toolchain: Toolchain, module: IRModule, pipelines: list[str]) -> list[tuple[str, str]]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda p: _run_opt(toolchain, module, p), pipelines))
    return [(p, r.stderr_tail(300)) for p, r in zip(pipelines, runs, strict=True) if r.returncode != 0 or r.timed_out]


def test_every_catalogue_pass_runs_alone(toolchain: Toolchain, catalogue: Catalogue, loop_sum: IRModule) -> None:
    pipelines = [nest([entry]) for entry in catalogue.passes] + list(DEFAULT_PIPELINES)
    assert _failures(toolchain, loop_sum, pipelines) == []


def test_random_lists_always_parse(toolchain: Toolchain, catalogue: Catalogue, loop_sum: IRModule) -> None:
    rng = random.Random(20261129)
    pipelines = [nest(rng.choices(catalogue.passes, k=rng.randint(1, 50))) for _ in range(200)]
    failures = _failures(toolchain, loop_sum, pipelines)
    parse_errors = [f for f in failures if any(marker in f[1] for marker in PARSE_ERRORS)]
    assert parse_errors == []
    assert len(failures) <= 4, failures  # crashes inside LLVM are allowed, but must stay rare


def test_check_pipeline_reports_opt_parse_errors(toolchain: Toolchain) -> None:
    check_pipeline(toolchain, "function(sroa),cgscc(inline)")
    with pytest.raises(PipelineError, match="invalid pipeline"):
        check_pipeline(toolchain, "function(sroa")
    with pytest.raises(PipelineError, match="unknown"):
        check_pipeline(toolchain, "function(no-such-pass)")
