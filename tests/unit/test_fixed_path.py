"""Builds at one fixed path: the same directory for a unit on every build, empty at the start, gone after."""

from pathlib import Path

import pytest

from stitchopt.datasets.sources.fixed_path import fixed_tree
from stitchopt.errors import DatasetError


def test_a_unit_is_built_at_the_same_path_every_time_and_it_is_removed_after(tmp_path: Path) -> None:
    root = tmp_path / "root"
    paths = []
    for _ in range(2):
        with fixed_tree(root, "deflate") as tree:
            assert not tree.exists()
            tree.mkdir()
            (tree / "utils.c").write_text("int f(void) { return 0; }\n")
            paths.append(tree)
        assert not tree.exists()
    assert paths[0] == paths[1] == root / "deflate"
    assert root.stat().st_mode & 0o077 == 0


def test_a_tree_left_by_an_interrupted_build_is_removed_first(tmp_path: Path) -> None:
    leftover = tmp_path / "root" / "lmdb"
    leftover.mkdir(parents=True)
    (leftover / "mdb.o").write_text("stale")
    with fixed_tree(tmp_path / "root", "lmdb") as tree:
        assert tree == leftover
        assert not tree.exists()


@pytest.mark.parametrize("kind", ["symlink", "dangling symlink", "file"])
def test_a_root_that_is_not_a_directory_of_ours_is_refused(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "root"
    if kind == "file":
        root.write_text("")
    else:
        if kind == "symlink":
            (tmp_path / "elsewhere").mkdir()
        root.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DatasetError, match="symlink or not this user's"), fixed_tree(root, "deflate"):
        pass
