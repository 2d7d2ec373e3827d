"""Test programs and how to judge them: HumanEval-X style JSONL files and directories of self-testing programs.

A suite is data: each program carries its source, build flags, how to run it and what counts as passing, so
one builder serves PassListEval, Csmith differential testing and a user's own program alike.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from stitchopt.errors import InputError
from stitchopt.jsonlines import json_records

DATA_DIR_ENV = "STITCHOPT_DATA"
HUMANEVAL_FILE = "humaneval_cpp.jsonl.gz"
# The HumanEval-X evaluator prepends each of these includes that a prompt lacks.
HUMANEVAL_INCLUDES = (
    "stdlib.h",
    "algorithm",
    "math.h",
    "stdio.h",
    "vector",
    "string",
    "climits",
    "cstring",
    "iostream",
)
HUMANEVAL_STANDARD = "-std=c++11"
# Libraries a program needs when it includes headers under these prefixes.
HEADER_LIBRARIES = {"openssl/": ("-lssl", "-lcrypto")}
_SOURCE_LANGUAGES = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++"}


class Check(str, enum.Enum):
    """What makes a run pass."""

    EXIT_ZERO = "exit-zero"  # a self-testing program: exit status 0
    MATCH_REFERENCE = "match-reference"  # the exit status and stdout of its reference builds


@dataclass(frozen=True)
class SuiteProgram:
    name: str
    source: str
    language: str  # "c" or "c++"
    compile_args: tuple[str, ...] = ()
    link_args: tuple[str, ...] = ()
    run_args: tuple[str, ...] = ()
    stdin: bytes | None = None
    check: Check = Check.EXIT_ZERO
    reference_levels: tuple[str, ...] = ("O0",)  # clang -O levels it must build and pass (or agree) at

    @cached_property
    def digest(self) -> str:
        """Content address of everything that decides how the program is built, run and judged."""
        fields = {
            "source": self.source,
            "language": self.language,
            "compile": self.compile_args,
            "link": self.link_args,
            "run": self.run_args,
            "stdin": None if self.stdin is None else hashlib.sha256(self.stdin).hexdigest(),
            "check": self.check.value,
            "references": self.reference_levels,
        }
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Suite:
    name: str
    programs: tuple[SuiteProgram, ...] = field(repr=False)
    discarded: tuple[str, ...] = ()  # programs left out while building the suite, with the reason

    def limited(self, count: int | None) -> Suite:
        """The first `count` programs (all when None), e.g. for a quick check."""
        if count is None or count >= len(self.programs):
            return self
        return replace(self, programs=self.programs[:count])


def humaneval_path(data_dir: Path | None = None) -> Path:
    """Where the HumanEval-X C++ file is: `data_dir`, else `$STITCHOPT_DATA`; a clear error when absent."""
    directory = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV)
    if directory is None:
        raise InputError(
            f"no HumanEval-X data: set {DATA_DIR_ENV} (or --data-dir, where a command has it) to the directory "
            f"holding {HUMANEVAL_FILE}"
        )
    path = Path(directory) / HUMANEVAL_FILE
    if not path.is_file():
        raise InputError(
            f"no HumanEval-X data at {path}: point {DATA_DIR_ENV} or --data-dir at the directory holding it"
        )
    return path


def _libraries_for(source: str) -> tuple[str, ...]:
    flags: list[str] = []
    for prefix, libraries in HEADER_LIBRARIES.items():
        if f"<{prefix}" in source.replace("#include <", "#include<"):
            flags.extend(libraries)
    return tuple(flags)


def program_from_record(record: dict[str, object], where: str) -> SuiteProgram:
    """One HumanEval-X record as a program: missing includes + prompt + solution + test (the evaluator's rule).

    Records may add `compile_args` / `link_args` lists for their own dependencies.
    """
    try:
        name = str(record["task_id"])
        prompt, solution, test = (str(record[k]) for k in ("prompt", "canonical_solution", "test"))
    except KeyError as exc:
        raise InputError(
            f"{where}: record lacks {exc.args[0]!r} (needs task_id, prompt, canonical_solution, test)"
        ) from None
    header = "".join(f"#include<{h}>\n" for h in HUMANEVAL_INCLUDES if f"#include<{h}>" not in prompt)
    source = header + prompt + solution + "\n" + test
    extra_compile, extra_link = (_string_list(record, k, where) for k in ("compile_args", "link_args"))
    return SuiteProgram(
        name=name,
        source=source,
        language="c++",
        compile_args=(HUMANEVAL_STANDARD, *extra_compile),
        link_args=(*_libraries_for(source), *extra_link, "-lm"),
    )


def _string_list(record: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    value = record.get(key, [])
    if not isinstance(value, list):
        raise InputError(f"{where}: {key} must be a list of strings")
    return tuple(str(item) for item in value)


def jsonl_suite(path: Path) -> Suite:
    """A HumanEval-X style JSONL file (optionally gzipped)."""
    if not path.is_file():
        raise InputError(f"{path}: no such suite file")
    programs = [program_from_record(record, where) for where, record in json_records(path, "JSONL suite")]
    if not programs:
        raise InputError(f"{path}: the suite has no programs")
    name = path.name.removesuffix(".gz").removesuffix(".jsonl")
    return Suite(name, tuple(programs))


def directory_suite(directory: Path) -> Suite:
    """Every C/C++ file in `directory` is one self-testing program: exit status 0 means it passed."""
    files = sorted(p for p in directory.iterdir() if p.suffix in _SOURCE_LANGUAGES and p.is_file())
    if not files:
        raise InputError(f"{directory}: no .c/.cc/.cpp/.cxx programs in this directory")
    programs = tuple(source_program(path) for path in files)
    return Suite(directory.name, programs)


def source_program(path: Path, **overrides: object) -> SuiteProgram:
    """A C/C++ file as a program; its directory is on the include path."""
    language = _SOURCE_LANGUAGES.get(path.suffix)
    if language is None:
        raise InputError(f"{path}: not a C or C++ source ({', '.join(_SOURCE_LANGUAGES)})")
    try:
        source = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from exc
    program = SuiteProgram(
        name=path.name,
        source=source,
        language=language,
        compile_args=(f"-I{path.parent.resolve()}",),
        link_args=(*_libraries_for(source), "-lm"),
    )
    return replace(program, **overrides)  # type: ignore[arg-type]


def load_suite(spec: str, data_dir: Path | None = None) -> Suite:
    """`humaneval`, a JSONL(.gz) file or a directory of programs. (`csmith` suites are generated: see csmith.py.)"""
    if spec == "humaneval":
        return jsonl_suite(humaneval_path(data_dir))
    path = Path(spec)
    if path.is_dir():
        return directory_suite(path)
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return jsonl_suite(path)
    if not path.exists():
        raise InputError(f"{spec}: no such suite (use humaneval, csmith, demo, a directory or a .jsonl file)")
    raise InputError(f"{spec}: a suite is a directory of C/C++ programs or a .jsonl(.gz) file")
