"""Deterministic train/validation/test splits by package, never by file: near-identical files of one package
(generated code, copied helpers) must not sit on both sides of an evaluation."""

from __future__ import annotations

import hashlib

SPLITS = (("train", 0.7), ("validation", 0.15), ("test", 0.15))


def split_of(package: str, salt: str = "stitchopt-v1") -> str:
    """The split a package belongs to, from a hash of its name: stable across machines and builds."""
    digest = hashlib.sha256(f"{salt}\0{package}".encode()).digest()
    position = int.from_bytes(digest[:8], "big") / 2**64
    cumulative = 0.0
    for name, share in SPLITS:
        cumulative += share
        if position < cumulative:
            return name
    return SPLITS[-1][0]
