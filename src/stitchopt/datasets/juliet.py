"""Juliet C test cases as labeled functions: each bad or good function alone as a module a model may read.

A case is compiled like the flag-tuning front end (`clang -Oz -Xclang -disable-llvm-passes`), its files joined
with `llvm-link`, and every labeled function cut out with `llvm-extract`. Names, comments and printed strings
give a label away, so each part is neutralized before anyone sees it (`toolchain.neutral`): every symbol the
case defines (and any whose name says bad or good) is renamed by first use, linkage and visibility are made
uniform (static helpers are mostly good functions), messages passed only to the suite's `print*Line` functions
lose their length, and debug info and the source file name are absent. Library symbols (malloc, printLine)
keep their names: both sides share them.
The split is by family (the id without its `_NN` flow variant), never by file, as the data's README says.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tarfile
import tempfile
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from stitchopt.cache.store import EvaluationStore
from stitchopt.errors import InputError
from stitchopt.jsonlines import json_records
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import compile_source
from stitchopt.toolchain.neutral import neutral_function, run_llvm
from stitchopt.toolchain.split import symbols
from stitchopt.validate.suites import DATA_DIR_ENV

JULIET_FILE = "juliet_c.jsonl.gz"
SUPPORT_FILE = "juliet_support.tar.gz"
SUPPORT_DIR = "testcasesupport"
SPLITS = ("train", "validation", "test")
FRONTEND_ARGS = ("-g0", "-w")  # no debug info; Juliet's code warns on purpose
ARTIFACT_KIND = "juliet-functions"
VERSION = "1"  # bump when what a case compiles to changes
_VARIANT_RE = re.compile(r"_\d+$")
_LABEL_WORD_RE = re.compile(r"bad|good", re.I)


@dataclass(frozen=True)
class JulietCase:
    """One test case: its files, which file holds `_bad`/`_good`, and each function's label."""

    id: str
    cwe: str
    cwe_name: str
    files: Mapping[str, str]  # file name -> C source
    main_file: str
    functions: Mapping[str, str]  # function name -> "bad" | "good"

    @property
    def family(self) -> str:
        """The id without its trailing flow variant: the unit of a leak-free split."""
        return _VARIANT_RE.sub("", self.id)

    @cached_property
    def digest(self) -> str:
        """Content address of what decides the compiled functions."""
        fields = {"files": dict(self.files), "functions": dict(self.functions)}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class JulietFunction:
    """One labeled function, compiled and neutralized; `name` is for reports only, never for a model."""

    case: str
    family: str
    cwe: str
    split: str
    name: str
    label: str  # "bad" | "good"
    bitcode: bytes  # this function alone, symbols renamed, no debug info, no source file name
    file: str  # where it is defined: case.files[file], lines first_line..last_line (1-based, inclusive)
    first_line: int
    last_line: int


def juliet_path(data_dir: Path | None = None) -> Path:
    """The Juliet file: in `data_dir`, else `$STITCHOPT_DATA`, else `../shared/data` beside the checkout."""
    if data_dir is not None:
        directory = Path(data_dir)
    elif os.environ.get(DATA_DIR_ENV):
        directory = Path(os.environ[DATA_DIR_ENV])
    else:
        directory = Path(__file__).resolve().parents[4] / "shared" / "data"
    path = directory / JULIET_FILE
    if not path.is_file():
        raise InputError(f"no Juliet data at {path}: set {DATA_DIR_ENV} to the directory holding {JULIET_FILE}")
    return path


def read_cases(path: Path) -> list[JulietCase]:
    """Every case of a Juliet JSONL(.gz) file, sorted by id."""
    cases = [_case(record, where) for where, record in json_records(path, "Juliet JSONL file")]
    return sorted(cases, key=lambda case: case.id)


def _case(record: dict[str, object], where: str) -> JulietCase:
    try:
        files, functions = record["files"], record["functions"]
        if not isinstance(files, dict) or not isinstance(functions, dict):
            raise InputError(f"{where}: files and functions must be objects")
        return JulietCase(
            id=str(record["id"]),
            cwe=str(record["cwe"]),
            cwe_name=str(record["cwe_name"]),
            files={str(k): str(v) for k, v in files.items()},
            main_file=str(record["main_file"]),
            functions={str(k): str(v) for k, v in functions.items()},
        )
    except KeyError as exc:
        raise InputError(f"{where}: record lacks {exc.args[0]!r} (see the data's README for the format)") from None


