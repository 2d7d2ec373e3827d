"""`labels info` counts a unit as queued exactly when `labels search` would search it: by URI and IR hash."""

from stitchopt.labels.shards import SearchedUnit, _per_package


def searched(uri: str, ir_sha256: str) -> SearchedUnit:
    return SearchedUnit(uri, ir_sha256, "deflate", "train", 1000, None, None, (), (), 1.0)


def test_a_unit_whose_ir_changed_since_its_search_is_queued_again() -> None:
    units = [
        searched("bench://pypi-v1/deflate/lib/utils.c", "aaa"),
        searched("bench://pypi-v1/deflate/lib/crc.c", "bbb"),
    ]
    queue = [
        ("bench://pypi-v1/deflate/lib/utils.c", "aaa", "deflate", "train", 0),  # searched as it is
        ("bench://pypi-v1/deflate/lib/crc.c", "ccc", "deflate", "train", 0),  # rebuilt into other IR
        ("bench://pypi-v1/deflate/lib/adler.c", "ddd", "deflate", "train", 0),  # never searched
    ]
    (row,) = _per_package(units, queue)
    assert (row.modules, row.queued) == (2, 2)
