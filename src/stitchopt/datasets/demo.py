"""The built-in demo corpus: small self-checking C programs written for stitchopt (`bench://demo-v1/...`)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from stitchopt.datasets.uri import BenchmarkUri
from stitchopt.errors import DatasetError

DATASET = "demo"
VERSION = 1


def demo_directory() -> Path:
    """The programs' directory: also a validation suite every install has (`--validate demo`)."""
    return Path(str(resources.files("stitchopt.datasets").joinpath(f"demo_v{VERSION}")))


def demo_programs() -> dict[BenchmarkUri, Path]:
    """Every program of the corpus, by URI, in name order."""
    return {BenchmarkUri(DATASET, VERSION, path.stem): path for path in sorted(demo_directory().glob("*.c"))}


def resolve(uri: BenchmarkUri) -> Path:
    """The source file of a benchmark URI."""
    if (uri.dataset, uri.version) != (DATASET, VERSION):
        raise DatasetError(f"unknown dataset {uri.dataset}-v{uri.version}: this version knows only demo-v1")
    path = demo_programs().get(uri)
    if path is None:
        raise DatasetError(
            f"no benchmark {uri}; the demo programs are bench://demo-v1/<name> with names: "
            + ", ".join(u.name for u in demo_programs())
        )
    return path
