"""The clang plugin's C++ feature extraction equals the Python representations, value for value.

The shipped model was trained on the Python vectors, so inside clang the plugin must compute exactly the same
numbers. Its `print<stitchopt-features>` pass prints one JSON object (`representations`, `names`, `values`,
`language`); each program is compiled as the product compiles it (`clang -Oz -Xclang -disable-llvm-passes`) and
the printed vector is compared with `representation(name, version).extract(...)` on the same bitcode, the
language with `ir_language` of its text (a chooser per language answers from it).
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stitchopt.core import IRModule
from stitchopt.datasets.demo import demo_programs
from stitchopt.errors import InputError, StitchoptError
from stitchopt.features.by_name import representation
from stitchopt.features.module import FeatureModule
from stitchopt.features.native import PRINTED, PRINTER, PluginFeatures, plugin_features
from stitchopt.learning.kinds import load_model
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import compile_source, ir_language, load_module
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.plugin_library import plugin_path
from stitchopt.toolchain.process import run_tool
from stitchopt.validate.suites import DATA_DIR_ENV, Suite, humaneval_path, jsonl_suite

SHARED_DATA = Path(os.environ.get(DATA_DIR_ENV, Path(__file__).parents[3] / "shared" / "data"))
DEMO = sorted(demo_programs().values())
HUMANEVAL_PROGRAMS = 10
TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def plugin() -> Path:
    """The built plugin; the tests skip where it is not built (or this checkout cannot build one)."""
    try:
        path = Path(plugin_path())
    except (StitchoptError, OSError) as exc:
        pytest.skip(f"the stitchopt clang plugin is not built: {exc}")
    if not path.is_file():
        pytest.skip(f"the stitchopt clang plugin is not built: no {path}")
    return path


@pytest.fixture(scope="module")
def humaneval() -> Suite:
    try:
        path = humaneval_path(SHARED_DATA)
    except InputError as exc:
        pytest.skip(str(exc))
    return jsonl_suite(path).limited(HUMANEVAL_PROGRAMS)


def printed_features(toolchain: Toolchain, plugin: Path, bitcode: Path) -> dict[str, Any]:
    """What `opt -load-pass-plugin=PLUGIN -passes=print<stitchopt-features>` prints for one module."""
    argv = opt_command(
        toolchain.tool("opt"),
        PRINTER,
        flags=[f"-load-pass-plugin={plugin}"],
        args=["-disable-output", str(bitcode)],
    )
    run = run_tool(argv, timeout=TIMEOUT_S)
    assert not run.timed_out, f"{bitcode.name}: {PRINTER} timed out"
    assert run.returncode == 0, f"{bitcode.name}: {PRINTER} failed: {run.stderr_text.strip()}"
    printed = json.loads(run.stdout)
    assert isinstance(printed, dict), f"{bitcode.name}: {PRINTER} printed {type(printed).__name__}, not an object"
    return printed


def first_difference(left: list[Any], right: list[Any]) -> int:
    return next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b), min(len(left), len(right)))


def assert_plugin_matches_python(toolchain: Toolchain, plugin: Path, bitcode: Path, label: str) -> None:
    module = FeatureModule.from_path(toolchain, bitcode)
    names: list[str] = []
    labels: list[str] = []  # "representation.feature", for messages
    values: list[float] = []
    for name, version in PRINTED:
        python = representation(name, version)
        names += python.feature_names()
        labels += [f"{name}.{feature}" for feature in python.feature_names()]
        values += [float(value) for value in python.extract(module)]

    printed = printed_features(toolchain, plugin, bitcode)
    assert printed.get("representations") == [list(pair) for pair in PRINTED], (
        f"{label}: the plugin printed representations {printed.get('representations')}"
    )
    plugin_names = list(printed.get("names", []))
    if plugin_names != names:
        at = first_difference(plugin_names, names)
        pytest.fail(
            f"{label}: feature name {at} is {plugin_names[at] if at < len(plugin_names) else None!r} in the plugin "
            f"but {names[at] if at < len(names) else None!r} in Python ({len(plugin_names)} vs {len(names)} names)"
        )
    plugin_values = [float(value) for value in printed.get("values", [])]
    assert len(plugin_values) == len(values), f"{label}: {len(plugin_values)} values, Python has {len(values)}"
    differing = [i for i, (cpp, py) in enumerate(zip(plugin_values, values, strict=True)) if cpp != py]
    if differing:
        at = differing[0]
        pytest.fail(
            f"{label}: {labels[at]} is {plugin_values[at]:g} in the plugin but {values[at]:g} in Python "
            f"({len(differing)} of {len(values)} features differ)"
        )
    assert printed.get("language") == ir_language(module.text), f"{label}: the plugin reads another language"


@pytest.mark.parametrize("source", DEMO, ids=[path.stem for path in DEMO])
def test_plugin_features_equal_python_on_the_demo_corpus(
    toolchain: Toolchain, plugin: Path, source: Path, tmp_path: Path
) -> None:
    bitcode = tmp_path / f"{source.stem}.bc"
    bitcode.write_bytes(compile_source(toolchain, source))
    assert_plugin_matches_python(toolchain, plugin, bitcode, source.name)


@pytest.mark.parametrize("index", range(HUMANEVAL_PROGRAMS))
def test_plugin_features_equal_python_on_humaneval(
    toolchain: Toolchain, plugin: Path, humaneval: Suite, index: int, tmp_path: Path
) -> None:
    if index >= len(humaneval.programs):
        pytest.skip(f"the HumanEval-X file has only {len(humaneval.programs)} programs")
    program = humaneval.programs[index]
    source = tmp_path / "program.cpp"
    source.write_text(program.source)
    bitcode = tmp_path / "program.bc"
    bitcode.write_bytes(compile_source(toolchain, source, extra_args=program.compile_args))
    assert_plugin_matches_python(toolchain, plugin, bitcode, program.name)


def test_the_model_reads_the_plugins_features_and_falls_back_to_python(
    toolchain: Toolchain, catalogue: Catalogue, plugin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inference computes the shipped model's features in the plugin (one `opt` run) where it is built: the
    same row as the Python representations; the plugin declines a module whose function names the Python side
    reads back otherwise, and without the plugin, or on bytes it cannot read, Python computes them (silently:
    a plugin that fails on a module Python reads is reported)."""
    model = load_model(DEFAULT_MODEL_DIR, catalogue)
    assert isinstance(model, FlagModel)
    module = load_module(toolchain, DEMO[0])
    python = model.python_features(toolchain, module)
    native = plugin_features(toolchain, module.bitcode, model.representations)
    assert native.values is not None and np.array_equal(native.values, python) and not native.failure

    def no_python(*_: object) -> None:
        raise AssertionError("the Python representations ran where the plugin could compute the features")

    with monkeypatch.context() as patched:
        patched.setattr(FeatureModule, "from_bytes", no_python)
        assert np.array_equal(model.features(toolchain, module)[0], python)

    for names in (("a\\0Ab", "plain"), ("\\FF", "\\FE", "plain")):  # a line break; bytes that are not UTF-8
        functions_ir = "\n".join(
            f'define i32 @"{name}"(i32 %x) {{\n  %c = icmp sgt i32 %x, 0\n  br i1 %c, label %t, label %e\nt:\n'
            f"  ret i32 1\ne:\n  ret i32 2\n}}\n"
            for name in names
        )
        odd = IRModule("odd.ll", functions_ir.encode(), module.triple)
        assert plugin_features(toolchain, odd.bitcode, model.representations) == PluginFeatures(None), names
        assert np.array_equal(model.features(toolchain, odd)[0], model.python_features(toolchain, odd))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a module the plugin cannot read is Python's to report, not a warning
        assert plugin_features(toolchain, b"not IR", model.representations).values is None
        with pytest.raises(InputError, match=f"is not a valid LLVM {toolchain.major} module"):
            model.features(toolchain, IRModule("broken.bc", b"BC\xc0\xde broken", module.triple))
        unknown = b'target triple = "foo-bar-baz"\ndefine i32 @f() {\n  ret i32 0\n}\n'  # opt fails, not the plugin
        with pytest.raises(InputError, match="opt cannot analyse the module"):
            model.features(toolchain, IRModule("unknown.ll", unknown, module.triple))
    monkeypatch.setattr("stitchopt.features.native.PLUGIN_PATH", plugin.parent / "missing.so")
    assert plugin_features(toolchain, module.bitcode, model.representations) == PluginFeatures(None)
    assert np.array_equal(model.features(toolchain, module)[0], python)


