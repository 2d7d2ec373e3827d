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

# `.offload_mapnames` (written with debug info): each item's source text, as `;row_ptr[0:rows + 1];file;line;col;;`.
_MAP_NAME_RE = re.compile(r'^@([-\w.$]+) = private unnamed_addr constant \[\d+ x i8\] c";([^;]*);', re.MULTILINE)
_MAP_NAMES_RE = re.compile(r"^@(\.offload_mapnames[\w.]*) = private constant \[\d+ x ptr\] \[([^\]]*)\]", re.MULTILINE)
# A maptypes array stored into a launch's arguments, the launch (its ident), or a data call passing one directly.
_MAPTYPES_USE_RE = re.compile(
    r"store ptr @(\.offload_maptypes[\w.]*),|"
    r"call i32 @__tgt_target_kernel\(ptr @([-\w.$]+),|"
    r"call void @__tgt_target_data_(begin|end|update)(?:_nowait)?_mapper\(ptr @([-\w.$]+), [^\n]*?"
    r"ptr @(\.offload_maptypes[\w.]*),"
)
# What a launch's kernel-arguments struct is given, and the launch (`__tgt_target_kernel`) it is given to.
_LAUNCH_PART_RE = re.compile(
    r"store ptr @(\.offload_(?:maptypes|mapnames)[\w.]*),|"
    r"call i32 @__tgt_target_kernel\([^\n]*?ptr @\.(__omp_offloading_[\w.$]+)\.region_id"
)


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
    """Every construct of host IR that maps data, in the order clang wrote them. A maptypes array is paired
    with the sizes array clang wrote just before it (same length); without one, sizes are unknown."""
    arrays: list[tuple[str, list[int]]] = []
    for match in _ARRAY_RE.finditer(ir_text):
        entries = match.group(3)
        values = [int(value.split()[-1]) for value in entries.split(",")] if entries else [0] * int(match.group(2))
        arrays.append((match.group(1), values))
    constructs = []
    for index, (name, values) in enumerate(arrays):
        if not name.startswith(".offload_maptypes"):
            continue
        previous = arrays[index - 1] if index else None
        sizes = previous[1] if previous and previous[0].startswith(".offload_sizes") else [0] * len(values)
        if len(sizes) != len(values):
            sizes = [0] * len(values)
        items = tuple(MappedItem(f, s) for f, s in zip(values, sizes, strict=True))
        kind, line = _construct_kind_and_line(ir_text, name)
        constructs.append(OffloadConstruct(name, items, kind, line))
    return constructs


_KINDS = {
    frozenset({"kernel"}): "target",
    frozenset({"begin", "end"}): "target data",
    frozenset({"begin"}): "target enter data",
    frozenset({"end"}): "target exit data",
    frozenset({"update"}): "target update",
}


def _construct_kind_and_line(ir_text: str, maptypes: str) -> tuple[str, int]:
    """Which runtime calls take a maptypes array (a data call as an argument; a kernel launch through its
    arguments struct, stored just before the call) and the first source line their `ident_t`s give."""
    calls: set[str] = set()
    lines: list[int] = []
    pending = False
    for match in _MAPTYPES_USE_RE.finditer(ir_text):
        stored, launch_ident, call, call_ident, passed = match.groups()
        if stored is not None:
            pending = stored == maptypes
        elif launch_ident is not None and pending:
            calls.add("kernel")
            lines.append(_ident_line(ir_text, launch_ident))
            pending = False
        elif call is not None and passed == maptypes:
            calls.add(call)
            lines.append(_ident_line(ir_text, call_ident))
    found = [line for line in lines if line > 0]
    return _KINDS.get(frozenset(calls), ""), min(found, default=0)


def _ident_line(ir_text: str, ident: str) -> int:
    """The line of an OpenMP `ident_t` (`;file;function;line;column;;`; 0 where clang wrote `unknown`)."""
    struct = re.search(rf"^@{re.escape(ident)} = [^\n]*%struct\.ident_t \{{[^}}]*ptr @([-\w.$]+) \}}", ir_text, re.M)
    if struct is None:
        return 0
    text = re.search(rf'^@{re.escape(struct.group(1))} = [^\n]*c";[^;]*;[^;]*;(\d+);', ir_text, re.M)
    return int(text.group(1)) if text else 0


def region_parameters(ir_text: str) -> dict[str, list[str]]:
    """Each target region's kernel parameters after the runtime's launch environment, named as its map clauses
    write them (`row_ptr[0:rows + 1]`; a variable the region captures by value, by its name): the map items of
    its launch that are kernel parameters (TARGET_PARAM), in order. Read from unoptimized host IR compiled with
    debug info (clang writes `.offload_mapnames` only then), where a launch's map arrays are stored into its
    arguments just before the call; by region name (`__omp_offloading_<file ids>_<function>_l<line>`)."""
    strings = dict(_MAP_NAME_RE.findall(ir_text))
    names = {
        array: [strings.get(item.split()[-1].lstrip("@"), "") for item in entries.split(",")]
        for array, entries in _MAP_NAMES_RE.findall(ir_text)
    }
    flags = {construct.name: [item.flags for item in construct.items] for construct in offload_constructs(ir_text)}
    parameters: dict[str, list[str]] = {}
    stored: dict[str, str] = {}
    for match in _LAUNCH_PART_RE.finditer(ir_text):
        if match.group(1):
            stored["maptypes" if "maptypes" in match.group(1) else "mapnames"] = match.group(1)
        else:  # a launch: the arrays stored since the last one are its own (none: it maps nothing)
            types, named = flags.get(stored.get("maptypes", ""), []), names.get(stored.get("mapnames", ""), [])
            if len(types) == len(named):
                parameters[match.group(2)] = [
                    name for flag, name in zip(types, named, strict=True) if flag & MAP_TARGET_PARAM
                ]
            stored.clear()
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
