"""One function of a module alone, with nothing that names the program it came from.

A detector must learn what code does, not what it is called: the function is cut out with `llvm-extract`, and
the symbols the caller calls the program's own are renamed by first use, made uniformly `dso_local` external,
and their declarations sorted (see `neutralize`). Library symbols (malloc, printf) keep their names. The same
cut serves the Juliet training data (`datasets.juliet`) and a user's code (`stitchopt security check`), so a
model sees both alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import FRONTEND_TIMEOUT_S
from stitchopt.toolchain.process import run_tool

_NAME = r'(?:"(?:[^"\\]|\\.)*"|[-\w$.]+)'
_SYMBOL_RE = re.compile(rf"@({_NAME})")
_TYPE_DEF_RE = re.compile(rf"^%({_NAME}) = type ", re.M)
_LOCAL_RE = re.compile(rf"%({_NAME})")
_METADATA_STRING_RE = re.compile(r'!"((?:[^"\\]|\\.)*)"')
_HIDING_WORDS_RE = re.compile(r"\b(?:private|internal|hidden|protected|dso_local|dso_preemptable) ")
_PRINT_CALL_RE = re.compile(r"call void @print\w*Line\(")
_ARRAY_TYPE_RE = re.compile(r"\[\d+ x (i8|i32)\]")


def neutral_function(toolchain: Toolchain, bitcode: bytes, function: str, renamed: Callable[[str], bool]) -> str:
    """`function` of the module `bitcode` alone, neutralized, as text (`llvm-as` it for bitcode)."""
    text = run_llvm(toolchain, ["llvm-extract", "-S", f"--func={function}", "-", "-o", "-"], bitcode, function)
    return neutralize(text.decode(errors="replace"), function, renamed)


def run_llvm(toolchain: Toolchain, argv: list[str], stdin: bytes | None, what: str) -> bytes:
    """A tool's stdout; InputError with its first error line when it fails."""
    run = run_tool([toolchain.tool(argv[0]), *argv[1:]], stdin=stdin, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0 or run.timed_out:
        detail = "timed out" if run.timed_out else first_error(run.stderr_text)
        raise InputError(f"{what}: {argv[0]} failed: {detail}")
    return run.stdout


def neutralize(text: str, function: str, renamed: Callable[[str], bool]) -> str:
    """`llvm-extract -S` text of `function` with the symbols `renamed` says are the program's own renamed.

    Case symbols get names by first use (the function itself is `f0`), so a name tells nothing about where the
    function sat in its file; declarations are sorted by their new names for the same reason. Linkage and
    visibility become `dso_local` external for every case symbol. A string used only as a `print*Line`
    message becomes `[1 x T]`: its contents are already gone (llvm-extract keeps declarations) and its length
    would still tell a good function's "fixed" message from a bad one's. Named types and metadata strings
    that name them are renamed too (TBAA names struct types).
    """
    header, types, globals_, declarations, body, tail = _parts(text)
    defined_functions = {_unquote(m.group(1)) for m in _SYMBOL_RE.finditer("\n".join(declarations))} | {function}

    renames: dict[str, str] = {}
    for match in _SYMBOL_RE.finditer("\n".join([*body, *globals_, *declarations])):
        name = _unquote(match.group(1))
        if name not in renames and renamed(name):
            prefix = "f" if name in defined_functions else "g"
            renames[name] = f"{prefix}{sum(new.startswith(prefix) for new in renames.values())}"
    messages = {name for name in renames if _only_printed(name, body)}
    type_names = {_unquote(m.group(1)): f"t{index}" for index, m in enumerate(_TYPE_DEF_RE.finditer("\n".join(types)))}

    def symbol(match: re.Match[str]) -> str:
        name = _unquote(match.group(1))
        return f"@{renames.get(name, match.group(1))}"

    def local(match: re.Match[str]) -> str:
        name = _unquote(match.group(1))
        return f"%{type_names[name]}" if name in type_names else match.group(0)

    def rewrite(line: str) -> str:
        return _LOCAL_RE.sub(local, _SYMBOL_RE.sub(symbol, line))

    def uniform(line: str) -> str:
        name = _SYMBOL_RE.search(line)
        if name is None or _unquote(name.group(1)) not in renames:
            return rewrite(line)
        if _unquote(name.group(1)) in messages:
            line = _ARRAY_TYPE_RE.sub(r"[1 x \1]", line, count=1)
        if line.startswith(("define ", "declare ")):
            keyword, rest = line.split(" ", 1)
            return rewrite(f"{keyword} dso_local {_HIDING_WORDS_RE.sub('', rest)}")
        left, right = line.split(" = ", 1)
        right = _HIDING_WORDS_RE.sub("", right)
        right = right.replace("external ", "external dso_local ", 1) if right.startswith("external ") else right
        return rewrite(f"{left} = {right}")

    tags = {name.split(".", 1)[-1]: new for name, new in type_names.items()}
    new_tail = [_METADATA_STRING_RE.sub(lambda m: f'!"{tags.get(m.group(1), m.group(1))}"', line) for line in tail]
    lines = [
        *header,
        *(rewrite(line) for line in types),
        *sorted(uniform(line) for line in globals_),
        *sorted(uniform(line) for line in declarations),
        uniform(body[0]),
        *(rewrite(line) for line in body[1:]),
        *new_tail,
    ]
    return "\n".join(lines) + "\n"


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _parts(text: str) -> tuple[list[str], list[str], list[str], list[str], list[str], list[str]]:
    """Header (target lines), named types, globals, declarations, the one definition, attributes/metadata."""
    header: list[str] = []
    types: list[str] = []
    globals_: list[str] = []
    declarations: list[str] = []
    body: list[str] = []
    tail: list[str] = []
    inside = False
    for line in text.splitlines():
        if inside:
            body.append(line)
            inside = line != "}"
        elif not line.strip() or line.startswith((";", "source_filename")):
            continue
        elif line.startswith("define "):
            body.append(line)
            inside = not line.rstrip().endswith("}")
        elif line.startswith("declare "):
            declarations.append(line)
        elif line.startswith("@"):
            globals_.append(line)
        elif line.startswith("%"):
            types.append(line)
        elif line.startswith("target "):
            header.append(line)
        else:
            tail.append(line)
    return header, types, globals_, declarations, body, tail


def _only_printed(name: str, body: list[str]) -> bool:
    """Whether every use of global `name` in the function is a message to one of the suite's print functions."""
    pattern = re.compile(rf"@{re.escape(name)}\b(?![-\w$.])")
    uses = [line for line in body[1:] if pattern.search(line)]
    return bool(uses) and all(_PRINT_CALL_RE.search(line) for line in uses)
