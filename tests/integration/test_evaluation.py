"""Measuring (IR, pipeline) pairs: statuses, caching and the front end, with the real LLVM."""

import os
import subprocess
from pathlib import Path

import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import CompileOptions, EvalStatus, IRModule
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import BACKEND_ENV, EvalRequest, Evaluator
from stitchopt.evaluation.native.pool import NATIVE_ENV, probe_native
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import compile_source, disassemble, load_module

DATA = Path(__file__).parent.parent / "data"


def test_metrics_of_an_ok_evaluation(evaluator: Evaluator, loop_sum: IRModule) -> None:
    oz = evaluator.baselines["Oz"]
    result = evaluator.evaluate(loop_sum, oz.pipeline, oz.options)
    none = evaluator.evaluate(loop_sum, "", oz.options)
    assert result.ok and none.ok
    assert 0 < result.text_bytes < result.size_bytes < none.size_bytes  # type: ignore[operator]
    assert 0 < result.ir_instruction_count < none.ir_instruction_count  # type: ignore[operator]
    assert result.ir_hash != none.ir_hash and len(result.ir_hash or "") == 64
    assert result.opt_seconds > 0 and result.codegen_seconds > 0
    assert ".text" in result.sections and ".bss" not in result.sections


def test_crash_is_a_cached_result(evaluator: Evaluator, loop_sum: IRModule) -> None:
    result = evaluator.evaluate(loop_sum, "function(trigger-crash-function)")
    assert result.status is EvalStatus.CRASH
    assert "opt:" in result.stderr_tail and result.size_bytes is None
    again = evaluator.evaluate(loop_sum, "function(trigger-crash-function)")
    assert again == result and evaluator.counters.cache_hits == 1


def test_fatal_error_is_a_crash(evaluator: Evaluator, loop_sum: IRModule) -> None:
    result = evaluator.evaluate(loop_sum, "function(loop(licm))")
    assert result.status is EvalStatus.CRASH
    assert "MemorySSA" in result.stderr_tail


