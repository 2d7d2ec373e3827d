"""The clang pass plugin with the real clang 19: the model's choice inside the compiler, the same as the wrapper's,
-Oz exactly where it is kept, one warning and plain -Oz for anything wrong, and a multi-file program that runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stitchopt.core import IRModule
from stitchopt.errors import ToolchainError
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.neighbour_chooser import NeighbourChooser
from stitchopt.models.plugin_file import NEVER_MARGIN, PLUGIN_MODEL_NAME, plugin_model, write_plugin_model
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import tuned_pipeline
from stitchopt.toolchain.baselines import clang_pipeline
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.elf import object_sizes
from stitchopt.toolchain.frontend import (
    CXX_TBAA_ROOT,
    assemble,
    disassemble,
    module_from_bitcode,
    module_language,
    source_language,
)
from stitchopt.toolchain.llvm import FRONTEND_LEVEL, frontend_command
from stitchopt.toolchain.plugin_library import plugin_path

DEMO = Path(__file__).parents[2] / "src" / "stitchopt" / "datasets" / "demo_v1"
DATA = Path(__file__).parents[1] / "data"
PROGRAM = DATA / "plugin_program"
BIN = Path(sys.executable).parent
WARNING = "stitchopt plugin: warning: "
# Units whose shipped-model choice differs (some keep -Oz, some beat it), a handful for the slower comparisons.
UNITS = ("avl_tree", "bigint", "c_lexer", "csv_parser", "expr_parser", "graph_paths")


@pytest.fixture(scope="module")
def plugin() -> Path:
    try:
        return plugin_path()
    except ToolchainError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def catalogue(toolchain: Toolchain) -> Catalogue:
    return load_catalogue(toolchain)


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STITCHOPT_")}
    return {**clean, "STITCHOPT_BUILD_LOG": str(tmp_path / "log.jsonl"), "STITCHOPT_CACHE_DIR": str(tmp_path / "c")}


def compile_unit(
    toolchain: Toolchain,
    source: Path,
    output: Path,
    env: dict[str, str],
    plugin: Path | None,
    flags: Sequence[str] = (),
    level: str = "-Oz",
) -> subprocess.CompletedProcess[str]:
    loaded = [f"-fpass-plugin={plugin}"] if plugin is not None else []
    argv = [toolchain.tool("clang"), level, *flags, *loaded, "-c", str(source), "-o", str(output)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False)


def records(env: dict[str, str]) -> list[dict[str, Any]]:
    path = Path(env["STITCHOPT_BUILD_LOG"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def size(path: Path) -> int:
    return object_sizes(path.read_bytes()).size_bytes


def test_the_shipped_plugin_model_is_the_shipped_models_export(catalogue: Catalogue) -> None:
    """plugin.json is generated (`stitchopt plugin export default`): it must never drift from the model, whose
    fast margin training learned (capped at a tenth of the held-out units grown)."""
    shipped = json.loads((DEFAULT_MODEL_DIR / PLUGIN_MODEL_NAME).read_text())
    fast = shipped["fast"]
    margin = NEVER_MARGIN if fast["margin"] is None else fast["margin"]  # None: held-out folds said always -Oz
    assert shipped["fast_margin"] == margin and 0 <= fast["grown"] <= min(fast["built"], 0.1)
    export = plugin_model(FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue), catalogue)
    assert shipped == export.document and len(export.rows) > 1_000_000  # the neighbours' rows, as float32
    assert (DEFAULT_MODEL_DIR / shipped["rows"]["file"]).read_bytes() == export.rows


def test_clangs_own_oz_pipeline_as_the_list_is_byte_identical_to_plain_oz(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The list runs where clang's pipeline would and clang's optional passes are vetoed after it: with
    clang's own -Oz pipeline as the list, nothing may differ from plain clang -Oz."""
    env = {**env, "STITCHOPT_POLICY": "fast", "STITCHOPT_LIST": clang_pipeline(toolchain, "Oz")}
    for name in UNITS[:3]:
        plain, through = tmp_path / f"{name}.plain.o", tmp_path / f"{name}.plugin.o"
        assert compile_unit(toolchain, DEMO / f"{name}.c", plain, env, None).returncode == 0
        run = compile_unit(toolchain, DEMO / f"{name}.c", through, env, plugin)
        assert run.returncode == 0 and run.stderr == ""
        assert through.read_bytes() == plain.read_bytes(), name
    assert [r["outcome"] for r in records(env)] == ["optimized"] * 3


