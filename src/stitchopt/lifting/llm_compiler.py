"""Meta's LLM Compiler (FTD) through Hugging Face `transformers`, with its own prompts (Code Llama instruction
format), greedy decoding and weights from a local directory only: nothing is ever downloaded (the hub is set
offline before `transformers` is imported). One backend for disassembly, flag tuning and the stitching study's
expert (`embed`, read by `llm_expert`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from stitchopt.errors import InputError
from stitchopt.lifting.pairs import LiftPair

CONTEXT_TOKENS = 16384
FLAG_TUNING = "[INST] Tell me how to optimize this LLVM-IR for object file size:\n\n<code>{ir}</code> [/INST]"
DISASSEMBLY = "[INST] Disassemble this code to LLVM-IR:\n\n<code>{asm}</code> [/INST]"

_CODE_RE = re.compile(r"<code>(.*?)(?:</code>|$)", re.S)
_FENCE_RE = re.compile(r"```[\w-]*\n(.*?)(?:```|$)", re.S)
_QUOTED_PASSES_RE = re.compile(r"-p(?:asses)?[ =]\s*(['\"`])(.+?)\1")
_RUN_PASSES_RE = re.compile(r"Run passes\s+`?(.+?)`?(?:\s+to\b|\.?\s*$)", re.S)


def extract_code(answer: str) -> str:
    """The code in an answer: inside <code> (even unclosed), else a fenced block, else the whole answer."""
    for pattern in (_CODE_RE, _FENCE_RE):
        found = pattern.search(answer)
        if found:
            return found.group(1).strip() + "\n"
    return answer.strip() + "\n"


def parse_passes(answer: str) -> tuple[str, ...]:
    """Pass names from a flag-tuning answer (`Run passes -a -b to ...`, `-p 'a,b'`, or a <code> block),
    legacy dashes dropped; () when none can be read."""
    code, quoted, run = _CODE_RE.search(answer), _QUOTED_PASSES_RE.search(answer), _RUN_PASSES_RE.search(answer)
    found = code.group(1) if code else quoted.group(2) if quoted else run.group(1) if run else ""
    return tuple(word.lstrip("-") for word in re.split(r"[\s,]+", found.strip()) if word.strip("-"))


class LLMCompiler:
    """`weights`: a local directory with a causal LM and its tokenizer (e.g. llm-compiler-7b-ftd)."""

    name = "llm-compiler"

    def __init__(self, weights: Path, max_new_tokens: int = 4096, context: int = CONTEXT_TOKENS) -> None:
        if not (weights / "config.json").is_file():
            raise InputError(
                f"{weights}: no model here (config.json missing); stitchopt never downloads weights: "
                "put LLM Compiler's files (from Hugging Face, after accepting its licence) in a "
                "local directory"
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise InputError(
                f"the llm-compiler backend needs the `lift` extra ({exc}): pip install 'stitchopt[lift]'"
            ) from exc
        self.tokenizer: Any = AutoTokenizer.from_pretrained(weights, local_files_only=True)
        self.model: Any = AutoModelForCausalLM.from_pretrained(weights, local_files_only=True)
        self.model.eval()  # type: ignore[no-untyped-call]  # inference only: no dropout
        self.max_new_tokens = max_new_tokens
        self.context = context

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def fits(self, pair: LiftPair) -> bool:
        return self.count_tokens(DISASSEMBLY.format(asm=pair.asm)) + self.count_tokens(pair.ir) <= self.context

    def generate(self, prompt: str) -> str:
        """Greedy decoding of the answer to one prompt (the prompt itself not included)."""
        import torch

        inputs = self.tokenizer(prompt, return_tensors="pt")
        budget = max(1, min(self.max_new_tokens, self.context - inputs["input_ids"].shape[1]))
        pad = self.tokenizer.pad_token_id or self.tokenizer.eos_token_id
        with torch.no_grad():
            output = self.model.generate(**inputs, do_sample=False, max_new_tokens=budget, pad_token_id=pad)
        answer: str = self.tokenizer.decode(output[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
        return answer

    def embed(self, text: str) -> list[float]:
        """The mean of the last hidden layer over `text` (cut to the context): how the model reads a program,
        for stitching it to the other experts."""
        import torch

        inputs = self.tokenizer(text, return_tensors="pt", truncation=True, max_length=self.context)
        with torch.no_grad():
            hidden = self.model(**inputs, output_hidden_states=True).hidden_states[-1][0]
        vector: list[float] = hidden.mean(dim=0).double().tolist()
        return vector

    def lift(self, asm: str) -> str:
        return extract_code(self.generate(DISASSEMBLY.format(asm=asm)))

    def tune_flags(self, ir: str) -> tuple[str, ...]:
        return parse_passes(self.generate(FLAG_TUNING.format(ir=ir)))
