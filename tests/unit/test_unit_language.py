"""A dataset unit's language, read from its URI: what per-language studies split the units by."""

import pytest

from stitchopt.datasets.benchmarks import is_cxx_unit


@pytest.mark.parametrize(
    ("uri", "cxx"),
    [
        ("bench://debian-v1/box2d/src/collision/b2_distance.cpp", True),
        ("bench://debian-v1/woff2/src/font.cc@1a2b3c4d", True),  # a variant: the suffix is before its hash
        ("bench://debian-v1/leveldb/db/db_impl.cc#_ZN7leveldb6DBImpl5WriteE", True),  # one of its functions
        ("bench://debian-v1/sed/lib/localeinfo.c", False),
        ("bench://pypi-v1/lupa/lupa/lua54.c@9f8e7d6c", False),
        ("bench://demo-v1/avl_tree", False),
    ],
)
def test_a_unit_is_cxx_by_its_source_suffix(uri: str, cxx: bool) -> None:
    assert is_cxx_unit(uri) is cxx
