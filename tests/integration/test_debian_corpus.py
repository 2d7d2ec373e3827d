"""The Debian corpus without network: the curated list against the fairness rules, pins, where a package's
files are filed, and the generic build (Makefile and CMake projects) recorded through the real wrapper."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from stitchopt.datasets.sources.apt import check_dsc
from stitchopt.datasets.sources.debian import (
    EXCLUDED,
    PACKAGES,
    DebianSource,
    Recipe,
    build_tree,
    recipe_of,
    same_times,
)
from stitchopt.datasets.sources.pypi import PACKAGES as PYPI_PACKAGES
from stitchopt.datasets.sources.recorded import Placement, placement, recorded_modules, recording_env
from stitchopt.errors import DatasetError
from stitchopt.toolchain.discovery import Toolchain


def test_the_curated_list_is_pinned_and_keeps_every_excluded_project_out() -> None:
    names = [p.name for p in PACKAGES]
    assert len(names) == len(set(names)) >= 120
    assert not set(names) & EXCLUDED
    assert not set(names) & {p.name for p in PYPI_PACKAGES}
    assert {"bzip2", "sqlite3", "xz-utils", "gzip", "ncompress", "nettle", "jansson", "pcre2", "zlib"} <= EXCLUDED
    assert all(re.fullmatch(r"[0-9a-f]{64}", p.dsc_sha256) and p.version for p in PACKAGES)
    assert len({p.domain for p in PACKAGES}) >= 9
    assert DebianSource().unit_of("coreutils/lib/xmalloc.c") == "coreutils"


def placed(unit: str) -> Placement:
    recipe = recipe_of(unit)
    return placement(unit, recipe.dropped, recipe.filed)


def test_shared_code_is_filed_under_its_own_name_and_excluded_code_dropped() -> None:
    coreutils = placed("coreutils")
    assert coreutils("lib/xmalloc.c") == ("coreutils/lib/xmalloc.c", "gnulib")
    assert coreutils("src/ls.c") == ("coreutils/src/ls.c", "coreutils")
    bash = placed("bash")
    assert bash("lib/readline/display.c") == ("bash/lib/readline/display.c", "readline")
    assert bash("lib/intl/dcgettext.c") is None
    busybox = placed("busybox")
    assert busybox("archival/libarchive/bz/compress.c") is None  # bzip2's code, on the fairness list
    assert busybox("archival/gzip.c") is None  # gzip 1.2.4's, SPEC CPU 2000's gzip
    assert busybox("archival/tar.c") == ("busybox/archival/tar.c", "busybox")
    findutils = placed("findutils")  # gnulib in gl/, its own code in lib/
    assert findutils("gl/lib/xalloc-die.c")[1] == "gnulib" and findutils("lib/buildcmd.c")[1] == "findutils"
    assert placed("opus")("src/opus.c") == ("opus/src/opus.c", "opus")
    assert placed("lzlib")("decoder.c") == ("lzlib/decoder.c", "lzip")  # lzip's family


def test_a_dsc_with_another_hash_is_refused(tmp_path: Path) -> None:
    dsc = tmp_path / "mujs_1.3.2-1.dsc"
    dsc.write_text("Format: 3.0 (quilt)\nSource: mujs\n")
    check_dsc(tmp_path, "mujs", hashlib.sha256(dsc.read_bytes()).hexdigest())
    with pytest.raises(DatasetError, match=r"mujs_1.3.2-1.dsc: sha256 [0-9a-f]{64} is not the pinned 0{64}"):
        check_dsc(tmp_path, "mujs", "0" * 64)


MAKEFILE = """\
all: good.o broken.o tool
tool: main.o good.o
\t$(CC) -o tool main.o good.o
"""
CMAKELISTS = """\
cmake_minimum_required(VERSION 3.13)
project(tiny C)
add_library(tiny src/tiny.c)
"""


@pytest.mark.parametrize("system", ["make", "cmake"])
def test_the_generic_build_records_what_compiles_and_goes_on_after_errors(
    toolchain: Toolchain, tmp_path: Path, system: str
) -> None:
    if shutil.which(system) is None:
        pytest.skip(f"{system} not installed (scripts/install-system-deps.sh --datasets)")
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    if system == "make":
        (tree / "Makefile").write_text(MAKEFILE)
        (tree / "good.c").write_text("int good(int x) { return x * 3; }\n")
        (tree / "broken.c").write_text("int broken(void) { return undeclared; }\n")
        (tree / "main.c").write_text("int good(int);\nint main(void) { return good(1) - 3; }\n")
        expected = {"pkg/good.c", "pkg/main.c"}  # broken.c fails, and make -k builds the rest
    else:
        (tree / "CMakeLists.txt").write_text(CMAKELISTS)
        (tree / "src" / "tiny.c").write_text("int tiny(int x) { return x + 1; }\n")
        expected = {"pkg/src/tiny.c"}
    records = tmp_path / "records"
    env = recording_env(toolchain, records, tmp_path / "launchers")
    build_tree(tree, Recipe(), env, tmp_path / "build.log")
    modules = recorded_modules(records, tree, placement("pkg"), "pkg")
    assert {m.name for m in modules} == expected, (tmp_path / "build.log").read_text()
    assert all(m.package == "pkg" and m.bitcode.startswith(b"BC") for m in modules)


def test_a_tree_without_a_build_system_is_one_clear_failure(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("nothing to build\n")
    with pytest.raises(DatasetError, match="no build system found"):
        build_tree(tmp_path, Recipe(), {}, tmp_path / "build.log")


def test_one_modification_time_keeps_make_from_regenerating_what_patches_touched(tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    (tmp_path / "Makefile").write_text("all: configure\nconfigure: configure.ac\n\tfalse regenerating\n")
    (tmp_path / "configure").write_text("#!/bin/sh\n")
    (tmp_path / "configure.ac").write_text("AC_INIT\n")  # a patch applied after: newer than what it generates
    os.utime(tmp_path / "configure", (1_000_000_000, 1_000_000_000))
    assert subprocess.run(["make", "-C", str(tmp_path)], capture_output=True).returncode != 0
    same_times(tmp_path)
    assert subprocess.run(["make", "-C", str(tmp_path)], capture_output=True).returncode == 0