def test_the_plugin_chooses_what_python_chooses_and_builds_what_the_wrapper_builds(
    toolchain: Toolchain, plugin: Path, catalogue: Catalogue, env: dict[str, str], tmp_path: Path
) -> None:
    """Static mode, exact policy: the model's first choice is Python's (`FlagModel.rank`), the object is
    byte-identical to `stitchopt-cc`'s with the shipped model, and never larger than plain -Oz's."""
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    wrapper_env = {**env, "STITCHOPT_MODEL": "default", "STITCHOPT_BUILD_LOG": str(tmp_path / "wrapper.jsonl")}
    optimized = 0
    for name in UNITS:
        source = DEMO / f"{name}.c"
        through = tmp_path / f"{name}.plugin.o"
        run = compile_unit(toolchain, source, through, env, plugin)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        wrapped = tmp_path / f"{name}.wrapper.o"
        argv = [str(BIN / "stitchopt-cc"), "-Oz", "-c", str(source), "-o", str(wrapped)]
        assert subprocess.run(argv, env=wrapper_env, check=False).returncode == 0
        plain = tmp_path / f"{name}.plain.o"
        assert compile_unit(toolchain, source, plain, env, None).returncode == 0

        record = records(env)[-1]
        first = model.rank(toolchain, _frontend_ir(toolchain, source, tmp_path))[0]
        expected = None if first.passes is None else tuned_pipeline(first.passes, catalogue)
        assert record["choice"] == expected, name
        assert through.read_bytes() == wrapped.read_bytes(), name
        assert size(through) <= size(plain), name
        assert record["oz_bytes"] == size(plain), f"{name}: -Oz measured in memory differs from clang's object"
        optimized += record["outcome"] == "optimized"
    assert optimized >= 1, "no unit beat -Oz: the comparison checked -Oz only"


def test_the_plugin_orders_with_a_neighbours_chooser_as_python_does(
    toolchain: Toolchain, plugin: Path, catalogue: Catalogue, env: dict[str, str], tmp_path: Path
) -> None:
    """A model whose static choice is the neighbours' gains (`NeighbourChooser`), exported for the plugin: its
    first choice for each unit is Python's, unshrunk (-Oz where no neighbour gained) and shrunk."""
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    modules = {name: _frontend_ir(toolchain, DEMO / f"{name}.c", tmp_path) for name in UNITS}
    x = model.standardizer.transform(np.vstack([model.features(toolchain, m) for m in modules.values()]))
    ratios = np.random.default_rng(4).uniform(0.9, 1.1, size=(len(UNITS), len(model.lists)))
    ratios[1] = 1.2  # a unit no list helps: alone among its neighbours (k=1, itself, unshrunk), it keeps -Oz
    for neighbors, shrink in ((1, 1.0), (2, 0.5)):
        model.chooser = NeighbourChooser(neighbors, shrink).fit(x, ratios)
        model_dir = tmp_path / f"model-{neighbors}"
        model_dir.mkdir()
        write_plugin_model(model, catalogue, model_dir / PLUGIN_MODEL_NAME)
        static = {**env, "STITCHOPT_MODEL": str(model_dir), "STITCHOPT_POLICY": "exact"}
        chosen = []
        for name, module in modules.items():
            run = compile_unit(toolchain, DEMO / f"{name}.c", tmp_path / f"{name}.o", static, plugin)
            assert run.returncode == 0 and run.stderr == "", run.stderr
            first = model.rank(toolchain, module)[0].passes
            chosen.append(None if first is None else tuned_pipeline(first, catalogue))
            assert records(env)[-1]["choice"] == chosen[-1], (name, neighbors)
        assert len(set(chosen)) >= 3  # the units' choices differ
        assert (chosen[1] is None) == (neighbors == 1)


