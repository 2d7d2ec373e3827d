"""A chooser for static mode with the -Oz backup: the list that gained most on the training programs nearest to
this one, counting only gains.

With the backup a list that makes a program larger costs nothing (-Oz is kept), so what a list is worth to a
program is its gain alone, `log(min(ratio, 1))`. The regression ranker and the softmax chooser learn sizes with
their losses, which steers them to lists that are safe on average and leaves the best single list the winner of
cross-validation; averaging the gains of the k nearest training programs (Euclidean distance on the standardized
features, each neighbour weighing the same) keeps a list that shrinks programs of this kind even when it grows
others. The average is shrunk toward each list's mean gain over all training programs, as the ranker's is.

C and C++ units gain from different lists, and the features alone do not keep them apart: a chooser per
language answers a unit from its own language's programs, neighbours and means both (docs/results.md, "a
chooser per language"), each language with the neighbour count and shrink cross-validation chose for it where
training tuned them per language (244 C++ units want fewer neighbours than 2,004 C units).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from stitchopt.models.covering import cover_order

NEIGHBOUR_COUNTS = (5, 10, 20, 40)  # the grids package-grouped cross-validation chooses from
NEIGHBOUR_SHRINKS = (0.5, 1.0)


def backup_gains(ratios: np.ndarray) -> np.ndarray:
    """programs x lists: each list's log size ratio to -Oz where it is smaller, else 0 (failed lists too)."""
    finite = np.where(np.isfinite(ratios), ratios, 1.0)
    return np.asarray(np.log(np.clip(finite, 1e-9, 1.0)), dtype=np.float64)


def shrunk_mean(values: np.ndarray, nearest: np.ndarray, shrink: float) -> np.ndarray:
    """programs x lists: each program's mean of `values` (training programs x lists) over its `nearest` rows,
    weight `shrink`, and over all training programs, weight 1 - `shrink`."""
    return np.asarray(shrink * values[nearest].mean(axis=1) + (1.0 - shrink) * values.mean(axis=0))


