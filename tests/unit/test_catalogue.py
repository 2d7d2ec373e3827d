from pathlib import Path

import pytest

from stitchopt.errors import PipelineError
from stitchopt.passes.catalogue import Catalogue, Level, build_catalogue, parse_print_passes
from stitchopt.passes.pipeline import nest, pipeline_from_text, split_top_level, tuned_pipeline

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def llvm19() -> Catalogue:
    return build_catalogue((DATA / "print_passes_llvm19.txt").read_text(), "19.1.7")


def test_parses_every_section_we_read() -> None:
    entries = parse_print_passes((DATA / "print_passes_llvm19.txt").read_text())
    levels = {level for level, _, _ in entries}
    assert levels == {Level.MODULE, Level.CGSCC, Level.FUNCTION, Level.LOOP}
    names = {name for _, name, _ in entries}
    assert {"globaldce", "inline", "sroa", "licm", "loop-interchange"} <= names
    assert "domtree" not in names  # an analysis, not a pass
    assert "dead-mi-elimination" not in names  # a machine pass


def test_rules_exclude_unsafe_and_useless_passes(llvm19: Catalogue) -> None:
    names = set(llvm19.names())
    for dropped in (
        "structurizecfg",
        "internalize",
        "strip",
        "asan",
        "verify",
        "print<domtree>",
        "dot-cfg",
        "trigger-crash-function",
        "coro-split",
        "function-simplification",
        "lower-invoke",
    ):
        assert dropped not in names, dropped
        assert llvm19.excluded_pass(dropped) is not None, dropped
    for kept in ("sroa", "instcombine", "licm", "inline", "globaldce", "loop-unroll", "simplifycfg", "gvn"):
        assert kept in names, kept
    assert 90 <= len(llvm19) <= 140
    assert llvm19.excluded_pass("gvn-sink") is not None


def test_safe_spellings_and_levels(llvm19: Catalogue) -> None:
    instcombine = llvm19.get("instcombine")
    assert instcombine is not None and instcombine.spelling == "instcombine<no-verify-fixpoint>"
    licm = llvm19.get("licm")
    assert licm is not None and licm.level is Level.LOOP and licm.adaptor == "loop-mssa"
    indvars = llvm19.get("indvars")
    assert indvars is not None and indvars.adaptor == "loop"
    inline = llvm19.get("inline")
    assert inline is not None and inline.adaptor == "cgscc"
    globaldce = llvm19.get("globaldce")
    assert globaldce is not None and globaldce.adaptor is None


@pytest.mark.parametrize(
    ("flat", "expected"),
    [
        (["mem2reg", "inline"], "function(mem2reg),cgscc(inline)"),
        (["inline", "sroa", "licm", "globaldce"], "cgscc(inline),function(sroa,loop-mssa(licm)),globaldce"),
        (
            ["loop-rotate", "indvars", "licm", "loop-deletion"],
            "function(loop(loop-rotate,indvars),loop-mssa(licm),loop(loop-deletion))",
        ),
        (
            ["instcombine", "default<Oz>", "instcombine"],
            "function(instcombine<no-verify-fixpoint>),default<Oz>,function(instcombine<no-verify-fixpoint>)",
        ),
        (["loop-unroll<O3>", "sroa"], "function(loop-unroll<O3>,sroa)"),
    ],
)
def test_nest_groups_consecutive_passes(llvm19: Catalogue, flat: list[str], expected: str) -> None:
    assert nest(flat, llvm19) == expected


def test_searched_lists_reset_analyses_between_top_level_elements(llvm19: Catalogue) -> None:
    """Each element of a searched list starts from the module alone, so that it can be resumed from bitcode."""
    reset = "invalidate<all>,invalidate<globals-aa>"
    assert tuned_pipeline(["inline", "sroa", "licm", "globaldce"], llvm19) == (
        f"always-inline,{reset},cgscc(inline),{reset},function(sroa,loop-mssa(licm)),{reset},globaldce"
    )


def test_split_respects_brackets() -> None:
    assert split_top_level("a<x;y>,function(b,c), d") == ["a<x;y>", "function(b,c)", "d"]


def test_pipeline_from_text(llvm19: Catalogue) -> None:
    assert pipeline_from_text("sroa, licm", llvm19) == "function(sroa,loop-mssa(licm))"
    assert pipeline_from_text("-passes='function(sroa)'", llvm19) == "function(sroa)"
    assert pipeline_from_text("default<Oz>", llvm19) == "default<Oz>"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sroa,bogus-pass", "unknown pass 'bogus-pass'"),
        ("structurizecfg", r"excluded .*other-targets-or-runtimes.*'function\(structurizecfg\)'"),
        ("strip", r"'module\(strip\)'"),
        ("  ", "empty pass list"),
    ],
)
def test_pipeline_from_text_refuses(llvm19: Catalogue, text: str, message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        pipeline_from_text(text, llvm19)
