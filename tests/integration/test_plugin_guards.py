"""The clang plugin's guards equal stitchopt-cc's (`validate.guards`, `validate.security_guard`).

The exact policy keeps a list smaller than -Oz only when its output passes the guards the wrapper applies
(`model_builds.passing_guards`). The plugin's `print<stitchopt-guards>` prints the summary it reads from a
module; it is compared with Python's `summarize(text)` and hardening counts (canary checks from `llc`'s assembly
where a function asks for a stack protector, as `Guard` counts them) on the source (locals promoted), -Oz's
output and lists' outputs. Then a real `clang -fpass-plugin` compile with a list that removes security-relevant
code must keep -Oz, with Python's reasons in its build log record.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from stitchopt.cc.model_builds import unit_guard
from stitchopt.core import CompileOptions
from stitchopt.errors import ToolchainError
from stitchopt.models.plugin_file import PLUGIN_MODEL_NAME
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.baselines import OPT_FLAGS, clang_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import compile_source, disassemble, load_module
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.process import run_tool
from stitchopt.validate.guards import summarize
from stitchopt.validate.security_guard import (
    KINDS,
    SOURCE_PIPELINE,
    HardeningCounts,
    ModuleHardening,
    counts_of_text,
    needs_codegen,
)

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "src" / "stitchopt" / "datasets" / "demo_v1"
SECURITY = ROOT / "tests" / "data" / "security"
PRINTER = "print<stitchopt-guards>"
REMOVING = ("lower-constant-intrinsics", "instcombine<no-verify-fixpoint>", "inline", "dse")  # test_security_guard
KEEPING = ("inline", "dse")
DEMO_UNITS = (
    "avl_tree",
    "bigint",
    "bit_tricks",
    "c_lexer",
    "crc32_base64",
    "csv_parser",
    "date_calendar",
    "expr_parser",
    "fixed_point",
    "graph_paths",
)
# Every kind of security-relevant code at once: a fortified copy and string copy, clears of a local (explicit_bzero)
# and of heap memory before free, an overflow builtin that aborts, sanitizer checks, a volatile store, a canary;
# and a body that is `unreachable`, a store to null.
HARDENED_C = r"""
#include <stdlib.h>
#include <string.h>
void explicit_bzero(void *, size_t);
int use(char *, int);
int secrets(int n, const char *src) {
    char buf[64];
    char *heap = malloc(64);
    if (!heap)
        return -1;
    memcpy(buf, src, (size_t)n & 63);
    strcpy(heap, src);
    int r = use(buf, n) + use(heap, n);
    if (__builtin_mul_overflow(r, n, &r))
        abort();
    r += n;
    explicit_bzero(buf, sizeof buf);
    memset(heap, 0, 64);
    free(heap);
    volatile int sink = r;
    return sink;
}
int never(int n) { __builtin_unreachable(); }
void crash(void) { *(volatile int *)0 = 1; }
"""
HARDENING_FLAGS = ("-fstack-protector-strong", "-D_FORTIFY_SOURCE=2", "-fsanitize=signed-integer-overflow")


@pytest.fixture(scope="module")
def plugin() -> Path:
    try:
        from stitchopt.toolchain.plugin_library import plugin_path

        return Path(plugin_path())
    except (ImportError, ToolchainError) as exc:
        pytest.skip(f"the stitchopt clang plugin is not built: {exc}")


@pytest.fixture(scope="module")
def catalogue(toolchain: Toolchain) -> Catalogue:
    return load_catalogue(toolchain)


def options_for(toolchain: Toolchain, bitcode: bytes) -> CompileOptions:
    """The wrapper's options for a unit (`model_builds.opt_options`, no -mllvm)."""
    pic = '"PIC Level"' in disassemble(toolchain, bitcode, "unit")
    return CompileOptions(relocation_model="pic" if pic else "static", opt_flags=OPT_FLAGS["Oz"])


def python_summary(toolchain: Toolchain, text: str, options: CompileOptions) -> dict[str, Any]:
    """What `Guard._summary` reads from `opt -S` text, in the printer's JSON shape."""
    summary = summarize(text)
    codegen = needs_codegen(text)
    hardening = counts_of_text(toolchain, text, options) if codegen else summary.hardening
    return {
        "required": sorted(summary.required),
        "exported": sorted(summary.exported),
        "unreachable_bodies": sorted(summary.unreachable_bodies),
        "ub_markers": summary.ub_markers,
        "hardening": hardening.to_dict(),
        "needs_codegen": codegen,
    }


