"""Judging lifted IR the way LLM Compiler did: does it parse and verify, and compiled back with the same
`llc` flags, how close is its assembly to the input (exact match, BLEU, normalized edit distance)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from stitchopt.core import CompileOptions
from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.lifting.pairs import lower
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import FRONTEND_TIMEOUT_S
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.process import run_tool

_COMMENT_RE = re.compile(r"\s*#.*$")
_SKIPPED_DIRECTIVES = (".file", ".ident", ".section\t.note", ".addrsig", ".cfi_")


@dataclass(frozen=True)
class RoundTrip:
    parses: bool  # assembles and passes the verifier
    asm: str  # the lifted IR compiled back ("" when it does not parse or compile)
    exact: bool  # the same assembly as the input, after `normalize_asm`
    edit_distance: float  # normalized token edit distance to the input, 0..1 (1 when nothing compiled)
    error: str = ""


def normalize_asm(text: str) -> list[str]:
    """Instruction, label and data lines without comments, blank lines and file/ident/CFI noise."""
    lines = []
    for line in text.splitlines():
        line = _COMMENT_RE.sub("", line).strip()
        if line and not line.startswith(_SKIPPED_DIRECTIVES):
            lines.append(" ".join(line.split()))
    return lines


def asm_tokens(text: str) -> list[str]:
    return [token for line in normalize_asm(text) for token in re.split(r"[\s,]+", line) if token]


def verify(toolchain: Toolchain, ir_text: str) -> str:
    """'' when the IR assembles and verifies, else the first error."""
    done = run_tool(
        opt_command(toolchain.tool("opt"), "verify", args=["-disable-output", "-"]),
        stdin=ir_text.encode(),
        timeout=FRONTEND_TIMEOUT_S,
    )
    if done.returncode == 0 and not done.timed_out:
        return ""
    return first_error(done.stderr_text) or "timed out"


def require_metrics() -> None:
    """The round-trip metrics come from the `lift` extra: say so in one line rather than with a traceback."""
    try:
        import rapidfuzz  # noqa: F401
        import sacrebleu  # noqa: F401
    except ImportError as exc:
        raise InputError(f"lifting metrics need the `lift` extra ({exc}): pip install 'stitchopt[lift]'") from exc


def round_trip(toolchain: Toolchain, lifted_ir: str, input_asm: str, options: CompileOptions) -> RoundTrip:
    from rapidfuzz.distance import Levenshtein

    error = verify(toolchain, lifted_ir)
    if error:
        return RoundTrip(False, "", False, 1.0, error)
    try:
        asm = lower(toolchain, lifted_ir.encode(), options)
    except InputError as exc:
        return RoundTrip(True, "", False, 1.0, str(exc))
    exact = normalize_asm(asm) == normalize_asm(input_asm)
    distance = Levenshtein.normalized_distance(asm_tokens(asm), asm_tokens(input_asm))
    return RoundTrip(True, asm, exact, float(distance))


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str]:
    """Corpus BLEU (0..1) of round-tripped assembly against the inputs, and sacrebleu's signature."""
    from sacrebleu.metrics.bleu import BLEU

    metric = BLEU()
    joined = [" ".join(normalize_asm(h)) for h in hypotheses]
    result = metric.corpus_score(joined, [[" ".join(normalize_asm(r)) for r in references]])
    return result.score / 100, str(metric.get_signature())
