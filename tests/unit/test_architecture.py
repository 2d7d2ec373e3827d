"""Data flows downward only: every import in the package, module-level or inside a function, goes to a package
of the same layer or below (the layers are read from docs/design.md), and neither packages nor modules form a
cycle."""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from setuptools import find_packages

import stitchopt

SOURCE = Path(stitchopt.__file__).parent
DESIGN = SOURCE.parents[1] / "docs" / "design.md"


def _layers() -> dict[str, int]:
    block = re.search(r"<!-- layers -->\s*```\n(.*?)```", DESIGN.read_text(), re.S)
    assert block is not None, "docs/design.md lost its <!-- layers --> block"
    return {name: level for level, line in enumerate(block[1].splitlines()) for name in line.split()}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    """The top-level part of stitchopt a module belongs to (`__init__` for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every stitchopt import, wherever it stands; `from a import b` names `a.b` when that is
    a module, else `a`."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "stitchopt":
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "stitchopt")


MODULES = {_module_name(path): path for path in SOURCE.rglob("*.py")}


def _resolved(target: str) -> str:
    """The module an import names: itself, or the module that defines the imported name."""
    return target if target in MODULES else target.rsplit(".", 1)[0]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        graph[name].update(found for _, target in _imports(path) if (found := _resolved(target)) != name)
    return graph


def _cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One cycle of the graph (its nodes in order, the first repeated at the end), or [] when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return [*path[path.index(succ) :], succ]
            if succ not in state and (found := visit(succ)):
                return found
        state[node] = 2
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return []


def test_the_layers_name_exactly_the_packages() -> None:
    packages = {_package(name) for name in MODULES}
    assert packages - _layers().keys() == set(), "add new packages to the layers block of docs/design.md"
    assert _layers().keys() - packages == set(), "drop packages that no longer exist from docs/design.md"


def test_every_source_directory_is_a_tracked_package() -> None:
    """A directory without a tracked `__init__.py` is left out by `find_packages` (pip install .), silently."""
    tracked = subprocess.run(["git", "ls-files", "src"], cwd=SOURCE.parents[1], capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    files = set(tracked.stdout.split())
    directories = {path.parent for path in SOURCE.rglob("*.py")}
    missing = [
        str(directory.relative_to(SOURCE.parents[1]))
        for directory in directories
        if str((directory / "__init__.py").relative_to(SOURCE.parents[1])) not in files
    ]
    assert missing == []
    assert {d.replace("/", ".") for d in map(str, (x.relative_to(SOURCE.parent) for x in directories))} <= set(
        find_packages(str(SOURCE.parent))
    )


def test_no_import_goes_up_a_layer() -> None:
    layers = _layers()
    upward = []
    for name, path in MODULES.items():
        source = _package(name)
        for line, target in _imports(path):
            wanted = _package(_resolved(target))
            if layers[wanted] > layers[source]:
                upward.append(f"{path.relative_to(SOURCE)}:{line} ({source}) imports {target} ({wanted})")
    assert upward == []


def test_only_benchmarks_and_tests_use_the_studies() -> None:
    """`studies/` holds benchmark-only code: no product package imports it (the layers alone would let cli)."""
    users = [
        f"{path.relative_to(SOURCE)}:{line} imports {target}"
        for name, path in MODULES.items()
        if _package(name) != "studies"
        for line, target in _imports(path)
        if _package(_resolved(target)) == "studies"
    ]
    assert users == []


def test_neither_packages_nor_modules_form_a_cycle() -> None:
    modules = _graph()
    packages: dict[str, set[str]] = {}
    for name, targets in modules.items():
        packages.setdefault(_package(name), set()).update(_package(t) for t in targets if _package(t) != _package(name))
    assert _cycle(packages) == []
    assert _cycle(modules) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) == []


LLVM_COMMANDS = "stitchopt.toolchain.llvm"


def _code_strings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every string in the code, f-string parts included; docstrings and other bare strings
    are prose and left out."""
    tree = ast.parse(source)
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            yield node.lineno, node.value


def test_only_the_llvm_module_spells_opt_pipelines() -> None:
    """`opt -passes=` command lines are built in toolchain/llvm.py, so that what runs and what is shown agree."""
    spelled = [
        f"{path.relative_to(SOURCE)}:{line}"
        for name, path in MODULES.items()
        if name != LLVM_COMMANDS
        for line, text in _code_strings(path.read_text())
        if "-passes=" in text
    ]
    assert spelled == []


def test_code_strings_are_f_string_parts_but_not_docstrings() -> None:
    source = 'def f(p):\n    """`opt -passes=` in prose."""\n    return [f"-passes={p}", "-o"]\n'
    assert sorted(text for _, text in _code_strings(source)) == ["-o", "-passes="]
