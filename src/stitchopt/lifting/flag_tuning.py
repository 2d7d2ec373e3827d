"""LLM Compiler as a flag-tuning method: its answer to the flag-tuning prompt, read as a pass list of this
LLVM's catalogue (names it does not know are dropped, as a list that fails would be), for `evaluate`."""

from __future__ import annotations

from stitchopt.core import IRModule
from stitchopt.lifting.llm_compiler import LLMCompiler
from stitchopt.models.list_model import Proposer
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble


def llm_compiler_proposer(toolchain: Toolchain, catalogue: Catalogue, backend: LLMCompiler) -> Proposer:
    def propose(module: IRModule) -> PassNames | None:
        names = backend.tune_flags(disassemble(toolchain, module.bitcode, module.name))
        known = tuple(name for name in names if catalogue.get(name) is not None)
        return known or None

    return propose
