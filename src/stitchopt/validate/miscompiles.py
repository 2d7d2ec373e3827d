"""Pass lists known to break programs (found by plain size search on real code, ../shared/FACTS.md): the
regression corpus that validation must keep catching, and what the default Csmith suite size is measured on
(`benchmarks/csmith_strength.py`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KnownMiscompile:
    name: str
    pipeline: str
    effect: str
    csmith_seed: int  # a Csmith seed whose program this list is known to break (measured, see the benchmark)


KNOWN_MISCOMPILES = (
    KnownMiscompile(
        "structurizecfg",
        "function(structurizecfg),default<O3>",
        "a GPU pass: whole functions become unreachable (reported as 40-97% smaller)",
        csmith_seed=2,
    ),
    KnownMiscompile(
        "newgvn-dse",
        "function(newgvn),function(dse),function(mldst-motion),function(newgvn),constmerge",
        "a loop that reads its input is dropped (reported as 41% smaller)",
        csmith_seed=40,
    ),
)
