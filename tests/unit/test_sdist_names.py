"""Which index entry is the sdist of an exact release: the names PyPI actually uses."""

from pathlib import Path

import pytest

from stitchopt.datasets.sources.sdist import fetch_sdist, is_sdist_of
from stitchopt.errors import DatasetError


@pytest.mark.parametrize(
    ("filename", "name", "version"),
    [
        ("ruamel_yaml_clib-0.2.15.tar.gz", "ruamel.yaml.clib", "0.2.15"),
        ("faust_cchardet-3.2.0.tar.gz", "faust-cchardet", "3.2.0"),
        ("PyNaCl-1.6.2.tar.gz", "pynacl", "1.6.2"),
        ("netifaces-0.11.0.zip", "netifaces", "0.11.0"),
    ],
)
def test_sdist_filenames_match_normalized_names(filename: str, name: str, version: str) -> None:
    assert is_sdist_of(filename, name, version)


@pytest.mark.parametrize(
    "filename",
    ["numpy-2.3.5-cp311-cp311-manylinux_2_28_x86_64.whl", "numpy-2.3.50.tar.gz", "numpyx-2.3.5.tar.gz"],
)
def test_wheels_and_other_releases_are_not_the_sdist(filename: str) -> None:
    assert not is_sdist_of(filename, "numpy", "2.3.5")


def test_an_unreachable_index_is_a_one_line_dataset_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    with pytest.raises(DatasetError, match=r"cannot download .*127\.0\.0\.1:9.*network unavailable"):
        fetch_sdist("lz4", "4.4.5", tmp_path, timeout=5)
    assert not any(tmp_path.iterdir())
