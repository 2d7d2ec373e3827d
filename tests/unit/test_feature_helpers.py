"""Feature helpers that need no LLVM: the standardizer, parsing opt's function properties, IR text helpers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stitchopt.errors import InputError
from stitchopt.features.base import Standardizer
from stitchopt.features.func_properties import FEATURE_NAMES, aggregate, parse_function_properties
from stitchopt.features.histogram import result_type, type_size
from stitchopt.features.irtext import OPCODES, aggregate_parts, read_type, split_fields
from stitchopt.features.tokens import VOCABULARY, IRTokens, normalize


def test_standardizer_round_trips_through_json() -> None:
    matrix = np.array([[0.0, 5.0, 100.0], [0.0, 7.0, 1000.0], [0.0, 9.0, 10.0]])
    fitted = Standardizer.fit(matrix)
    restored = Standardizer.from_dict(json.loads(json.dumps(fitted.to_dict())))
    assert restored.log and np.array_equal(restored.transform(matrix), fitted.transform(matrix))
    scaled = fitted.transform(matrix)
    assert np.allclose(scaled[:, 1:].mean(axis=0), 0) and np.allclose(scaled[:, 1:].std(axis=0), 1)
    assert np.array_equal(scaled[:, 0], np.zeros(3)) and fitted.std[0] == 1.0  # a constant column maps to 0
    assert np.allclose(fitted.mean, np.log1p(matrix).mean(axis=0))
    assert np.array_equal(fitted.transform(matrix[1]), scaled[1])  # one vector as well as a matrix


def test_standardizer_without_log_is_plain_z_scores() -> None:
    matrix = np.array([[1.0, 10.0], [3.0, 30.0]])
    plain = Standardizer.fit(matrix, log=False)
    assert np.allclose(plain.transform(matrix), [[-1, -1], [1, 1]])
    assert not Standardizer.from_dict(plain.to_dict()).log


def test_standardizer_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="non-empty 2-D"):
        Standardizer.fit(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="expected 2 features"):
        Standardizer.fit(np.ones((2, 2))).transform(np.ones(3))
    with pytest.raises(InputError, match="malformed standardizer"):
        Standardizer.from_dict({"mean": [0.0], "std": [0.0], "log": True})
    with pytest.raises(InputError, match="malformed standardizer"):
        Standardizer.from_dict({"mean": [0.0]})


PRINTED = """Printing analysis results of CFA for function 'f':
BasicBlockCount: 3
TotalInstructionCount: 10
MaxLoopDepth: 1
SomethingNewer: 9

Printing analysis results of CFA for function 'g':
BasicBlockCount: 5
TotalInstructionCount: 4
"""


def test_function_properties_parse_and_aggregate() -> None:
    functions = parse_function_properties(PRINTED)
    assert functions == {
        "f": {"BasicBlockCount": 3, "TotalInstructionCount": 10, "MaxLoopDepth": 1, "SomethingNewer": 9},
        "g": {"BasicBlockCount": 5, "TotalInstructionCount": 4},
    }
    totals = aggregate(functions)
    assert tuple(totals) == FEATURE_NAMES  # unknown names dropped, missing ones 0, fixed order
    assert totals["BasicBlockCount"] == 8 and totals["max_BasicBlockCount"] == 5
    assert totals["TotalInstructionCount"] == 14 and totals["max_TotalInstructionCount"] == 10
    assert totals["num_functions"] == 2 and totals["LoadInstCount"] == 0
    assert aggregate({})["max_MaxLoopDepth"] == 0


def test_type_reading() -> None:
    text = "{ i32, [2 x <4 x i8>] } %x"
    assert text[: read_type(text, 0)] == "{ i32, [2 x <4 x i8>] }"
    assert read_type("inreg i32", 0) == 0 and read_type("i32 %x", 0) == 3
    assert split_fields("i32, { i8, i16 }, ptr") == ["i32", "{ i8, i16 }", "ptr"]
    assert aggregate_parts("[4 x i32]") == ("array", 4, ["i32"])
    assert aggregate_parts("<{ i8, i64 }>") == ("struct", 2, ["i8", "i64"])
    named = {"%struct.S": "{ i32, ptr, [3 x i16] }"}
    assert type_size("%struct.S", named) == 4 + 8 + 6
    assert result_type("call", " noundef zeroext i1 @f(i32 1)", {}) == "i1"
    assert result_type("call", " i32 (ptr, ...) @printf(ptr @s)", {}) == "i32"
    assert result_type("extractvalue", " %struct.S %s, 2", named) == "[3 x i16]"
    assert result_type("extractvalue", " { i64, i1 } %r, 1, !dbg !4", {}) == "i1"
    assert result_type("fcmp", " fast olt <2 x float> %a, %b", {}) == "<2 x float>"
    assert result_type("zext", " i8 %c to i32, !dbg !3", {}) == "i32"
    assert len(OPCODES) == len(set(OPCODES)) == 65


def test_token_normalization() -> None:
    text = (
        "%struct.S = type { i32, ptr }\n"
        '@s = private constant [3 x i8] c"a;b", align 1 ; comment\n'
        "define i32 @f(i32 %x) #0 {\n"
        "entry:\n"
        "  %y = add nsw i32 %x, -1, !dbg !7\n"
        "    #dbg_value(i32 %y, !8, !DIExpression(), !7)\n"
        "  %z = mul i32 %y, 1000\n"
        "  %p = getelementptr %struct.S, ptr @s, i64 0, i32 1\n"
        "  ret i32 %z\n"
        "}\n"
        "attributes #0 = { nounwind }\n"
        "!7 = !{}\n"
    )
    assert normalize(text) == [
        "<named_type>",
        "=",
        "type",
        "{",
        "i32",
        ",",
        "ptr",
        "}",
        "<global>",
        "=",
        "private",
        "constant",
        "[",
        "<int_small>",
        "x",
        "i8",
        "]",
        "<string>",
        ",",
        "align",
        "<int1>",
        "define",
        "i32",
        "<global>",
        "(",
        "i32",
        "<local>",
        ")",
        "{",
        "<label>",
        "<local>",
        "=",
        "add",
        "nsw",
        "i32",
        "<local>",
        ",",
        "<int-1>",
        "<local>",
        "=",
        "mul",
        "i32",
        "<local>",
        ",",
        "<int_large>",
        "<local>",
        "=",
        "getelementptr",
        "<named_type>",
        ",",
        "ptr",
        "<global>",
        ",",
        "i64",
        "<int0>",
        ",",
        "i32",
        "<int1>",
        "ret",
        "i32",
        "<local>",
        "}",
    ]
    tokens = IRTokens(hash_buckets=8)
    assert tokens.token_id("<pad>") == 0 and tokens.token_id("add") == VOCABULARY.index("add")
    unknown = tokens.token_id("preserve_mostcc")
    assert len(VOCABULARY) <= unknown < tokens.vocabulary_size == len(VOCABULARY) + 8
    assert unknown == IRTokens(hash_buckets=8).token_id("preserve_mostcc")  # stable, not Python's salted hash()
    assert len(VOCABULARY) == len(set(VOCABULARY))
