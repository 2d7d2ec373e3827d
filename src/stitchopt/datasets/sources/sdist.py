"""Fetch one exact source distribution from a PyPI index, checked against the index's sha256.

`pip download --no-binary` would also prepare the package's metadata, which for meson or CMake projects means
configuring the whole build (minutes) and building their build tools from source; reading the index (PEP 691
JSON) and downloading the archive directly does neither.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

from stitchopt.errors import DatasetError

INDEX_ENV = "PIP_INDEX_URL"
DEFAULT_INDEX = "https://pypi.org/simple"
_JSON_API = "application/vnd.pypi.simple.v1+json"
_ARCHIVE_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2", ".tgz")


def fetch_sdist(name: str, version: str, target: Path, timeout: float = 600.0) -> Path:
    """Download the sdist of `name==version` into `target` and return its path."""
    index = os.environ.get(INDEX_ENV, DEFAULT_INDEX).rstrip("/")
    listing = _read(f"{index}/{_normalized(name)}/", timeout, accept=_JSON_API)
    try:
        files = json.loads(listing)["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{index}: no PEP 691 JSON listing for {name} ({exc})") from exc
    entry = next((f for f in files if is_sdist_of(f.get("filename", ""), name, version)), None)
    if entry is None:
        raise DatasetError(f"{index} has no source distribution of {name}=={version}")
    payload = _read(entry["url"], timeout)
    expected = entry.get("hashes", {}).get("sha256")
    actual = hashlib.sha256(payload).hexdigest()
    if expected and actual != expected:
        raise DatasetError(f"{entry['filename']}: sha256 {actual} does not match the index's {expected}")
    target.mkdir(parents=True, exist_ok=True)
    archive = target / str(entry["filename"])
    archive.write_bytes(payload)
    return archive


def _normalized(name: str) -> str:
    """PEP 503 project name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def is_sdist_of(filename: str, name: str, version: str) -> bool:
    """True when `filename` is the source archive of exactly `name==version` (PEP 503 names, any sdist suffix)."""
    stem = next((filename[: -len(s)] for s in _ARCHIVE_SUFFIXES if filename.endswith(s)), None)
    if stem is None or "-" not in stem:
        return False
    project, _, release = stem.rpartition("-")
    return _normalized(project) == _normalized(name) and release == version


def _read(url: str, timeout: float, accept: str | None = None) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as exc:
        raise DatasetError(f"cannot download {url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DatasetError(f"cannot download {url}: {reason} (network unavailable?)") from exc