@pytest.mark.parametrize("backend", ["subprocess", "native"])
def test_hang_is_cut_by_the_timeout(
    toolchain: Toolchain, store: EvaluationStore, loop_sum: IRModule, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "native":
        request.getfixturevalue("native_available")
    with Evaluator(toolchain, store, timeout=0.001, backend=backend) as evaluator:
        result = evaluator.evaluate(loop_sum, "default<O3>")
    assert result.status is EvalStatus.TIMEOUT and result.time_limit_s == 0.001
    assert store.stats().by_status == {"timeout": 1}


def test_timeout_is_replayed_only_under_the_same_or_a_shorter_limit(
    toolchain: Toolchain, store: EvaluationStore, loop_sum: IRModule
) -> None:
    with Evaluator(toolchain, store, timeout=0.001, backend="subprocess") as short:
        assert short.evaluate(loop_sum, "default<O3>").status is EvalStatus.TIMEOUT
    with Evaluator(toolchain, store, timeout=0.0005, backend="subprocess") as shorter:
        assert shorter.evaluate(loop_sum, "default<O3>").status is EvalStatus.TIMEOUT
        assert shorter.counters.cache_hits == 1 and shorter.counters.evaluated == 0
    with Evaluator(toolchain, store, backend="subprocess") as default:
        result = default.evaluate(loop_sum, "default<O3>")
        assert result.ok and default.counters.cache_hits == 0 and default.counters.evaluated == 1
    assert store.stats().by_status == {"ok": 1}  # the real answer replaced the timeout


def test_parse_error_is_a_compile_error(evaluator: Evaluator, loop_sum: IRModule) -> None:
    result = evaluator.evaluate(loop_sum, "function(no-such-pass)")
    assert result.status is EvalStatus.COMPILE_ERROR
    assert "no-such-pass" in result.stderr_tail


def test_batch_deduplicates_and_keeps_order(evaluator: Evaluator, loop_sum: IRModule) -> None:
    pipelines = ["function(sroa)", "function(instcombine<no-verify-fixpoint>)", "function(sroa)", "globaldce"]
    results = evaluator.evaluate_many([EvalRequest(loop_sum, p) for p in pipelines])
    assert [r.pipeline for r in results] == pipelines
    assert results[0] == results[2]
    assert evaluator.counters.evaluated == 3
    codegen_o0 = evaluator.evaluate(loop_sum, "function(sroa)", CompileOptions(codegen_level=0))
    assert codegen_o0.size_bytes != results[0].size_bytes  # codegen options are part of the key


def test_front_end_emits_text_or_bitcode(toolchain: Toolchain) -> None:
    text = compile_source(toolchain, DATA / "loop_sum.c", text=True)
    assert b"define" in text and b"minsize" in text and b"optnone" not in text
    assert compile_source(toolchain, DATA / "loop_sum.c").startswith(b"BC")
    assert load_module(toolchain, DATA / "shapes.cpp").triple == toolchain.default_triple


def test_ir_files_load(toolchain: Toolchain, tmp_path: Path) -> None:
    text_ir = tmp_path / "m.ll"
    text_ir.write_bytes(compile_source(toolchain, DATA / "loop_sum.c", text=True))
    bitcode = tmp_path / "m.bc"
    bitcode.write_bytes(compile_source(toolchain, DATA / "loop_sum.c"))
    assert load_module(toolchain, text_ir).triple == load_module(toolchain, bitcode).triple


def test_ir_gets_a_target_only_when_it_names_none(toolchain: Toolchain, tmp_path: Path) -> None:
    """As `clang -c` does; IR with a triple and a data layout (what every dataset holds) is kept byte for byte,
    so its cache keys stay."""
    bare = tmp_path / "bare.ll"
    bare.write_text("define i32 @f() {\n  ret i32 0\n}\n")
    module = load_module(toolchain, bare)
    text = disassemble(toolchain, module.bitcode, "bare")
    assert module.triple == toolchain.default_triple and f'target triple = "{module.triple}"' in text
    assert "target datalayout = " in text
    complete = tmp_path / "complete.bc"
    complete.write_bytes(compile_source(toolchain, DATA / "loop_sum.c"))
    assert load_module(toolchain, complete).bitcode == complete.read_bytes()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("malformed.c", r"cannot compile .*malformed.c to IR: .*undeclared identifier"),
        ("malformed.ll", r"malformed IR at line 4, column 3: expected value token"),
        ("missing.c", "no such file"),
        ("print_passes_llvm19.txt", "unsupported file type '.txt'"),
    ],
)
def test_bad_inputs_give_one_line_errors(toolchain: Toolchain, name: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        load_module(toolchain, DATA / name)
    assert "\n" not in str(caught.value)


def test_garbage_bitcode_is_refused(toolchain: Toolchain, tmp_path: Path) -> None:
    bad = tmp_path / "bad.bc"
    bad.write_bytes(b"BC\xc0\xde" + b"\xff" * 64)
    with pytest.raises(InputError, match="malformed bitcode"):
        load_module(toolchain, bad)


def test_native_evaluator_is_built_where_llvm_headers_exist(toolchain: Toolchain) -> None:
    """The other native tests skip where the extension is missing; this one keeps that from hiding a failed
    build: with LLVM's headers installed, `pip install` must have built it."""
    if os.environ.get(NATIVE_ENV) == "off" or os.environ.get(BACKEND_ENV) == "subprocess":
        pytest.skip(f"{NATIVE_ENV}=off or {BACKEND_ENV}=subprocess: the native evaluator is not wanted")
    llvm_config = toolchain.tools["opt"].resolve().parent / "llvm-config"
    if not llvm_config.is_file():
        pytest.skip("no llvm-config beside opt: a subprocess-only install")
    includes = Path(subprocess.run([llvm_config, "--includedir"], capture_output=True, text=True).stdout.strip())
    if not (includes / "llvm" / "IR" / "Module.h").is_file():
        pytest.skip("no LLVM headers: a subprocess-only install")
    probe = probe_native(toolchain)
    assert probe.available, probe.reason