def test_a_plugin_that_fails_is_reported_once_and_python_answers(
    toolchain: Toolchain, catalogue: Catalogue, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin opt cannot load (here a file that only names this LLVM's libLLVM) costs one warning per process,
    not one per unit; the features still come, from Python. One linked against another LLVM is not run."""
    model = load_model(DEFAULT_MODEL_DIR, catalogue)
    assert isinstance(model, FlagModel)
    module = load_module(toolchain, DEMO[0])
    broken = tmp_path / "libstitchopt-plugin.so"
    broken.write_bytes(f"not a plugin; needs libLLVM.so.{toolchain.major}.1".encode())
    monkeypatch.setattr("stitchopt.features.native.PLUGIN_PATH", broken)
    with pytest.warns(UserWarning, match="fell back to Python") as caught:
        for _ in range(2):
            assert np.array_equal(model.features(toolchain, module)[0], model.python_features(toolchain, module))
    assert len([w for w in caught if "fell back" in str(w.message)]) == 1
    other = tmp_path / "other" / "libstitchopt-plugin.so"
    other.parent.mkdir()
    other.write_bytes(f"needs libLLVM.so.{toolchain.major + 1}.1".encode())
    monkeypatch.setattr("stitchopt.features.native.PLUGIN_PATH", other)
    assert plugin_features(toolchain, module.bitcode, model.representations) == PluginFeatures(None)  # not run
