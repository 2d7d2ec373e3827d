"""A unit's language, read from its source's suffix: what the chooser per language and per-language studies
split units by."""

import pytest

from stitchopt.datasets.benchmarks import unit_language
from stitchopt.toolchain.frontend import ir_language, source_language


@pytest.mark.parametrize(
    ("uri", "language"),
    [
        ("bench://debian-v1/box2d/src/collision/b2_distance.cpp", "c++"),
        ("bench://debian-v1/woff2/src/font.cc@1a2b3c4d", "c++"),  # a variant: the suffix is before its hash
        ("bench://debian-v1/leveldb/db/db_impl.cc#_ZN7leveldb6DBImpl5WriteE", "c++"),  # one of its functions
        ("bench://debian-v1/sed/lib/localeinfo.c", "c"),
        ("bench://pypi-v1/lupa/lupa/lua54.c@9f8e7d6c", "c"),
        ("bench://demo-v1/avl_tree", None),
    ],
)
def test_a_units_language_is_its_source_suffixs(uri: str, language: str | None) -> None:
    assert unit_language(uri) == language


@pytest.mark.parametrize(
    ("source", "language"),
    [
        ("/tmp/x/src/a.C", "c++"),
        ("lib/b.c", "c"),
        ("a.ll", None),
        ("<stdin>", None),
        ("", None),
        ("a.c.orig", None),
        ("lib/.c", "c"),  # as LLVM's sys::path::extension, hence clang and the plugin, read it
        ("lib.c/", None),
        ("lib.c/..", None),
    ],
)
def test_a_source_files_language(source: str, language: str | None) -> None:
    """The suffix read the same way in Python and the clang plugin (`sys::path::extension`), where pathlib
    differs (it gives a dot file no suffix)."""
    assert source_language(source) == language


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("attributes #0 = { mustprogress noinline }\n", "c++"),
        ("define void @f() #1 {\n  ret void\n}\nattributes #1 = { nounwind mustprogress }", "c++"),
        ('!7 = !{!"Simple C++ TBAA"}\n', "c++"),
        ('!7 = !{!"Simple C/C++ TBAA"}\n', "c"),
        ('attributes #0 = { "mustprogress" nounwind }\n!7 = !{!"Simple C/C++ TBAA"}\n', "c"),  # a string attribute
        ('!12 = !{!"llvm.loop.mustprogress"}\n', None),  # C11's loops have it too
        ("attributes #0 = { nounwind }\r\nattributes #1 = { mustprogress }\r\n", "c++"),
        ("", None),
    ],
)
def test_the_language_a_modules_text_shows(text: str, language: str | None) -> None:
    """What clang writes only for C++ or only for C, read line by line as the plugin reads the same text."""
    assert ir_language(text) == language
