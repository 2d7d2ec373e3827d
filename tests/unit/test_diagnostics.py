"""The one line of a tool's diagnostics a user reads."""

from __future__ import annotations

from pathlib import Path

from stitchopt.diagnostics import first_error


def test_first_error_drops_a_tools_path_and_keeps_a_source_location(tmp_path: Path) -> None:
    clang = f"{tmp_path / 'bad.cu'}:1:30: error: expected ';' after expression\n    1 | x = 1\n"
    assert first_error(clang) == "bad.cu:1:30: error: expected ';' after expression"
    opt = f"{tmp_path / 'bin' / 'opt'}: error: unknown pass name 'nosuch'\n"
    assert first_error(opt) == "error: unknown pass name 'nosuch'"
    assert first_error("warning: w\nnote: n\n") == "warning: w"  # no error: the first line
    assert first_error("") == "no diagnostic"


def test_first_error_passes_over_a_warning_to_the_failure() -> None:
    stderr = (
        "/usr/lib/llvm-19/bin/opt: warning: failed to infer data layout: unable to get target for 'foo-bar-baz'\n"
        "/usr/lib/llvm-19/bin/opt: unrecognized architecture 'foo' provided.\n"
    )
    assert first_error(stderr) == "unrecognized architecture 'foo' provided."
    assert first_error("opt: warning: only this\n") == "opt: warning: only this"
