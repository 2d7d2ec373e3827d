"""The language a module was compiled from, as its IR shows it: what a chooser per language answers from where
no compile named it (`stitchopt predict foo.ll`, the clang plugin), and where the source file's suffix says
otherwise (`clang -x c++ foo.c`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import compile_source, ir_language, load_module, module_language

SOURCE = """int total;
int sum(const int *values, int count) { int s = 0; for (int i = 0; i < count; i++) s += values[i]; return s; }
void drain(void) { while (total) total--; }
"""


@pytest.mark.parametrize(
    ("flags", "shown", "answered"),
    [
        ([], "c", "c"),
        (["-x", "c++"], "c++", "c++"),  # functions `mustprogress` and C++'s alias root
        (["-x", "c++", "-std=c++03"], "c++", "c++"),  # C++'s alias root alone
        (["-fno-strict-aliasing"], None, "c"),  # nothing shows: the suffix answers
        (["-x", "c++", "-std=c++03", "-fno-strict-aliasing"], None, "c"),  # nor here, where the suffix is wrong
    ],
)
def test_a_modules_ir_shows_the_language_it_was_compiled_from(
    toolchain: Toolchain, tmp_path: Path, flags: list[str], shown: str | None, answered: str
) -> None:
    source = tmp_path / "unit.c"
    source.write_text(SOURCE)
    ir = tmp_path / "unit.ll"
    ir.write_bytes(compile_source(toolchain, source, text=True, extra_args=flags))
    text = ir.read_text()
    assert ir_language(text) == shown
    groups = [line for line in text.splitlines() if line.startswith("attributes #")]
    progress = any(" mustprogress " in group for group in groups)
    assert progress == (shown == "c++" and "-std=c++03" not in flags)  # C++11 on: every function mustprogress
    module = load_module(toolchain, ir)  # IR alone: no compile names the language
    assert module.source_filename.endswith("unit.c")
    assert module.language == shown and module_language(module) == answered
