"""The pool's verdicts (`labels.verdicts`): every list of a directory's pools judged once, failed ones known to
studies, a rerun that judges only what no verdict of this toolchain covers, and a damaged file in one line."""

from __future__ import annotations

import gzip
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from stitchopt.errors import InputError
from stitchopt.labels.labelset import LabelSet
from stitchopt.labels.shards import save_matrix_shard
from stitchopt.labels.verdicts import failed_lists, judged_lists, load_verdicts, pool_lists, validate_lists
from stitchopt.passes.catalogue import Catalogue
from stitchopt.tune.acceptance import ListValidation, Verified

POOL = (("sroa", "instcombine"), ("mem2reg",), ("simplifycfg", "sroa"))


def fake_validation(failing: str) -> tuple[ListValidation, list[str]]:
    """A validation that fails every pipeline naming `failing` (a stand-in for a suite that caught it), and the
    pipelines it was asked about."""
    asked: list[str] = []

    def check(pipeline: str) -> Verified:
        asked.append(pipeline)
        return Verified(failing not in pipeline, "failed demo: a.c link-failed" if failing in pipeline else "passed")

    return cast(ListValidation, SimpleNamespace(check=check, suites=(SimpleNamespace(name="demo"),))), asked


def test_pool_lists_are_judged_once_per_toolchain(catalogue: Catalogue, tmp_path: Path) -> None:
    save_matrix_shard(tmp_path, LabelSet("t", catalogue.identity, "demo-v1", POOL, (), 0.0))
    assert pool_lists(tmp_path) == POOL
    validation, asked = fake_validation("mem2reg")
    saves: list[Path] = []
    run = validate_lists(tmp_path, POOL, validation, catalogue, "llvm-a", on_save=saves.append)
    assert run.validated == 3 and len(asked) == 3 and saves == [run.path]  # one commit for fewer than 10 lists
    assert run.path == tmp_path / "validation" / "demo.json.gz"
    assert failed_lists(tmp_path) == {("mem2reg",)}
    assert judged_lists(tmp_path) == {POOL[0]: True, POOL[1]: False, POOL[2]: True}
    (verdict,) = [v for v in load_verdicts(run.path) if not v.passed]
    assert verdict.note == "failed demo: a.c link-failed" and verdict.toolchain == "llvm-a"
    again = validate_lists(tmp_path, POOL, validation, catalogue, "llvm-a")
    assert again.validated == 0 and len(asked) == 3  # every list has a verdict of this toolchain
    other = validate_lists(tmp_path, POOL[:1], validation, catalogue, "llvm-b")
    assert other.validated == 1 and len(load_verdicts(run.path)) == 3  # another LLVM judges again, in place


def test_a_damaged_verdicts_file_is_one_line(catalogue: Catalogue, tmp_path: Path) -> None:
    path = tmp_path / "validation" / "demo.json.gz"
    path.parent.mkdir()
    path.write_bytes(b"not gzip")
    with pytest.raises(InputError, match="not a stitchopt verdicts file") as error:
        failed_lists(tmp_path)
    assert "\n" not in str(error.value)
    path.write_bytes(gzip.compress(b'{"format": 1, "verdicts": [{"passes": ["sroa"]}]}'))
    with pytest.raises(InputError, match="not a verdicts file of format 1 .*'passed'.*labels validate"):
        failed_lists(tmp_path)
    assert failed_lists(tmp_path / "none") == frozenset()
