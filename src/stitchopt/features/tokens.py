"""Normalized IR token sequences for a small neural encoder, with a vocabulary that needs no fitted files.

Normalization keeps what the code does and drops what only names or annotates it:
- dropped: comments, metadata (`!dbg !7`, `!tbaa`, metadata lines), attribute groups (`#0` and the
  `attributes #0 = {...}` lines), debug records (`#dbg_value`), `source_filename`, `target ...` lines;
- local values and block names (`%x`, `%12`, `%"a b"`) -> `<local>`; block labels `x:` -> `<label>`;
  globals, functions and comdats (`@f`, `$f`) -> `<global>`; named types (`%struct.S`) -> `<named_type>`;
- integers -> `<int0>`, `<int1>`, `<int-1>`, `<int_small>` (|v| <= 256) or `<int_large>`; floats -> `<float>`;
  strings (`c"..."`, asm text, section names) -> `<string>`; integer types other than `VOCABULARY`'s -> `<int_type>`;
- opcodes, types, predicates, flags, keywords and punctuation stay as themselves.

Ids: `VOCABULARY[i]` has id i (0 is `<pad>`); any other word (an uncommon attribute, a calling convention)
gets `len(VOCABULARY) + crc32(word) % hash_buckets`, stable across runs and machines. Sequences longer than
`max_tokens` keep their head (module header, globals, the first functions) and drop the rest.
"""

from __future__ import annotations

import re
import zlib

import numpy as np

from stitchopt.features.base import IntSequence
from stitchopt.features.irtext import NAMED_TYPE_DEF_RE, OPCODES
from stitchopt.features.module import FeatureModule

SPECIAL_TOKENS = (
    "<pad>",
    "<local>",
    "<global>",
    "<label>",
    "<named_type>",
    "<int0>",
    "<int1>",
    "<int-1>",
    "<int_small>",
    "<int_large>",
    "<float>",
    "<string>",
    "<int_type>",
)
TYPE_TOKENS = (
    "void",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "half",
    "bfloat",
    "float",
    "double",
    "x86_fp80",
    "fp128",
    "ppc_fp128",
    "x86_amx",
    "ptr",
    "label",
    "token",
    "metadata",
    "opaque",
    "x",
    "vscale",
    "target",
)
KEYWORDS = (
    # module structure, linkage and visibility
    "define",
    "declare",
    "global",
    "constant",
    "type",
    "alias",
    "ifunc",
    "comdat",
    "section",
    "align",
    "addrspace",
    "private",
    "internal",
    "external",
    "extern_weak",
    "weak",
    "weak_odr",
    "linkonce",
    "linkonce_odr",
    "common",
    "appending",
    "available_externally",
    "dso_local",
    "dso_preemptable",
    "hidden",
    "protected",
    "default",
    "unnamed_addr",
    "local_unnamed_addr",
    "thread_local",
    "externally_initialized",
    "personality",
    "gc",
    # instruction words
    "tail",
    "musttail",
    "notail",
    "to",
    "unwind",
    "within",
    "caller",
    "from",
    "cleanup",
    "catch",
    "filter",
    "asm",
    "sideeffect",
    "inteldialect",
    "none",
    # comparison predicates
    "eq",
    "ne",
    "ugt",
    "uge",
    "ult",
    "ule",
    "sgt",
    "sge",
    "slt",
    "sle",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "une",
    "uno",
    "true",
    "false",
    # integer, GEP and fast-math flags
    "nuw",
    "nsw",
    "exact",
    "disjoint",
    "nneg",
    "inbounds",
    "nusw",
    "inrange",
    "nnan",
    "ninf",
    "nsz",
    "arcp",
    "contract",
    "afn",
    "reassoc",
    "fast",
    # memory ordering and atomicrmw operations
    "volatile",
    "atomic",
    "unordered",
    "monotonic",
    "acquire",
    "release",
    "acq_rel",
    "seq_cst",
    "syncscope",
    "xchg",
    "nand",
    "max",
    "min",
    "umax",
    "umin",
    "fmax",
    "fmin",
    "uinc_wrap",
    "udec_wrap",
    # constants
    "null",
    "undef",
    "poison",
    "zeroinitializer",
    "blockaddress",
    "dso_local_equivalent",
    "no_cfi",
    "splat",
    # common parameter and return attributes, calling conventions
    "noundef",
    "zeroext",
    "signext",
    "inreg",
    "byval",
    "sret",
    "noalias",
    "nocapture",
    "nonnull",
    "readonly",
    "writeonly",
    "readnone",
    "returned",
    "immarg",
    "dereferenceable",
    "dereferenceable_or_null",
    "range",
    "fastcc",
    "coldcc",
    "ccc",
    "tailcc",
    "swiftcc",
    "cc",
)
PUNCTUATION = ("=", ",", "(", ")", "[", "]", "{", "}", "<", ">", "*", "...", ":")
VOCABULARY = tuple(dict.fromkeys((*SPECIAL_TOKENS, *OPCODES, *TYPE_TOKENS, *KEYWORDS, *PUNCTUATION)))
DEFAULT_MAX_TOKENS = 4096
DEFAULT_HASH_BUCKETS = 1024
SMALL_INT_LIMIT = 256

