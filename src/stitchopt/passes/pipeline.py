"""Pass lists as `opt -passes=` strings: nesting flat lists, reading what users type, asking opt to parse.

A flat list like `inline,sroa,licm` is turned into an explicitly nested pipeline, because in a flat list the
first pass decides the nesting (`mem2reg,inline` fails while `inline,mem2reg` works).
"""

from __future__ import annotations

from collections.abc import Iterable

from stitchopt.errors import PipelineError, ToolchainError
from stitchopt.passes.catalogue import DEFAULT_PIPELINES, Catalogue, CataloguePass, Level
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import PASSES_OPTION, opt_command
from stitchopt.toolchain.process import run_tool

PassNames = tuple[str, ...]  # a flat pass list, as searches propose it and models rank it

LOOP_ADAPTORS = ("loop", "loop-mssa")
_EXPLICIT_FORM = {
    Level.MODULE: "module({})",
    Level.CGSCC: "cgscc({})",
    Level.FUNCTION: "function({})",
    Level.LOOP: "function(loop({}))",
}


def nest(passes: Iterable[CataloguePass | str], catalogue: Catalogue | None = None) -> str:
    """Turn a flat list into one explicitly nested `-passes=` string.

    Consecutive passes that share an adaptor share one instance of it, e.g.
    [inline, sroa, licm, globaldce] -> `cgscc(inline),function(sroa,loop-mssa(licm)),globaldce`.
    Strings are looked up in `catalogue`; `default<..>` pipelines stay at module level.
    """
    return ",".join(_top_level(passes, catalogue))


def _top_level(passes: Iterable[CataloguePass | str], catalogue: Catalogue | None) -> list[str]:
    """The top-level elements of the nested form: module passes and adaptor groups."""
    # Top-level groups: (outer adaptor or None for a module pass, runs of (inner loop adaptor, spellings)).
    groups: list[tuple[str | None, list[tuple[str | None, list[str]]]]] = []
    for item in passes:
        entry = item if isinstance(item, CataloguePass) else _lookup(item, catalogue)
        spelling, adaptor = (str(item), None) if entry is None else (_keep_params(item, entry), entry.adaptor)
        outer, inner = ("function", adaptor) if adaptor in LOOP_ADAPTORS else (adaptor, None)
        if outer is None or not groups or groups[-1][0] != outer:
            groups.append((outer, []))
        runs = groups[-1][1]
        if runs and inner is not None and runs[-1][0] == inner:
            runs[-1][1].append(spelling)
        else:
            runs.append((inner, [spelling]))
    return [_render(outer, runs) for outer, runs in groups]


# Every clang pipeline (-O0 included) starts by inlining always_inline functions, which GNU C requires; without
# it, libstdc++ 12's always_inline members that the IR only has as available_externally (e.g.
# basic_string::_M_use_local_data) stay calls to symbols no library defines, and linking fails.
TUNED_PREFIX = "always-inline"
# Between top-level elements of a searched list: every element starts with no analysis cached, so what it does
# depends on the module alone, not on what earlier elements happened to leave cached (BasicAA, for one, uses
# LoopInfo only when it is cached; GlobalsAA survives invalidate<all>). That is what lets an evaluator resume a
# pipeline from the bitcode of a shared prefix and get the answer of a whole run; it costs no measurable
# optimization time.
ANALYSES_RESET = "invalidate<all>,invalidate<globals-aa>"


def tuned_pipeline(passes: Iterable[CataloguePass | str], catalogue: Catalogue) -> str:
    """A searched pass list as the pipeline stitchopt evaluates and reports: `always-inline`, then the list's
    top-level elements, each after an analysis reset."""
    return f",{ANALYSES_RESET},".join([TUNED_PREFIX, *_top_level(passes, catalogue)])


def _render(outer: str | None, runs: list[tuple[str | None, list[str]]]) -> str:
    body = ",".join(",".join(items) if inner is None else f"{inner}({','.join(items)})" for inner, items in runs)
    return body if outer is None else f"{outer}({body})"


def _lookup(name: str, catalogue: Catalogue | None) -> CataloguePass | None:
    if name in DEFAULT_PIPELINES:
        return None
    if catalogue is None:
        raise ValueError("a catalogue is needed to nest pass names")
    entry = catalogue.get(name)
    if entry is None:
        raise PipelineError(f"unknown pass '{name}' for LLVM {catalogue.llvm_version}")
    return entry


def _keep_params(item: CataloguePass | str, entry: CataloguePass) -> str:
    """A user's explicit `name<params>` wins over the catalogue's default spelling."""
    if isinstance(item, str) and "<" in item:
        return item
    return entry.spelling


def split_top_level(text: str) -> list[str]:
    """Split on commas outside `<...>` and `(...)`."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    items.append("".join(current).strip())
    return [item for item in items if item]


def is_explicit_pipeline(text: str) -> bool:
    """Text with adaptors, e.g. `function(sroa)`, or a pipeline stitchopt printed (its elements separated by
    ANALYSES_RESET, `tuned_pipeline`) is taken verbatim; a flat list is nested for the user."""
    return "(" in text or ANALYSES_RESET in text


def pipeline_from_text(text: str, catalogue: Catalogue) -> str:
    """What a user typed after `--passes`, as a pipeline string; unknown or excluded names are refused."""
    text = text.strip().removeprefix(PASSES_OPTION).strip("'\"")
    if not text.replace(",", "").strip():  # '' or only commas
        raise PipelineError("empty pass list: give passes like 'sroa,instcombine,simplifycfg' or 'default<Oz>'")
    if is_explicit_pipeline(text):
        return text
    names = split_top_level(text)
    for name in names:
        if name in DEFAULT_PIPELINES or catalogue.get(name) is not None:
            continue
        excluded = catalogue.excluded_pass(name)
        if excluded is not None:
            explicit = _EXPLICIT_FORM[excluded.level].format(name)
            raise PipelineError(
                f"pass '{name}' is excluded from the catalogue ({excluded.rule}); to run it anyway, write an "
                f"explicit pipeline with adaptors, e.g. '{explicit}'"
            )
        raise PipelineError(
            f"unknown pass '{name}' for LLVM {catalogue.llvm_version}; `stitchopt passes` lists the known ones"
        )
    return nest(names, catalogue)


def check_pipeline(toolchain: Toolchain, pipeline: str, timeout: float = 60.0, *, triple: str | None = None) -> None:
    """Raise PipelineError unless `opt` parses `pipeline` (checked on an empty module, so it is cheap); an `opt`
    that does not answer within `timeout` is a toolchain problem, not the pipeline's. `triple`: for a target
    whose own passes (e.g. NVPTX's nvvm-reflect) opt parses only with that target's machine."""
    opt = toolchain.tool("opt")
    flags = [f"-mtriple={triple}"] if triple else []
    run = run_tool(opt_command(opt, pipeline, flags=flags, args=["-disable-output", "-"]), stdin=b"", timeout=timeout)
    if run.timed_out:
        raise ToolchainError(f"{opt} did not answer within {timeout:g} s on an empty module: check that LLVM install")
    if run.returncode != 0:
        message = run.stderr_text.strip().splitlines()
        detail = message[-1] if message else f"exit status {run.returncode}"
        raise PipelineError(f"opt cannot run this pipeline: {detail.split(': ', 1)[-1]}")
