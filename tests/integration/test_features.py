"""Program representations on real modules: hand-counted Autophase values, opt's function properties, the
token encoder's invariances, the module holder and the feature cache, with the real LLVM."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule as CoreModule
from stitchopt.errors import InputError
from stitchopt.features import module as module_mod
from stitchopt.features.autophase import FEATURE_NAMES as AUTOPHASE_NAMES
from stitchopt.features.autophase import Autophase
from stitchopt.features.base import FeatureCache, extract_all
from stitchopt.features.func_properties import FUNCTION_FEATURES, FunctionProperties, aggregate
from stitchopt.features.histogram import OpcodeTypeHistogram
from stitchopt.features.module import FeatureModule
from stitchopt.features.tokens import IRTokens, normalize
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import ToolRun, run_tool

DATA = Path(__file__).parent.parent / "data"
SAMPLE = DATA / "features_sample.ll"

# Counted by hand from features_sample.ll (see the comments in that file). @kind: entry -> other, zero, one, one
# (switch with two cases to `one`), zero/one/other -> done (phi of 3). @loop: entry -> head (2 phis of 2) ->
# body | exit, body -> head.
SAMPLE_AUTOPHASE = {
    "BBNumArgsHi": 0,
    "BBNumArgsLo": 2,
    "onePred": 4,
    "onePredOneSuc": 3,
    "onePredTwoSuc": 0,
    "oneSuccessor": 5,
    "twoPred": 2,
    "twoPredOneSuc": 1,
    "twoEach": 1,
    "twoSuccessor": 1,
    "morePreds": 1,
    "BB03Phi": 2,
    "BBHiPhi": 0,
    "BBNoPhi": 7,
    "BeginPhi": 2,
    "BranchCount": 6,
    "returnInt": 2,
    "CriticalCount": 2,  # entry -> one, twice: 4 successors, and `one` has 2 predecessors
    "NumEdges": 11,
    "const32Bit": 10,  # 3 case values, add 1, phi 0, implicit alloca size 1, store 0, 2 x phi 0, add 1
    "const64Bit": 3,  # gep 0, gep 1, mul -1
    "numConstZeroes": 6,
    "numConstOnes": 5,
    "UncondBranches": 5,
    "binaryConstArg": 3,
    "NumAShrInst": 0,
    "NumAddInst": 3,
    "NumAllocaInst": 1,
    "NumAndInst": 0,
    "BlockMid": 0,
    "BlockLow": 9,
    "NumBitCastInst": 0,
    "NumBrInst": 6,
    "NumCallInst": 2,
    "NumGetElementPtrInst": 1,
    "NumICmpInst": 1,
    "NumLShrInst": 0,
    "NumLoadInst": 1,
    "NumMulInst": 1,
    "NumOrInst": 0,
    "NumPHIInst": 3,
    "NumRetInst": 2,
    "NumSExtInst": 2,
    "NumSelectInst": 0,
    "NumShlInst": 0,
    "NumStoreInst": 2,
    "NumSubInst": 0,
    "NumTruncInst": 0,
    "NumXorInst": 1,
    "NumZExtInst": 0,
    "TotalBlocks": 9,
    "TotalInsts": 27,
    "TotalMemInst": 7,  # 2 calls, alloca, 2 stores, gep, load
    "TotalFuncs": 2,  # @external is only declared
    "ArgsPhi": 7,
    "testUnary": 4,  # alloca, load, 2 x sext
}


@pytest.fixture(scope="module")
def sample(toolchain: Toolchain) -> FeatureModule:
    return FeatureModule.from_path(toolchain, SAMPLE)


@pytest.fixture(scope="module")
def loop_sum_module(toolchain: Toolchain, loop_sum: CoreModule) -> FeatureModule:
    return FeatureModule.from_bytes(toolchain, loop_sum.bitcode, "loop_sum")


def _counts(names: tuple[str, ...], vector: npt.NDArray[np.float64]) -> dict[str, int]:
    assert vector.dtype == np.float64 and vector.shape == (len(names),)
    return dict(zip(names, (int(v) for v in vector), strict=True))


def test_autophase_matches_hand_counts(sample: FeatureModule) -> None:
    assert tuple(SAMPLE_AUTOPHASE) == AUTOPHASE_NAMES
    assert _counts(AUTOPHASE_NAMES, Autophase().extract(sample)) == SAMPLE_AUTOPHASE


EXCEPTIONS_IR = b"""
define i32 @eh(ptr %target) personality ptr @pers {
entry:
  indirectbr ptr %target, [label %a, label %b]
a:
  %r = invoke i32 @may_throw(i64 -1) to label %b unwind label %lp
b:
  %p = phi i32 [ 0, %entry ], [ %r, %a ]
  ret i32 %p
lp:
  %l = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %l
}
declare i32 @may_throw(i64)
declare i32 @pers(...)
"""


def test_autophase_follows_indirectbr_and_invoke_edges(toolchain: Toolchain) -> None:
    # llvm-dis prints the invoke's `to label` and the landingpad clause on continuation lines.
    features = _counts(AUTOPHASE_NAMES, Autophase().extract(FeatureModule.from_bytes(toolchain, EXCEPTIONS_IR)))
    nonzero = {name: value for name, value in features.items() if value}
    assert nonzero == {
        "NumEdges": 4,  # entry -> a, b; a -> b (normal), lp (unwind)
        "CriticalCount": 2,  # entry -> b and a -> b: two-successor sources, b has two predecessors
        "twoSuccessor": 2,
        "onePred": 2,
        "onePredTwoSuc": 1,
        "twoPred": 1,
        "BB03Phi": 1,
        "BBNoPhi": 3,
        "BeginPhi": 1,
        "BBNumArgsLo": 1,
        "ArgsPhi": 2,
        "NumPHIInst": 1,
        "const32Bit": 1,
        "const64Bit": 1,
        "numConstZeroes": 1,  # phi 0, invoke argument -1
        "NumRetInst": 1,
        "TotalMemInst": 1,  # the invoke; not a call, so no NumCallInst and no returnInt
        "BlockLow": 4,
        "TotalBlocks": 4,
        "TotalInsts": 6,
        "TotalFuncs": 1,
    }


def test_text_and_bitcode_inputs_agree(toolchain: Toolchain, sample: FeatureModule) -> None:
    bitcode = run_tool([toolchain.tool("llvm-as"), str(SAMPLE), "-o", "-"]).stdout
    from_bitcode = FeatureModule.from_bytes(toolchain, bitcode)
    assert from_bitcode.is_bitcode and not sample.is_bitcode
    assert from_bitcode.sha256 != sample.sha256
    for representation in (Autophase(), OpcodeTypeHistogram()):
        assert np.array_equal(representation.extract(from_bitcode), representation.extract(sample))


def test_text_is_disassembled_once(toolchain: Toolchain, loop_sum: CoreModule, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counting(argv: list[str], **kwargs: object) -> ToolRun:
        calls.append(Path(argv[0]).name)
        return run_tool(argv, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module_mod, "run_tool", counting)
    module = FeatureModule.from_bytes(toolchain, loop_sum.bitcode)
    assert module.text is module.text and "define dso_local i32 @checksum" in module.text
    assert calls == ["llvm-dis"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ((DATA / "malformed.ll").read_bytes(), "4:3: error: expected value token"),
        (b"BC\xc0\xde not really bitcode", "Invalid bitcode signature"),
    ],
    ids=["text", "bitcode"],
)
def test_malformed_module_is_a_one_line_error(toolchain: Toolchain, data: bytes, expected: str) -> None:
    module = FeatureModule.from_bytes(toolchain, data, "bad")
    with pytest.raises(InputError, match=expected) as raised:
        Autophase().extract(module)
    assert "\n" not in str(raised.value) and str(raised.value).startswith("bad is not a valid LLVM")
    with pytest.raises(InputError, match="opt cannot analyse the module") as raised:
        FunctionProperties().extract(module)
    assert "\n" not in str(raised.value)


def test_missing_file_is_an_input_error(toolchain: Toolchain, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        FeatureModule.from_path(toolchain, tmp_path / "absent.bc")


def test_func_properties_aggregate_is_the_sum_over_functions(loop_sum_module: FeatureModule) -> None:
    representation = FunctionProperties()
    functions = representation.per_function(loop_sum_module)
    assert sorted(functions) == ["checksum", "classify", "main"]
    for properties in functions.values():
        assert tuple(properties) == FUNCTION_FEATURES  # LLVM 19 prints exactly the documented list, in order
    features = _counts(representation.feature_names(), representation.extract(loop_sum_module))
    for name in FUNCTION_FEATURES:
        assert features[name] == sum(properties[name] for properties in functions.values())
    assert features["num_functions"] == 3
    assert features["max_BasicBlockCount"] == max(p["BasicBlockCount"] for p in functions.values())
    assert features["MaxLoopDepth"] == 3 and features["max_MaxLoopDepth"] == 2  # checksum nests two loops
    assert features == aggregate(functions)


def test_histogram_counts_opcodes_types_and_globals(sample: FeatureModule) -> None:
    histogram = OpcodeTypeHistogram()
    features = _counts(histogram.feature_names(), histogram.extract(sample))
    opcodes = {k: v for k, v in features.items() if k.startswith("op_") and v}
    assert opcodes == {
        "op_ret": 2,
        "op_br": 6,
        "op_switch": 1,
        "op_add": 3,
        "op_mul": 1,
        "op_xor": 1,
        "op_alloca": 1,
        "op_load": 1,
        "op_store": 2,
        "op_getelementptr": 1,
        "op_sext": 2,
        "op_icmp": 1,
        "op_phi": 3,
        "op_call": 2,
    }
    types = {k: v for k, v in features.items() if k.startswith("type_") and v}
    # void: ret, br, switch, store; i32: add, 2 calls, 3 phis, xor, add; i64: 2 sext, mul, add; ptr: alloca, gep
    assert types == {"type_void": 11, "type_i1": 1, "type_i8": 1, "type_i32": 8, "type_i64": 4, "type_pointer": 2}
    assert sum(opcodes.values()) == sum(types.values()) == SAMPLE_AUTOPHASE["TotalInsts"]
    module_counts = {k: v for k, v in features.items() if k.startswith("module_")}
    assert module_counts == {
        "module_defined_functions": 2,
        "module_declared_functions": 1,
        "module_global_variables": 2,
        "module_string_constants": 1,
        "module_constant_data_bytes": 4,
        "module_variable_data_bytes": 4,
    }


def test_tokens_ignore_value_and_block_names(toolchain: Toolchain) -> None:
    text = SAMPLE.read_text()
    renamed = re.sub(r"\bbody\b", "loop.body", re.sub(r"%i\b", "%index", text.replace("%sum", "%acc")))
    assert renamed != text
    tokens = IRTokens()
    original = tokens.encode(FeatureModule.from_bytes(toolchain, text.encode()))
    assert np.array_equal(tokens.encode(FeatureModule.from_bytes(toolchain, renamed.encode())), original)
    changed = text.replace("%next = add i32 %i, 1", "%next = add i32 %i, 2")
    assert not np.array_equal(tokens.encode(FeatureModule.from_bytes(toolchain, changed.encode())), original)


def test_tokens_are_bounded_deterministic_and_capped(toolchain: Toolchain, loop_sum_module: FeatureModule) -> None:
    tokens = IRTokens()
    encoded = tokens.encode(loop_sum_module)
    assert encoded.dtype == np.int32 and 500 < len(encoded) <= tokens.max_tokens
    assert encoded.min() > 0 and encoded.max() < tokens.vocabulary_size
    again = IRTokens().encode(FeatureModule.from_bytes(toolchain, loop_sum_module.data))
    assert np.array_equal(encoded, again)
    capped = IRTokens(max_tokens=25)
    assert np.array_equal(capped.encode(loop_sum_module), encoded[:25])
    assert capped.name != tokens.name  # the cap changes the output, so it is part of the cache key


def test_tokens_ignore_debug_info(toolchain: Toolchain) -> None:
    def tokens(*flags: str) -> list[str]:
        argv = [toolchain.tool("clang"), *flags, "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c"]
        bitcode = run_tool([*argv, str(DATA / "loop_sum.c"), "-o", "-"]).stdout
        return normalize(FeatureModule.from_bytes(toolchain, bitcode).text)

    plain = tokens()
    assert plain == tokens("-g")
    assert "<local>" in plain and "<global>" in plain and not any(t.startswith(("!", "#", "%")) for t in plain)


class _Counting:
    """Autophase that counts how often it really runs."""

    name = "counting"
    version = 1

    def __init__(self) -> None:
        self.calls = 0

    def feature_names(self) -> tuple[str, ...]:
        return AUTOPHASE_NAMES

    def extract(self, module: FeatureModule) -> npt.NDArray[np.float64]:
        self.calls += 1
        return Autophase().extract(module)


def test_cache_round_trip_hits_the_store(sample: FeatureModule, store: EvaluationStore) -> None:
    cache = FeatureCache(store)
    counting = _Counting()
    first = extract_all([counting, IRTokens()], sample, cache)
    second = extract_all([counting, IRTokens()], sample, cache)
    assert counting.calls == 1
    assert set(first) == {"counting", IRTokens().name}
    for name, array in first.items():
        assert np.array_equal(second[name], array) and second[name].dtype == array.dtype
    assert store.stats().artifacts_by_kind == {"features": 2}
    assert extract_all([counting], sample)["counting"].tolist() == first["counting"].tolist()
    assert counting.calls == 2  # without a cache it runs again
    with pytest.raises(ValueError, match="unique name"):
        extract_all([counting, counting], sample)


def test_representations_are_deterministic(loop_sum_module: FeatureModule, toolchain: Toolchain) -> None:
    fresh = FeatureModule.from_bytes(toolchain, loop_sum_module.data)
    for representation in (Autophase(), OpcodeTypeHistogram(), FunctionProperties()):
        assert np.array_equal(representation.extract(loop_sum_module), representation.extract(fresh))