@dataclass
class NeighbourChooser:
    neighbors: int = 10
    shrink: float = 0.5  # weight of the neighbours' mean; 1 - shrink for each list's mean over all programs
    train_features: np.ndarray | None = None  # programs x d, standardized
    train_gains: np.ndarray | None = None  # programs x lists, `backup_gains`
    languages: tuple[str, ...] = ()  # a chooser per language: the languages its programs are written in
    train_languages: np.ndarray | None = None  # programs: index into `languages` (-1: unknown); with `languages`
    language_settings: tuple[tuple[int, float], ...] = ()  # (neighbors, shrink) per language; (): the chooser's

    def fit(
        self, features: np.ndarray, ratios: np.ndarray, languages: Sequence[str | None] | None = None
    ) -> NeighbourChooser:
        """`features`: programs x d, standardized; `ratios`: programs x lists, size over -Oz (inf: failed).
        Stored as float32 values, which is what a saved model reads back. With each program's language (None:
        unknown), a chooser per language: a program of one of them is answered from that language's programs
        alone (C++ and C units gain from different lists), any other from all."""
        self.train_features = features.astype(np.float32).astype(np.float64)
        self.train_gains = backup_gains(ratios).astype(np.float32).astype(np.float64)
        self.languages, self.train_languages, self.language_settings = (), None, ()
        if languages is not None:
            self.languages = tuple(sorted({language for language in languages if language}))
            self.train_languages = self.language_codes(languages, len(features))
        return self

    def tuned_per_language(self, settings: Sequence[tuple[int, float]]) -> NeighbourChooser:
        """The same chooser per language with each language's own (neighbors, shrink), in `languages`' order."""
        if self.train_languages is None or len(settings) != len(self.languages):
            raise ValueError(f"{len(settings)} settings for the chooser's {len(self.languages)} languages")
        if any(count < 1 or not 0.0 <= shrink <= 1.0 for count, shrink in settings):
            raise ValueError(f"settings {list(settings)}: neighbours must be 1 or more and shrink from 0 to 1")
        return replace(self, language_settings=tuple((int(count), float(shrink)) for count, shrink in settings))

    def language_codes(self, languages: Sequence[str | None] | None, count: int) -> np.ndarray:
        """Each of `count` programs' language as its index in `languages` (-1: none of them, or no languages)."""
        if languages is None:
            return np.full(count, -1, dtype=np.int8)
        if len(languages) != count:
            raise ValueError(f"{len(languages)} languages for {count} programs")
        index = {language: code for code, language in enumerate(self.languages)}
        return np.array([index.get(language, -1) if language else -1 for language in languages], dtype=np.int8)

    def gains(self, features: np.ndarray, languages: Sequence[str | None] | None = None) -> np.ndarray:
        """programs x lists: expected log gain over -Oz with the backup (0: none expected)."""
        assert self.train_gains is not None, "fit the chooser first"
        gains = np.empty((len(features), self.train_gains.shape[1]))
        for rows, chooser in self._parts(features, languages):
            gains[rows] = chooser._gains(chooser.nearest(features[rows]))
        return gains

    def order(self, features: np.ndarray, languages: Sequence[str | None] | None = None) -> np.ndarray:
        """programs x (lists + 1), lowest tried first, -Oz last: the list with the largest expected gain (static's
        choice), then the lists in `cover`'s order over the neighbours (weight `shrink`) and all training
        programs (of the program's language, with a chooser per language), then the rest by expected gain; -Oz
        first where no list is expected to gain."""
        assert self.train_gains is not None, "fit the chooser first"
        order = np.empty((len(features), self.train_gains.shape[1] + 1))
        for rows, chooser in self._parts(features, languages):
            order[rows] = chooser._order(features[rows])
        return order

    def nearest(self, features: np.ndarray) -> np.ndarray:
        """programs x k: the training programs nearest to each, nearest first (ties: the earlier)."""
        assert self.train_features is not None, "fit the chooser first"
        distances = np.zeros((len(features), len(self.train_features)))
        for column in range(features.shape[1]):  # summed feature by feature, as the clang plugin does
            distances += (features[:, column, None] - self.train_features[None, :, column]) ** 2
        k = min(self.neighbors, len(self.train_features))
        return np.argsort(distances, axis=1, kind="stable")[:, :k]

    def for_language(self, code: int) -> NeighbourChooser:
        """The chooser over the training programs of `languages[code]` alone, with that language's settings."""
        assert self.train_features is not None and self.train_gains is not None and self.train_languages is not None
        rows = self.train_languages == code
        count, shrink = self.language_settings[code] if self.language_settings else (self.neighbors, self.shrink)
        return NeighbourChooser(count, shrink, self.train_features[rows], self.train_gains[rows])

    def _parts(
        self, features: np.ndarray, languages: Sequence[str | None] | None
    ) -> list[tuple[np.ndarray, NeighbourChooser]]:
        """Which rows of `features` each chooser answers: a language's own, or this one over all programs."""
        codes = self.language_codes(languages if self.languages else None, len(features))
        return [(codes == code, self if code < 0 else self.for_language(int(code))) for code in np.unique(codes)]

    def _order(self, features: np.ndarray) -> np.ndarray:
        assert self.train_gains is not None
        nearest = self.nearest(features)
        gains = self._gains(nearest)
        order = np.empty((len(gains), gains.shape[1] + 1))
        for row, (expected, near) in enumerate(zip(gains, nearest, strict=True)):
            by_gain = [int(j) for j in np.argsort(expected, kind="stable")]
            tried = cover_order(by_gain, [(self.shrink, self.train_gains[near]), (1.0 - self.shrink, self.train_gains)])
            order[row, tried] = np.arange(len(tried))
            order[row, -1] = -np.inf if expected.min() >= 0 else len(tried)
        return order

    def _gains(self, nearest: np.ndarray) -> np.ndarray:
        assert self.train_gains is not None, "fit the chooser first"
        return shrunk_mean(self.train_gains, nearest, self.shrink)

    def restricted_to(self, keep: list[int]) -> NeighbourChooser:
        """The same chooser over lists `keep` (in that order) and -Oz."""
        assert self.train_gains is not None
        return replace(self, train_gains=self.train_gains[:, keep])
