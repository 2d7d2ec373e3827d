"""Benchmark URIs: `bench://<dataset>-v<N>/<name>`, stable names for programs in results and reports."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stitchopt.errors import DatasetError

SCHEME = "bench://"
_URI_RE = re.compile(r"bench://([a-z0-9][a-z0-9_.-]*?)-v(\d+)/(.+)")


@dataclass(frozen=True)
class BenchmarkUri:
    dataset: str
    version: int
    name: str

    def __str__(self) -> str:
        return f"{SCHEME}{self.dataset}-v{self.version}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> BenchmarkUri:
        match = _URI_RE.fullmatch(text)
        if match is None:
            raise DatasetError(f"malformed benchmark URI {text!r}: expected bench://<dataset>-v<N>/<name>")
        return cls(match.group(1), int(match.group(2)), match.group(3))


def is_benchmark_uri(text: str) -> bool:
    return text.startswith(SCHEME)


def is_under(uri: str, roots: tuple[str, ...]) -> bool:
    """`uri` is one of `roots` or inside one: a dataset (`bench://pypi-v1`), a package (`bench://pypi-v1/lz4`), a
    unit and its function units (`<unit>#<function>`). Whole path segments only: `.../lz4` is not `.../lz4x`."""
    return any(uri == root or uri.startswith((f"{root}/", f"{root}#")) for root in (r.rstrip("/") for r in roots))
