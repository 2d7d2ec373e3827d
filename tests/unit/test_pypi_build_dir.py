"""meson-python sdists get a fixed build directory: its default, `.mesonpy-<random>`, would name the sources it
generates differently on every build."""

from pathlib import Path

import pytest

from stitchopt.datasets.sources.pypi import _builds_with_meson


@pytest.mark.parametrize(
    ("pyproject", "meson"),
    [
        ('[build-system]\nrequires = ["meson-python", "cython"]\nbuild-backend = "mesonpy"\n', True),
        ("[build-system]\nbuild-backend = 'mesonpy'\n", True),
        ('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n', False),
        ('[tool.notes]\ntext = "build-backend = mesonpy"\n', False),
        (None, False),
    ],
)
def test_only_a_meson_python_sdist_gets_the_fixed_build_directory(
    tmp_path: Path, pyproject: str | None, meson: bool
) -> None:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    assert _builds_with_meson(tmp_path) is meson