def compare(
    toolchain: Toolchain, plugin: Path, bitcode: Path, options: CompileOptions, pipeline: str, label: str
) -> dict[str, Any]:
    """One opt run: `pipeline`, then the plugin's printer (on stdout), and the module as `opt -S` writes it,
    which Python reads (`optimized_text`'s command, plus the printer). Returns Python's summary after asserting
    that the plugin printed the same."""
    text_path = bitcode.with_name(f"{bitcode.stem}.{abs(hash(pipeline))}.ll")
    argv = opt_command(
        toolchain.tool("opt"),
        f"{pipeline},{PRINTER}",
        flags=[*options.opt_args(), f"-load-pass-plugin={plugin}"],
        args=["-S", str(bitcode), "-o", str(text_path)],
    )
    run = run_tool(argv, timeout=120)
    assert run.returncode == 0, f"{label}: {run.stderr_text.strip()[-500:]}"
    printed = json.loads(run.stdout)
    expected = python_summary(toolchain, text_path.read_text(), options)
    assert printed == expected, f"{label}: the plugin read {printed}, Python {expected}"
    return expected


def test_the_plugins_guard_summaries_are_pythons(
    toolchain: Toolchain, plugin: Path, catalogue: Catalogue, tmp_path: Path
) -> None:
    """Source (locals promoted, SOURCE_PIPELINE), -Oz, lists of the shipped model and the list that removes a
    clear: ten demo programs, the security fixtures, and a unit with every kind of security-relevant code."""
    oz = clang_pipeline(toolchain, "Oz")
    shipped = json.loads((DEFAULT_MODEL_DIR / PLUGIN_MODEL_NAME).read_text())["lists"]
    removing = tuned_pipeline(REMOVING, catalogue)
    hardened = tmp_path / "hardened.c"
    hardened.write_text(HARDENED_C)
    units: list[tuple[Path, tuple[str, ...], tuple[str, ...]]] = [
        (DEMO / f"{name}.c", (), (SOURCE_PIPELINE, oz, shipped[i % len(shipped)])) for i, name in enumerate(DEMO_UNITS)
    ]
    units += [
        (DEMO / "bigint.c", ("-fstack-protector-strong", "-D_FORTIFY_SOURCE=2"), (SOURCE_PIPELINE, oz, shipped[1])),
        (SECURITY / "cwe14_fortified.c", (), (SOURCE_PIPELINE, oz, removing)),
        (SECURITY / "cwe14_fortified.c", ("-fstack-protector-strong",), (oz, removing, "internalize,globaldce")),
        (SECURITY / "cwe14_free.c", (), (SOURCE_PIPELINE, oz)),
        (SECURITY / "cwe14_loop.c", ("-fstack-protector-strong",), (SOURCE_PIPELINE, oz)),
        (SECURITY / "cwe733_checks.c", (), (SOURCE_PIPELINE, oz, removing)),
        (SECURITY / "cwe14_merged.c", (), (oz, f"{oz},mergefunc")),
        (hardened, HARDENING_FLAGS, (SOURCE_PIPELINE, oz, removing, shipped[2])),
        (hardened, ("-fsanitize=undefined", "-fsanitize-trap=undefined"), (SOURCE_PIPELINE, oz)),
    ]

    def check(index: int) -> list[dict[str, Any]]:
        source, flags, pipelines = units[index]
        bitcode = tmp_path / f"unit{index}.bc"
        bitcode.write_bytes(compile_source(toolchain, source, extra_args=flags))
        options = options_for(toolchain, bitcode.read_bytes())
        label = f"{source.name} {' '.join(flags)}"
        return [compare(toolchain, plugin, bitcode, options, p, f"{label} after {p[:60]}") for p in pipelines]

    with ThreadPoolExecutor(2) as pool:
        summaries = [s for per_unit in pool.map(check, range(len(units))) for s in per_unit]
    assert len(summaries) >= 40
    # Not vacuous: every kind of security-relevant code, and every other guard's facts, occur somewhere.
    for kind in KINDS:
        assert any(s["hardening"]["own"][kind] for s in summaries), f"no module had {kind}"
    assert any(s["ub_markers"] for s in summaries) and any(s["unreachable_bodies"] for s in summaries)
    assert any(s["required"] for s in summaries) and not all(s["required"] for s in summaries)


# Thunks as the rule reads them: a shared callee with a quoted-name thunk and a thunk of that thunk, a thunk that
# casts the call's result, a callee only thunks use, and two thunks calling each other.
THUNKS_LL = """
define internal void @wipe(ptr %ctx) {
  call void @llvm.memset.p0.i64(ptr %ctx, i8 0, i64 64, i1 false)
  ret void
}
define internal void @"wipe copy"(ptr %ctx) {
  tail call void @wipe(ptr %ctx)
  ret void
}
define internal void @chain(ptr %ctx) {
  tail call void @"wipe copy"(ptr %ctx)
  ret void
}
define internal i32 @count(ptr %ctx) {
  store volatile i32 1, ptr %ctx, align 4
  ret i32 1
}
define internal i64 @widened(ptr %ctx) {
  %r = tail call i32 @count(ptr %ctx)
  %w = zext i32 %r to i64
  ret i64 %w
}
define internal void @only(ptr %ctx) {
  call void @llvm.memset.p0.i64(ptr %ctx, i8 0, i64 8, i1 false)
  ret void
}
define internal void @first(ptr %ctx) {
  tail call void @only(ptr %ctx)
  ret void
}
define internal void @second(ptr %ctx) {
  tail call void @only(ptr %ctx)
  ret void
}
define void @ping(ptr %p) {
  tail call void @pong(ptr %p)
  ret void
}
define void @pong(ptr %p) {
  tail call void @ping(ptr %p)
  ret void
}
@table = constant [8 x ptr] [ptr @wipe, ptr @"wipe copy", ptr @chain, ptr @count, ptr @widened, ptr @first,
                             ptr @second, ptr @ping]
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
"""