_TOKEN_RE = re.compile(
    r'c?"(?:[^"\\]|\\.)*"'  # a string
    r"|;.*"  # a comment (strings are matched first, so a `;` inside one is not)
    r'|[%@$!#](?:"(?:[^"\\]|\\.)*"|[-\w$.]*)'  # a local, global, metadata or attribute-group reference
    r"|0x[KLMHR]?[0-9A-Fa-f]+|-?\d+\.\d+(?:e[-+]?\d+)?"  # a float
    r"|-?\d+|\.\.\.|[A-Za-z_][\w.]*|[=,()\[\]{}<>*:]"
)
_LABEL_RE = re.compile(r'(?:"(?:[^"\\]|\\.)*"|[-\w$.]+):')
_INT_TYPE_RE = re.compile(r"i\d+\Z")
_SKIPPED_LINE_PREFIXES = ("!", "attributes ", "source_filename", "target ", ";", "uselistorder")


def normalize(text: str, limit: int | None = None) -> list[str]:
    """The normalized tokens of a module's `llvm-dis` text, at most `limit` of them."""
    tokens: list[str] = []
    named_types: set[str] = set()
    for line in text.splitlines():
        if limit is not None and len(tokens) >= limit:
            break
        stripped = line.lstrip()
        if not stripped or stripped.startswith(_SKIPPED_LINE_PREFIXES) or stripped.startswith("#dbg_"):
            continue
        label = _LABEL_RE.match(line) if line[0] != " " else None
        if label is not None and line[label.end() :].lstrip()[:1] in ("", ";"):
            tokens.append("<label>")
            continue
        if (definition := NAMED_TYPE_DEF_RE.match(line)) is not None:
            named_types.add(definition.group(1))
        for raw in _TOKEN_RE.findall(line):
            token = _normalize_token(raw, named_types)
            if token:
                tokens.append(token)
            elif raw[0] == "!" and tokens[-1:] == [","]:  # `, !tbaa !5`: drop the comma with the attachment
                tokens.pop()
    return tokens if limit is None else tokens[:limit]


def _normalize_token(raw: str, named_types: set[str]) -> str:
    """One raw token's normalized spelling; "" for a token that is dropped."""
    first = raw[0]
    if first == "%":
        return "<named_type>" if raw in named_types else "<local>"
    if first in "@$":  # a global, function or comdat
        return "<global>"
    if first in "!#;":
        return ""
    if first == '"' or raw.startswith('c"'):
        return "<string>"
    if first.isdigit() or first == "-":
        if "." in raw or raw.startswith("0x"):
            return "<float>"
        value = int(raw)
        if -1 <= value <= 1:
            return ("<int-1>", "<int0>", "<int1>")[value + 1]
        return "<int_small>" if abs(value) <= SMALL_INT_LIMIT else "<int_large>"
    if _INT_TYPE_RE.match(raw) and raw not in TYPE_TOKENS:
        return "<int_type>"
    return raw


class IRTokens:
    """Normalized IR tokens as int32 ids, for a sequence encoder; parameters are part of `name` (the cache key)."""

    version = 1

    def __init__(self, max_tokens: int = DEFAULT_MAX_TOKENS, hash_buckets: int = DEFAULT_HASH_BUCKETS) -> None:
        if max_tokens < 1 or hash_buckets < 1:
            raise ValueError("max_tokens and hash_buckets must be at least 1")
        self.max_tokens = max_tokens
        self.hash_buckets = hash_buckets
        self.name = f"ir_tokens-{max_tokens}-{hash_buckets}"
        self._ids = {token: index for index, token in enumerate(VOCABULARY)}

    @property
    def vocabulary_size(self) -> int:
        return len(VOCABULARY) + self.hash_buckets

    def token_id(self, token: str) -> int:
        known = self._ids.get(token)
        if known is not None:
            return known
        return len(VOCABULARY) + zlib.crc32(token.encode()) % self.hash_buckets

    def encode(self, module: FeatureModule) -> IntSequence:
        tokens = normalize(module.text, self.max_tokens)
        return np.fromiter((self.token_id(token) for token in tokens), dtype=np.int32, count=len(tokens))