def family_splits(cases: Iterable[JulietCase]) -> dict[str, str]:
    """Family -> split: within each CWE, sorted families; i % 5 == 4 test (the README's rule), i % 5 == 2
    validation, the rest train."""
    by_cwe: dict[str, set[str]] = {}
    for case in cases:
        by_cwe.setdefault(case.cwe, set()).add(case.family)
    splits = {}
    for families in by_cwe.values():
        for index, family in enumerate(sorted(families)):
            splits[family] = "test" if index % 5 == 4 else "validation" if index % 5 == 2 else "train"
    return splits


def select_cases(
    cases: Sequence[JulietCase],
    splits: Collection[str],
    per_family: int | None = None,
    cwes: Collection[str] | None = None,
) -> list[JulietCase]:
    """The cases of these splits (and CWEs), at most `per_family` of each family, spread evenly over its flow
    variants (sorted by id: the first, then every len/per_family-th), so a sample holds in-function (01-18) and
    cross-function (21-68) variants alike; by id."""
    unknown = set(splits) - set(SPLITS)
    if unknown:
        raise InputError(f"unknown split {sorted(unknown)[0]!r}: use {', '.join(SPLITS)}")
    of_family = family_splits(cases)
    families: dict[str, list[JulietCase]] = {}
    for case in sorted(cases, key=lambda c: c.id):
        if of_family[case.family] in splits and (cwes is None or case.cwe in cwes):
            families.setdefault(case.family, []).append(case)
    chosen = []
    for members in families.values():
        count = len(members) if per_family is None else min(per_family, len(members))
        chosen += [members[i * len(members) // count] for i in range(count)]
    return sorted(chosen, key=lambda c: c.id)


def extract_support(data_dir_or_tar: Path, into: Path) -> Path:
    """The suite's `testcasesupport/` folder, unpacked under `into` (once) from the tar or the data directory."""
    tar = data_dir_or_tar / SUPPORT_FILE if data_dir_or_tar.is_dir() else data_dir_or_tar
    if not tar.is_file():
        raise InputError(f"no Juliet support files at {tar}: pass the directory holding {SUPPORT_FILE}")
    support = into / SUPPORT_DIR
    if not (support / "std_testcase.h").is_file():
        try:
            with tarfile.open(tar) as archive:
                archive.extractall(into, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise InputError(f"{tar}: cannot unpack: {exc}") from exc
        if not (support / "std_testcase.h").is_file():
            raise InputError(f"{tar}: holds no {SUPPORT_DIR}/std_testcase.h")
    return support


def support_digest(support_dir: Path) -> str:
    """The support headers' content, part of every cache key."""
    digest = hashlib.sha256()
    for path in sorted(support_dir.iterdir()):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def function_lines(source: str, name: str) -> tuple[int, int] | None:
    """First and last line (1-based) of `name`'s definition in `source`, or None when it is not defined there.

    Juliet writes a definition's head at column 0 (`static void goodG2B()` or `void X_bad()`); the body's end
    is found by matching braces outside comments and literals."""
    head = re.compile(rf"^(?:[A-Za-z_][\w \t*]*?[\s*])?{re.escape(name)}\s*\([^;{{]*?\)\s*\{{", re.M)
    match = head.search(source)
    if match is None:
        return None
    end = _closing_brace(source, match.end() - 1)
    return source.count("\n", 0, match.start()) + 1, source.count("\n", 0, end) + 1


def _closing_brace(source: str, opening: int) -> int:
    depth, index = 0, opening
    while index < len(source):
        two = source[index : index + 2]
        if two in ("/*", "//"):
            close = "*/" if two == "/*" else "\n"
            found = source.find(close, index + 2)
            index = len(source) if found < 0 else found + len(close)
            continue
        char = source[index]
        if char in "\"'":
            index = _literal_end(source, index)
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth == 0:
            return index
        index += 1
    return len(source) - 1


def _literal_end(source: str, start: int) -> int:
    quote, index = source[start], start + 1
    while index < len(source) and source[index] not in (quote, "\n"):
        index += 2 if source[index] == "\\" else 1
    return index + 1


def case_functions(
    toolchain: Toolchain,
    case: JulietCase,
    split: str,
    support_dir: Path,
    store: EvaluationStore | None = None,
    *,
    support_key: str | None = None,
) -> list[JulietFunction]:
    """The case's labeled functions in name order, compiled and neutralized; cached in the store's artifacts."""
    key = (case.digest, toolchain.identity, support_key or support_digest(support_dir), VERSION)
    cached = store.get_artifact(ARTIFACT_KIND, *key) if store is not None else None
    if cached is not None:
        rows = json.loads(cached)
    else:
        rows = _compile_case(toolchain, case, support_dir)
        if store is not None:
            store.put_artifact(ARTIFACT_KIND, json.dumps(rows).encode(), *key)
    return [
        JulietFunction(
            case=case.id,
            family=case.family,
            cwe=case.cwe,
            split=split,
            name=row["name"],
            label=case.functions[row["name"]],
            bitcode=base64.b64decode(row["bitcode"]),
            file=row["file"],
            first_line=row["first_line"],
            last_line=row["last_line"],
        )
        for row in rows
    ]


def _compile_case(toolchain: Toolchain, case: JulietCase, support_dir: Path) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="stitchopt-juliet-") as scratch:
        parts = []
        for name, source in sorted(case.files.items()):
            path = Path(scratch) / name
            path.write_text(source, encoding="utf-8")
            parts.append(compile_source(toolchain, path, extra_args=(*FRONTEND_ARGS, f"-I{support_dir}")))
        linked = parts[0] if len(parts) == 1 else _link(toolchain, parts, Path(scratch), case.id)
    defined = symbols(toolchain, linked, case.id).defined

    def renamed(symbol: str) -> bool:  # the case's own symbols, and any library one whose name gives a label away
        return symbol in defined or _LABEL_WORD_RE.search(symbol) is not None

    rows = []
    for name in sorted(case.functions):
        if name not in defined:
            raise InputError(f"{case.id}: labeled function {name} is not defined after linking the case's files")
        file, first, last = _where(case, name)
        neutral = neutral_function(toolchain, linked, name, renamed)
        if case.family.lower() in neutral.lower() or _LABEL_WORD_RE.search(neutral):
            raise InputError(f"{case.id}: {name} still names its case or label after renaming; report this case")
        bitcode = run_llvm(toolchain, ["llvm-as", "-", "-o", "-"], neutral.encode(), case.id)
        rows.append(
            {
                "name": name,
                "bitcode": base64.b64encode(bitcode).decode(),
                "file": file,
                "first_line": first,
                "last_line": last,
            }
        )
    return rows


def _where(case: JulietCase, name: str) -> tuple[str, int, int]:
    for file, source in sorted(case.files.items()):
        lines = function_lines(source, name)
        if lines is not None:
            return file, *lines
    raise InputError(f"{case.id}: no definition of {name} found in its files")


def _link(toolchain: Toolchain, parts: list[bytes], scratch: Path, what: str) -> bytes:
    paths = []
    for index, part in enumerate(parts):
        path = scratch / f"part{index}.bc"
        path.write_bytes(part)
        paths.append(str(path))
    return run_llvm(toolchain, ["llvm-link", *paths, "-o", "-"], None, what)


def juliet_functions(
    toolchain: Toolchain,
    cases: Sequence[JulietCase],
    splits: Mapping[str, str],
    support_dir: Path,
    store: EvaluationStore | None = None,
    jobs: int = 1,
) -> list[JulietFunction]:
    """Every case's labeled functions, cases compiled `jobs` at a time, in case order; `splits` maps family ->
    split (family_splits)."""
    support_key = support_digest(support_dir)

    def one(case: JulietCase) -> list[JulietFunction]:
        return case_functions(toolchain, case, splits[case.family], support_dir, store, support_key=support_key)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return [function for functions in pool.map(one, cases) for function in functions]