def test_the_plugin_answers_from_the_units_language_with_a_chooser_per_language(
    toolchain: Toolchain, plugin: Path, catalogue: Catalogue, env: dict[str, str], tmp_path: Path
) -> None:
    """A chooser per language, saved, loaded and exported: the plugin reads each unit's language from what its
    IR shows, else from its source file name, as Python does, and orders every list as `FlagModel.rank` does;
    C++ units, which gain most from list 0 where the C units gain from list 1, are answered from the C++ units
    (also C++ IR named `unit.c`, as `clang -x c++ unit.c` makes it), and a unit whose IR shows no language and
    names no C or C++ source from all units. Tuned per language, each language's own neighbours and shrink
    (here: C from its means alone, C++ from its one nearest unit) answer its units in both."""
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    sources = [*(DEMO / f"{name}.c" for name in UNITS), DATA / "shapes.cpp", DATA / "selftest" / "running_balance.cpp"]
    modules = [_frontend_ir(toolchain, source, tmp_path) for source in sources]
    languages = [source_language(module.source_filename) for module in modules]
    assert languages == ["c"] * len(UNITS) + ["c++"] * 2 == [module.language for module in modules]
    text = disassemble(toolchain, modules[-1].bitcode, "relabelled")
    as_c = _relabelled(toolchain, text.replace(modules[-1].source_filename, "unit.c"))
    assert source_language(as_c.source_filename) == "c" and module_language(as_c) == "c++"
    unmarked = text.replace(" mustprogress", "").replace(CXX_TBAA_ROOT, '!"Simple TBAA"')
    unknown = _relabelled(toolchain, unmarked.replace(modules[-1].source_filename, "unit.ll"))
    assert unknown.source_filename == "unit.ll" and module_language(unknown) is None
    x = model.standardizer.transform(np.vstack([model.features(toolchain, m) for m in modules]))
    ratios = np.random.default_rng(6).uniform(0.97, 1.03, size=(len(modules), len(model.lists)))
    cxx = np.array([language == "c++" for language in languages])
    ratios[cxx, 0], ratios[~cxx, 1] = 0.8, 0.9
    index = {passes: i for i, passes in enumerate(model.lists)}
    tunings: list[tuple[tuple[int, float], ...]] = [(), (), ((3, 0.0), (1, 1.0))]
    for case, (neighbors, shrink, tuned) in enumerate(zip((3, 2, 2), (0.0, 0.5, 0.5), tunings, strict=True)):
        model.chooser = NeighbourChooser(neighbors, shrink).fit(x, ratios, languages)
        if tuned:
            model.chooser = model.chooser.tuned_per_language(tuned)
        model_dir = tmp_path / f"per-language-{case}"
        model.save_pretrained(model_dir)
        loaded = FlagModel.from_pretrained(model_dir, catalogue)
        assert isinstance(loaded.chooser, NeighbourChooser) and loaded.chooser.language_settings == tuned
        write_plugin_model(loaded, catalogue, model_dir / PLUGIN_MODEL_NAME)
        exported = json.loads((model_dir / PLUGIN_MODEL_NAME).read_text())
        assert exported["format"] == (4 if tuned else 3)  # older plugins refuse it
        ordered = {**env, "STITCHOPT_MODEL": str(model_dir)}
        for source, module, in_cxx in zip(sources, modules, cxx, strict=True):
            python = [-1 if r.passes is None else index[r.passes] for r in loaded.rank(toolchain, module)]
            printed = _print_order(toolchain, plugin, module, ordered)
            assert json.loads(printed.stdout) == {"order": python, "error": None}, (source.name, neighbors)
            assert python[0] == (0 if in_cxx else 1), source.name
        python = [-1 if r.passes is None else index[r.passes] for r in loaded.rank(toolchain, as_c)]
        assert json.loads(_print_order(toolchain, plugin, as_c, ordered).stdout)["order"] == python
        assert python[0] == 0
        python = [-1 if r.passes is None else index[r.passes] for r in loaded.rank(toolchain, unknown)]
        assert json.loads(_print_order(toolchain, plugin, unknown, ordered).stdout)["order"] == python
        if not shrink:  # the means over all units: the C units' list, not the C++ units' list 0
            assert python[0] == 1
    cxx_in_c_file = tmp_path / "unit.c"
    cxx_in_c_file.write_bytes(sources[-2].read_bytes())
    for source, flags, language in (
        (sources[0], [], "c"),
        (sources[-2], [], "c++"),
        (cxx_in_c_file, ["-x", "c++"], "c++"),
    ):
        run = compile_unit(toolchain, source, tmp_path / "unit.o", ordered, plugin, flags)  # the log names the language
        assert run.returncode == 0 and records(env)[-1]["language"] == language, run.stderr
    everyone = NeighbourChooser(3, 0.0).fit(x, ratios).order(x[cxx])  # over all units: the C units' list
    assert (np.argsort(everyone, axis=1, kind="stable")[:, 0] == 1).all()


