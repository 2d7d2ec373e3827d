"""OpenMP target offload seen from the host: the data each offload construct moves between host and device,
read statically from the host IR that clang writes for `#pragma omp target` and its `map` clauses.

clang lowers every construct that maps data (a target region, `target data`, `target enter/exit data`,
`target update`) to runtime calls (`__tgt_target_kernel`, `__tgt_target_data_{begin,end,update}_mapper`) that
take two constant arrays: `.offload_maptypes*` (per mapped item, OpenMP's map-type bits: to, from, private,
by value, ...) and `.offload_sizes*` (its bytes when known at compile time, else 0 and computed at run time).
Reading those arrays counts the items each construct maps to and from the device; their bytes are known
statically when the size is constant. They are read from the front end's IR, where clang writes each sizes
array just before its maptypes array (optimization merges equal arrays and loses that pairing; LLVM 19's passes
do not change map lists). An upper bound on copies: an item already on the device (inside a `target data`
region) is not copied again, and how often a construct runs (inside a loop) needs a run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.device import check_arch
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import C_SUFFIXES, CXX_SUFFIXES
from stitchopt.toolchain.llvm import frontend_command
from stitchopt.toolchain.process import run_tool

# OpenMP's map-type bits (llvm/Frontend/OpenMP/OMPConstants.h, OpenMPOffloadMappingFlags).
MAP_TO = 0x01
MAP_FROM = 0x02
MAP_PRIVATE = 0x80
MAP_TARGET_PARAM = 0x20  # the item is one of the kernel's parameters
MAP_LITERAL = 0x100  # passed by value: no copy
FRONTEND_TIMEOUT_S = 300.0
DIRECTIONS = ("to_device", "from_device")
# A map or sizes array: its entries, or `zeroinitializer` (all 0: e.g. the map types of `map(alloc:)`).
_ARRAY_RE = re.compile(
    r"^@(\.offload_(?:maptypes|sizes)[\w.]*) = [^\[]*\[(\d+) x i64\] (?:\[([^\]]*)\]|zeroinitializer)", re.MULTILINE
)

# A C string clang writes for OpenMP: a map item's name (`;row_ptr[0:rows + 1];file;line;col;;`, in
# `.offload_mapnames`, with debug info) or a source location (`;file;function;line;col;;`, an `ident_t`'s).
_OMP_STRING_RE = re.compile(r'^@([-\w.$]+) = private unnamed_addr constant \[\d+ x i8\] c"(;[^"]*)"', re.MULTILINE)
_IDENT_RE = re.compile(r"^@([-\w.$]+) = [^\n]*%struct\.ident_t \{[^}]*ptr @([-\w.$]+) \}", re.MULTILINE)
_MAP_NAMES_RE = re.compile(r"^@(\.offload_mapnames[\w.]*) = private constant \[\d+ x ptr\] \[([^\]]*)\]", re.MULTILINE)
# The runtime calls that take map lists: a launch (its arrays stored into its arguments just before it), or a
# data call passing its maptypes array directly; each with its `ident_t`.
_CALL_RE = re.compile(
    r"store ptr @(\.offload_(?:maptypes|mapnames)[\w.]*),|"
    r"call i32 @__tgt_target_kernel\(ptr @([-\w.$]+),[^\n]*?ptr @\.(__omp_offloading_[\w.$]+)\.region_id|"
    r"call void @__tgt_target_data_(begin|end|update)(?:_nowait)?_mapper\(ptr @([-\w.$]+), [^\n]*?"
    r"ptr @(\.offload_maptypes[\w.]*),"
)


@dataclass(frozen=True)
class _RuntimeCall:
    kind: str  # "kernel", or the data call's "begin", "end" or "update"
    line: int  # from its ident_t (0: clang wrote `unknown`, as without debug information)
    maptypes: str  # its maptypes array ("": a launch that maps nothing)
    mapnames: str = ""  # a launch's mapnames array (with debug information)
    region: str = ""  # a launch's region, `__omp_offloading_<file ids>_<function>_l<line>`


def _runtime_calls(ir_text: str) -> list[_RuntimeCall]:
    """The runtime calls of unoptimized host IR that take map lists, in order."""
    strings = {name: text.split(";") for name, text in _OMP_STRING_RE.findall(ir_text)}
    lines = {
        ident: int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else 0
        for ident, text in _IDENT_RE.findall(ir_text)
        if (parts := strings.get(text, []))
    }
    calls = []
    stored: dict[str, str] = {}
    for match in _CALL_RE.finditer(ir_text):
        array, launch_ident, region, data_call, data_ident, maptypes = match.groups()
        if array is not None:
            stored["maptypes" if array.startswith(".offload_maptypes") else "mapnames"] = array
        elif region is not None:  # the arrays stored since the last launch are this one's (none: it maps nothing)
            line = lines.get(launch_ident, 0)
            calls.append(_RuntimeCall("kernel", line, stored.get("maptypes", ""), stored.get("mapnames", ""), region))
            stored.clear()
        else:
            calls.append(_RuntimeCall(data_call, lines.get(data_ident, 0), maptypes))
    return calls


@dataclass(frozen=True)
class MappedItem:
    flags: int
    size: int  # bytes, 0 when only known at run time

    @property
    def copied(self) -> bool:
        return not self.flags & (MAP_PRIVATE | MAP_LITERAL)

    @property
    def to_device(self) -> bool:
        return self.copied and bool(self.flags & MAP_TO)

    @property
    def from_device(self) -> bool:
        return self.copied and bool(self.flags & MAP_FROM)


@dataclass(frozen=True)
class OffloadConstruct:
    """One construct's map list (its `.offload_maptypes` array), what construct it is (`target`, `target data`,
    `target enter data`, `target exit data`, `target update`; "" when no runtime call names it) and its source
    line (0 without debug information)."""

    name: str
    items: tuple[MappedItem, ...]
    kind: str = ""
    line: int = 0

    def count(self, direction: str) -> int:
        return sum(getattr(item, direction) for item in self.items)

    def static_bytes(self, direction: str) -> int:
        """Bytes of the items copied in `direction` whose size is a compile-time constant."""
        return sum(item.size for item in self.items if getattr(item, direction))

    def dynamic(self, direction: str) -> int:
        """Items copied in `direction` whose size only the run knows."""
        return sum(1 for item in self.items if getattr(item, direction) and item.size == 0)


def offload_constructs(ir_text: str) -> list[OffloadConstruct]:
    """Every construct of host IR that maps data, in the order clang wrote them, with its kind and first line as
    the runtime calls that take its map list give them. A maptypes array is paired with the sizes array clang
    wrote just before it (same length); without one, sizes are unknown."""
    arrays = _arrays(ir_text)
    calls = _runtime_calls(ir_text)
    constructs = []
    for index, (name, values) in enumerate(arrays):
        if not name.startswith(".offload_maptypes"):
            continue
        previous = arrays[index - 1] if index else None
        sizes = previous[1] if previous and previous[0].startswith(".offload_sizes") else [0] * len(values)
        if len(sizes) != len(values):
            sizes = [0] * len(values)
        items = tuple(MappedItem(f, s) for f, s in zip(values, sizes, strict=True))
        mine = [call for call in calls if call.maptypes == name]
        kind = _KINDS.get(frozenset(call.kind for call in mine), "")
        line = min((call.line for call in mine if call.line > 0), default=0)
        constructs.append(OffloadConstruct(name, items, kind, line))
    return constructs


def _arrays(ir_text: str) -> list[tuple[str, list[int]]]:
    """The maptypes and sizes arrays, by name, in the order clang wrote them."""
    arrays = []
    for match in _ARRAY_RE.finditer(ir_text):
        entries = match.group(3)
        values = [int(value.split()[-1]) for value in entries.split(",")] if entries else [0] * int(match.group(2))
        arrays.append((match.group(1), values))
    return arrays


_KINDS = {
    frozenset({"kernel"}): "target",
    frozenset({"begin", "end"}): "target data",
    frozenset({"begin"}): "target enter data",
    frozenset({"end"}): "target exit data",
    frozenset({"update"}): "target update",
}


def region_parameters(ir_text: str) -> dict[str, list[str]]:
    """Each target region's kernel parameters after the runtime's launch environment, named as its map clauses
    write them (`row_ptr[0:rows + 1]`; a variable the region captures by value, by its name): the map items of
    its launch that are kernel parameters (TARGET_PARAM), in order. Read from unoptimized host IR compiled with
    debug info (clang writes `.offload_mapnames` only then); by region name
    (`__omp_offloading_<file ids>_<function>_l<line>`)."""
    strings = {name: text.split(";") for name, text in _OMP_STRING_RE.findall(ir_text)}
    names = {
        array: [strings.get(item.split()[-1].lstrip("@"), ["", ""])[1] for item in entries.split(",")]
        for array, entries in _MAP_NAMES_RE.findall(ir_text)
    }
    flags = dict(_arrays(ir_text))
    parameters: dict[str, list[str]] = {}
    for call in _runtime_calls(ir_text):
        types, named = flags.get(call.maptypes, []), names.get(call.mapnames, [])
        if call.kind == "kernel" and len(types) == len(named):
            parameters[call.region] = [name for flag, name in zip(types, named, strict=True) if flag & MAP_TARGET_PARAM]
    return parameters


def openmp_host_ir(toolchain: Toolchain, source: Path, arch: str, extra_args: list[str] | None = None) -> bytes:
    """Unoptimized host bitcode of a C/C++ file with OpenMP target regions offloaded to `arch` (clang `-O3`'s
    front end, no LLVM passes)."""
    offload = ["-fopenmp", f"--offload-arch={check_arch(arch)}", "--offload-host-only"]
    return openmp_front_end(toolchain, source, offload, extra_args or [])


def openmp_front_end(
    toolchain: Toolchain, source: Path, offload_flags: Sequence[str], extra_args: Sequence[str]
) -> bytes:
    """Unoptimized host bitcode of a C/C++ file with OpenMP target regions, clang `-O3`'s front end with
    `offload_flags` (which device, what of it to embed); InputError for a file clang cannot compile so."""
    if not source.is_file():
        raise InputError(f"{source}: no such file")
    if source.suffix not in C_SUFFIXES | CXX_SUFFIXES:
        raise InputError(f"{source}: not C or C++ with OpenMP target regions (CUDA files: `stitchopt gpu measure`)")
    driver = [toolchain.tool("clang"), *offload_flags]
    argv = frontend_command(driver, "O3", flags=list(extra_args), args=[str(source), "-o", "-"])
    run = run_tool(argv, timeout=FRONTEND_TIMEOUT_S)
    if run.returncode != 0:
        raise InputError(f"{source}: clang cannot compile it with OpenMP offload: {first_error(run.stderr_text)}")
    return run.stdout