def test_the_plugin_counts_thunks_as_python_does(toolchain: Toolchain, plugin: Path, tmp_path: Path) -> None:
    """Each thunk of a shared callee takes over its items (the chain through the quoted name too, the cast result
    too) where the reference did not call it from there; the callee only thunks use counts once; the two thunks
    of each other end."""
    module = tmp_path / "thunks.ll"
    module.write_text(THUNKS_LL)
    options = CompileOptions(relocation_model="static", opt_flags=OPT_FLAGS["Oz"])
    counts = ModuleHardening.from_dict(compare(toolchain, plugin, module, options, "verify", "thunks")["hardening"])
    assert {(t.function, t.callee) for t in counts.thunks} == {
        ('"wipe copy"', "wipe"),
        ("chain", '"wipe copy"'),
        ("widened", "count"),
        ("pong", "ping"),
    }
    merged = counts.against(ModuleHardening(HardeningCounts()))  # a reference where no function called another
    assert (merged.clearing_writes, merged.volatile_accesses) == (3 + 1, 2)
    itself = counts.against(counts)  # every thunk called its callee in the reference: none credited
    assert (itself.clearing_writes, itself.volatile_accesses) == (2, 1)


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize(
    ("fixture", "flags", "passes"),
    [
        ("cwe14_fortified.c", (), REMOVING),
        ("cwe14_fortified.c", ("-fstack-protector-strong",), "internalize,globaldce"),
        ("cwe14_wrapper.c", (), (*REMOVING, "instcombine<no-verify-fixpoint>")),
    ],
    ids=["removes-a-clear", "removes-exports-and-a-canary", "leaves-a-wrapper-as-a-bare-call"],
)
def test_clang_with_the_plugin_keeps_oz_where_pythons_guard_rejects_the_list(
    toolchain: Toolchain,
    plugin: Path,
    catalogue: Catalogue,
    tmp_path: Path,
    fixture: str,
    flags: tuple[str, ...],
    passes: tuple[str, ...] | str,
) -> None:
    source = SECURITY / fixture
    pipeline = passes if isinstance(passes, str) else tuned_pipeline(passes, catalogue)
    module = load_module(toolchain, source, flags)
    reasons = unit_guard(toolchain, module, options_for(toolchain, module.bitcode)).check(pipeline)
    assert reasons and any("security-relevant code removed relative to -Oz" in r for r in reasons)

    log = tmp_path / "log.jsonl"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_")}
    env = {**clean, "STITCHOPT_LIST": pipeline, "STITCHOPT_BUILD_LOG": str(log)}
    clang = [toolchain.tool("clang"), "-Oz", *flags, "-c", str(source)]
    through = subprocess.run(
        [*clang, f"-fpass-plugin={plugin}", "-o", str(tmp_path / "plugin.o")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert through.returncode == 0 and through.stderr == "", through.stderr  # a rejection is no warning
    subprocess.run([*clang, "-o", str(tmp_path / "plain.o")], env=clean, check=True)
    (record,) = records(log)
    assert record["outcome"] == "oz" and record["policy"] == "exact"
    assert record["bytes"] == record["oz_bytes"] and record["pipeline"] is None
    assert record["reason"] == f"{pipeline} failed the guards: {'; '.join(reasons)}"
    assert (tmp_path / "plugin.o").read_bytes() == (tmp_path / "plain.o").read_bytes()


def test_a_list_that_passes_the_guards_is_kept(
    toolchain: Toolchain, plugin: Path, catalogue: Catalogue, tmp_path: Path
) -> None:
    """The list that keeps the checked clear: Python's guard passes it, and the plugin keeps it where it is
    smaller than -Oz, with no reason recorded."""
    source = SECURITY / "cwe14_fortified.c"
    pipeline = tuned_pipeline(KEEPING, catalogue)
    module = load_module(toolchain, source)
    assert unit_guard(toolchain, module, options_for(toolchain, module.bitcode)).check(pipeline) == []
    log = tmp_path / "log.jsonl"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_")}
    env = {**clean, "STITCHOPT_LIST": pipeline, "STITCHOPT_BUILD_LOG": str(log)}
    argv = [toolchain.tool("clang"), "-Oz", f"-fpass-plugin={plugin}", "-c", str(source), "-o", str(tmp_path / "a.o")]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stderr == ""
    (record,) = records(log)
    assert record["reason"] is None
    assert record["outcome"] == ("optimized" if record["bytes"] < record["oz_bytes"] else "oz")