def test_the_plugin_orders_jits_lists_as_python_does(
    toolchain: Toolchain, plugin: Path, catalogue: Catalogue, env: dict[str, str], tmp_path: Path
) -> None:
    """The whole order the modes try (jit builds its first k), from `print<stitchopt-order>`, is Python's for
    the shipped model: the neighbours' covering order (models/covering.py) summed the same way in C++."""
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    index = {passes: i for i, passes in enumerate(model.lists)}
    orders = []
    for name in UNITS:
        module = _frontend_ir(toolchain, DEMO / f"{name}.c", tmp_path)
        printed = _print_order(toolchain, plugin, module, env)
        assert printed.stderr == b""
        python = [-1 if ranked.passes is None else index[ranked.passes] for ranked in model.rank(toolchain, module)]
        assert json.loads(printed.stdout) == {"order": python, "error": None}, name
        orders.append(tuple(python[:5]))
    assert len(set(orders)) >= 3  # the units' first five lists differ
    printed = _print_order(toolchain, plugin, module, {**env, "STITCHOPT_MODEL": str(tmp_path / "no-model")})
    answer = json.loads(printed.stdout)  # still one line of JSON, saying why there is no order
    assert answer["order"] is None and "stitchopt plugin export MODEL_DIR" in answer["error"]
    assert printed.stderr.decode().startswith(WARNING) and len(printed.stderr.splitlines()) == 1


@pytest.mark.parametrize("damage", ["cut short", "missing"])
def test_a_model_whose_rows_file_is_damaged_is_one_warning_and_no_order(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path, damage: str
) -> None:
    model_dir = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model_dir)
    rows = model_dir / json.loads((model_dir / PLUGIN_MODEL_NAME).read_text())["rows"]["file"]
    if damage == "cut short":
        rows.write_bytes(rows.read_bytes()[:-4])
        said = f"has {rows.stat().st_size} bytes, not {rows.stat().st_size + 4}"
    else:
        rows.unlink()
        said = "(kept beside"
    module = _frontend_ir(toolchain, DEMO / f"{UNITS[0]}.c", tmp_path)
    printed = _print_order(toolchain, plugin, module, {**env, "STITCHOPT_MODEL": str(model_dir)})
    answer = json.loads(printed.stdout)
    assert answer["order"] is None and f"its rows file {rows} {said}" in answer["error"], answer["error"]
    assert printed.stderr.decode().startswith(WARNING) and len(printed.stderr.splitlines()) == 1


def test_an_export_keeps_the_rows_files_a_reader_may_still_open_and_no_older_ones(
    catalogue: Catalogue, tmp_path: Path
) -> None:
    """The replaced document's rows file stays for a compile that read it; an older one of the same document
    goes; another export's in the same directory (`plugin-m2.json`) is not touched."""
    model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
    target = tmp_path / PLUGIN_MODEL_NAME
    older, replaced, other = (
        "plugin-0123456789abcdef.rows",
        "plugin-fedcba9876543210.rows",
        "plugin-m2-0123456789abcdef.rows",
    )
    for name in (older, replaced, other):
        (tmp_path / name).write_bytes(b"")
    target.write_text(json.dumps({"rows": {"file": replaced, "bytes": 0}}))
    write_plugin_model(model, catalogue, target)
    written = json.loads(target.read_text())["rows"]["file"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([PLUGIN_MODEL_NAME, written, replaced, other])


def _shipped_document_in(model_dir: Path) -> dict[str, Any]:
    """The shipped plugin.json's document, its rows file copied into `model_dir` (which gets the document, edited)."""
    shipped = json.loads((DEFAULT_MODEL_DIR / PLUGIN_MODEL_NAME).read_text())
    shutil.copy(DEFAULT_MODEL_DIR / shipped["rows"]["file"], model_dir)
    return shipped


def _print_order(
    toolchain: Toolchain, plugin: Path, module: IRModule, env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    argv = [toolchain.tool("opt"), f"-load-pass-plugin={plugin}", "-passes=print<stitchopt-order>", "-disable-output"]
    return subprocess.run(argv, input=module.bitcode, capture_output=True, env=env, check=True)


def _relabelled(toolchain: Toolchain, text: str) -> IRModule:
    """The module of an edited disassembly."""
    return module_from_bitcode(toolchain, assemble(toolchain, text.encode(), "relabelled"), "relabelled")


def _frontend_ir(toolchain: Toolchain, source: Path, tmp_path: Path) -> IRModule:
    """The unit's IR as the wrapper reads it: clang -Oz's front end, unoptimized."""
    bitcode = tmp_path / f"{source.stem}.bc"
    argv = frontend_command([toolchain.tool("clang")], FRONTEND_LEVEL, args=[str(source), "-o", str(bitcode)])
    subprocess.run(argv, check=True)
    return module_from_bitcode(toolchain, bitcode.read_bytes(), source.stem)


@pytest.mark.parametrize(
    "flags",
    [
        ["-g"],
        ["-ffunction-sections", "-fdata-sections"],
        ["-fno-asynchronous-unwind-tables"],
        ["-fno-pic"],
        ["-march=haswell"],
        ["-mcmodel=large"],
        ["-fno-addrsig"],
        ["-fstack-protector-strong"],
        ["-fno-integrated-cc1"],  # cc1 as a process of its own, as for each source of `clang a.c b.c`
    ],
    ids=lambda flags: " ".join(flags),
)
def test_minus_oz_measured_in_memory_is_clangs_object_under_the_users_flags(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path, flags: list[str]
) -> None:
    """The in-memory target machine is built from the module and clang's own options: its -Oz object measures
    what clang writes, so "smaller than -Oz" means the same as in the wrapper."""
    source = DEMO / "bigint.c"
    plain, through = tmp_path / "plain.o", tmp_path / "plugin.o"
    assert compile_unit(toolchain, source, plain, env, None, flags).returncode == 0
    assert compile_unit(toolchain, source, through, env, plugin, flags).returncode == 0
    record = records(env)[-1]
    assert record["outcome"] in ("oz", "optimized") and record["oz_bytes"] == size(plain), record
    assert size(through) <= size(plain)


@pytest.mark.parametrize(
    "problem",
    [
        "no model file",
        "another LLVM",
        "not JSON",
        "a list LLVM rejects",
        "a chooser without neighbors",
        "a language without a name",
        "a language with no neighbours",
        "a newer format",
    ],
)
def test_anything_wrong_is_one_warning_line_and_plain_oz(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path, problem: str
) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shipped = _shipped_document_in(model_dir) if problem != "no model file" else {}
    if problem == "another LLVM":
        (model_dir / PLUGIN_MODEL_NAME).write_text(json.dumps({**shipped, "llvm": "18.1.8"}))
    elif problem == "not JSON":
        (model_dir / PLUGIN_MODEL_NAME).write_text('{"format": 1, "lists": [')
    elif problem == "a chooser without neighbors":
        (model_dir / PLUGIN_MODEL_NAME).write_text(json.dumps({**shipped, "chooser": {"shrink": 0.5}}))
    elif problem == "a language without a name":
        languages = [{k: v for k, v in language.items() if k != "name"} for language in shipped["chooser"]["languages"]]
        chooser = {**shipped["chooser"], "languages": languages}
        (model_dir / PLUGIN_MODEL_NAME).write_text(json.dumps({**shipped, "chooser": chooser}))
    elif problem == "a language with no neighbours":
        languages = [{**language, "neighbors": 0, "shrink": 0.5} for language in shipped["chooser"]["languages"]]
        chooser = {**shipped["chooser"], "languages": languages}
        (model_dir / PLUGIN_MODEL_NAME).write_text(json.dumps({**shipped, "format": 4, "chooser": chooser}))
    elif problem == "a newer format":
        (model_dir / PLUGIN_MODEL_NAME).write_text(json.dumps({**shipped, "format": 5}))
    elif problem == "a list LLVM rejects":
        (model_dir / PLUGIN_MODEL_NAME).write_text(
            json.dumps({**shipped, "lists": ["no-such-pass"] * len(shipped["lists"])})
        )
    env = {**env, "STITCHOPT_MODEL": str(model_dir), "STITCHOPT_POLICY": "exact", "STITCHOPT_MODE": "jit"}
    source = DEMO / "bigint.c"
    plain, through = tmp_path / "plain.o", tmp_path / "plugin.o"
    assert compile_unit(toolchain, source, plain, env, None).returncode == 0
    run = compile_unit(toolchain, source, through, env, plugin)
    assert run.returncode == 0
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(WARNING), run.stderr
    if problem == "a newer format":
        assert "model format 5, this plugin reads 2, 3, 4" in lines[0]
    assert through.read_bytes() == plain.read_bytes()
    assert records(env)[-1]["outcome"] == "oz"


def test_jit_mode_measures_k_lists_and_keeps_the_smallest(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path
) -> None:
    static_env = dict(env)
    jit_env = {**env, "STITCHOPT_MODE": "jit", "STITCHOPT_K": "5", "STITCHOPT_BUILD_LOG": str(tmp_path / "jit.jsonl")}
    for name in UNITS[:4]:
        static, jit = tmp_path / f"{name}.static.o", tmp_path / f"{name}.jit.o"
        assert compile_unit(toolchain, DEMO / f"{name}.c", static, static_env, plugin).returncode == 0
        assert compile_unit(toolchain, DEMO / f"{name}.c", jit, jit_env, plugin).returncode == 0
        assert size(jit) <= size(static), name
    for record in records(jit_env):
        assert record["mode"] == "jit" and 1 <= record["candidates"] <= 5
        assert record["bytes"] <= record["oz_bytes"]


def test_fast_policy_builds_the_choice_only_beyond_the_margin(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """One pipeline and nothing measured: the model's choice where it is predicted to beat -Oz by more than the
    margin, else -Oz; the shipped model carries a margin, so no warning."""
    outcomes = {}
    for name, margin in (("shipped", None), ("never", 1e9), ("always", -1e9)):
        model_dir = tmp_path / name
        model_dir.mkdir()
        shipped = _shipped_document_in(model_dir)
        margin = shipped["fast_margin"] if margin is None else margin
        (model_dir / PLUGIN_MODEL_NAME).write_text(json.dumps({**shipped, "fast_margin": margin}))
        fast = {**env, "STITCHOPT_POLICY": "fast", "STITCHOPT_MODEL": str(model_dir)}
        run = compile_unit(toolchain, DEMO / "csv_parser.c", tmp_path / f"{name}.o", fast, plugin)
        assert run.returncode == 0 and run.stderr == ""
        record = records(env)[-1]
        assert record["policy"] == "fast" and record["oz_bytes"] is None and record["choice"] is not None
        outcomes[name] = record["outcome"], record["pipeline"]
    assert outcomes["never"] == ("oz", None)
    assert outcomes["always"] == ("optimized", records(env)[-1]["choice"])
    plain = tmp_path / "plain.o"
    assert compile_unit(toolchain, DEMO / "csv_parser.c", plain, env, None).returncode == 0
    assert (tmp_path / "never.o").read_bytes() == plain.read_bytes()


def test_a_multi_file_program_built_in_parallel_with_the_plugin_runs_like_the_plain_build(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Three units compiled at once (as `make -j` does) with one build log: one record each, and the linked
    program prints what the plain -Oz build prints."""
    sources = sorted(PROGRAM.glob("*.c"))
    outputs: dict[str, str] = {}
    for variant, loaded in (("plain", None), ("plugin", plugin)):
        objects = [tmp_path / f"{variant}.{s.stem}.o" for s in sources]
        with ThreadPoolExecutor(len(sources)) as pool:
            futures = [
                pool.submit(compile_unit, toolchain, source, obj, env, loaded)
                for source, obj in zip(sources, objects, strict=True)
            ]
            runs = [future.result() for future in futures]
        assert all(r.returncode == 0 and r.stderr == "" for r in runs), [r.stderr for r in runs]
        exe = tmp_path / variant
        subprocess.run([toolchain.tool("clang"), *map(str, objects), "-o", str(exe)], check=True)
        ran = subprocess.run([str(exe)], capture_output=True, text=True, check=False, timeout=10)
        assert ran.returncode == 0
        outputs[variant] = ran.stdout
    assert outputs["plugin"] == outputs["plain"] and outputs["plain"].startswith("words 17 ")
    assert sorted(Path(r["unit"]).name for r in records(env)) == [s.name for s in sources]


@pytest.mark.parametrize(
    ("flags", "counted"),
    [
        (["-O0"], False),
        (["-Os"], False),
        (["-Oz", "-flto=thin"], True),
        (["-Oz", "-emit-llvm"], True),
        (["-Oz", "-fprofile-instr-generate"], True),
        (["-Oz", "--coverage"], True),
        (["-Oz", "-fsanitize=address"], True),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_levels_outputs_and_instrumentation_the_model_is_not_for_are_left_to_clang(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path, flags: list[str], counted: bool
) -> None:
    """Other levels are clang's; at -Oz, IR output and instrumentation (whose passes clang adds after the
    plugin's list and would be vetoed with the rest) are compiled untouched and counted as passed through."""
    level, *rest = flags
    output = tmp_path / "unit.o"  # one name for both: --coverage writes it into the object
    assert compile_unit(toolchain, DEMO / "bigint.c", output, env, None, rest, level).returncode == 0
    plain = output.read_bytes()
    run = compile_unit(toolchain, DEMO / "bigint.c", output, env, plugin, rest, level)
    assert run.returncode == 0 and run.stderr == ""
    assert output.read_bytes() == plain
    logged = records(env)
    if counted:
        assert [r["outcome"] for r in logged] == ["passed_through"] and rest[0] in logged[0]["reason"]
    else:
        assert logged == []


DIAGNOSED = """
__attribute__((error("must be folded away"))) void never(void);
__attribute__((warning("said once"))) void noisy(void);
static inline int check(int x) { if (x > 4) never(); return x; }
int f(int y) { noisy(); return check(y & 3); }
"""


def test_work_on_copies_neither_repeats_nor_adds_diagnostics(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Candidates are measured on copies: their warnings are not printed again, and a list that leaves a call
    only -Oz folds away (an error attribute) is left out instead of failing the compile."""
    source = tmp_path / "diagnosed.c"
    source.write_text(DIAGNOSED)
    plain = compile_unit(toolchain, source, tmp_path / "plain.o", env, None)
    for settings in ({}, {"STITCHOPT_LIST": "function(instcombine<no-verify-fixpoint>)"}):
        run = compile_unit(toolchain, source, tmp_path / "plugin.o", {**env, **settings}, plugin)
        assert run.returncode == 0 and run.stderr == plain.stderr and plain.stderr.count("warning:") == 1
        assert (tmp_path / "plugin.o").read_bytes() == (tmp_path / "plain.o").read_bytes()
    assert "error diagnostic" in records(env)[-1]["reason"]


COROUTINE = """
#include <coroutine>
struct task {
  struct promise_type {
    task get_return_object() { return {}; }
    std::suspend_never initial_suspend() { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() {}
  };
};
task run(int *out) { *out = 1; co_return; }
"""


def test_a_candidate_is_measured_with_what_clang_still_runs_after_it(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Coroutines are lowered by required passes clang runs after the plugin's list: a candidate measured
    without them once reached code generation unlowered and crashed the compile."""
    source = tmp_path / "coroutine.cc"
    source.write_text(COROUTINE)
    run = compile_unit(toolchain, source, tmp_path / "plugin.o", env, plugin, ["-std=c++20"], "-Oz")
    assert run.returncode == 0 and run.stderr == ""
    assert records(env)[-1]["outcome"] in ("oz", "optimized")


def test_a_list_naming_the_plugins_own_passes_is_refused(
    toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path
) -> None:
    env = {**env, "STITCHOPT_LIST": "stitchopt-static"}
    run = compile_unit(toolchain, DEMO / "bigint.c", tmp_path / "plugin.o", env, plugin)
    assert run.returncode == 0 and run.stderr.startswith(WARNING) and len(run.stderr.splitlines()) == 1


def test_opt_runs_the_model_as_a_pass(toolchain: Toolchain, plugin: Path, env: dict[str, str], tmp_path: Path) -> None:
    bitcode = _frontend_ir(toolchain, DEMO / "bigint.c", tmp_path)
    (tmp_path / "in.bc").write_bytes(bitcode.bitcode)
    argv = [toolchain.tool("opt"), f"-load-pass-plugin={plugin}", "-passes=stitchopt-static"]
    run = subprocess.run([*argv, str(tmp_path / "in.bc"), "-o", str(tmp_path / "out.bc")], env=env, check=False)
    assert run.returncode == 0
    record = records(env)[-1]
    assert record["outcome"] in ("oz", "optimized") and record["oz_bytes"] > 0


def test_the_plugin_commands(plugin: Path, tmp_path: Path) -> None:
    stitchopt = str(BIN / "stitchopt")
    shown = subprocess.run([stitchopt, "plugin", "path"], capture_output=True, text=True, check=True)
    assert Path(shown.stdout.strip()) == plugin
    exported = tmp_path / "exported.json"
    run = subprocess.run(
        [stitchopt, "plugin", "export", str(DEFAULT_MODEL_DIR), "-o", str(exported)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0 and run.stdout == "" and "50 lists; fast margin " in run.stderr
    written, shipped = (json.loads(path.read_text()) for path in (exported, DEFAULT_MODEL_DIR / PLUGIN_MODEL_NAME))
    rows = [written.pop("rows")["file"], shipped.pop("rows")["file"]]  # named after each document
    assert (
        written == shipped
        and rows[0].startswith("exported-")
        and rows[0].removeprefix("exported") == rows[1].removeprefix("plugin")
    )
    assert (tmp_path / rows[0]).read_bytes() == (DEFAULT_MODEL_DIR / rows[1]).read_bytes()
    refused = subprocess.run([stitchopt, "plugin", "export", str(tmp_path)], capture_output=True, text=True)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
