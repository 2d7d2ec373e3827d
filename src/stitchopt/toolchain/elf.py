"""Section sizes read straight from an ELF object's section headers.

We do not parse `llvm-size`: its Berkeley "text" column folds read-only data and `.eh_frame` into code.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from stitchopt.errors import InputError

SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHT_NOBITS = 8
EM_CUDA = 190  # a cubin: ptxas's output
# SASS of sm_70 and newer: 16-byte instructions, the opcode in the low 12 bits; ptxas pads every kernel to a
# 128-byte boundary with NOPs, which count neither as code nor as a list's doing.
SASS_WORD = 16
SASS_NOP = 0x918
CUBIN_PARAMETER_BANK = ".nv.constant0."


@dataclass(frozen=True)
class Section:
    name: str
    size: int  # a cubin's SASS without the NOPs that pad it
    flags: int
    type: int

    @property
    def file_backed_alloc(self) -> bool:
        """Occupies memory at run time and bytes in the file: counted in `size_bytes` (so not `.bss`)."""
        return bool(self.flags & SHF_ALLOC) and self.type != SHT_NOBITS

    @property
    def executable(self) -> bool:
        return self.file_backed_alloc and bool(self.flags & SHF_EXECINSTR)


@dataclass(frozen=True)
class ObjectSizes:
    size_bytes: int
    text_bytes: int
    sections: dict[str, int]  # every counted section, merged by name


def read_sections(data: bytes) -> list[Section]:
    """Parse the section header table of a 32- or 64-bit, little- or big-endian ELF file."""
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise InputError("not an ELF object file: codegen must emit ELF (set an ELF target triple)")
    is64 = data[4] == 2
    endian = "<" if data[5] == 1 else ">"
    try:
        (machine,) = struct.unpack_from(endian + "H", data, 0x12)
        if is64:
            (shoff,) = struct.unpack_from(endian + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x3A)
            header = endian + "IIQQQQIIQQ"
        else:
            (shoff,) = struct.unpack_from(endian + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", data, 0x2E)
            header = endian + "IIIIIIIIII"
        raw = [struct.unpack_from(header, data, shoff + i * shentsize) for i in range(shnum)]
        strtab_off, strtab_size = raw[shstrndx][4], raw[shstrndx][5]
    except (struct.error, IndexError) as exc:
        raise InputError(f"truncated or corrupt ELF section table: {exc}") from exc
    strtab = data[strtab_off : strtab_off + strtab_size]
    sections = []
    for name_off, sh_type, sh_flags, _addr, offset, sh_size, *_ in raw:
        end = strtab.find(b"\0", name_off)
        name = strtab[name_off : end if end >= 0 else None].decode("ascii", errors="replace")
        if machine == EM_CUDA and sh_flags & SHF_EXECINSTR:
            sh_size = _unpadded_sass(data[offset : offset + sh_size])
        sections.append(Section(name=name, size=sh_size, flags=sh_flags, type=sh_type))
    return sections


def _unpadded_sass(code: bytes) -> int:
    """Bytes of a kernel's SASS up to the NOPs that pad it."""
    words = len(code) // SASS_WORD
    while (
        words
        and int.from_bytes(code[(words - 1) * SASS_WORD : (words - 1) * SASS_WORD + 2], "little") & 0xFFF == SASS_NOP
    ):
        words -= 1
    return words * SASS_WORD


def object_sizes(data: bytes) -> ObjectSizes:
    """Sizes of an object file as stitchopt defines them (see `Section.file_backed_alloc`). In a cubin, each
    kernel's parameter bank (`.nv.constant0.<kernel>`: its parameters and the driver's fixed area) is not
    counted: no list can change it, and it would dilute the code's share of the size."""
    counted: dict[str, int] = {}
    size = text = 0
    cubin = len(data) >= 20 and data[0x12] == EM_CUDA and data[0x13] == 0
    for section in read_sections(data):
        if not section.file_backed_alloc or (cubin and section.name.startswith(CUBIN_PARAMETER_BANK)):
            continue
        counted[section.name] = counted.get(section.name, 0) + section.size
        size += section.size
        if section.executable:
            text += section.size
    return ObjectSizes(size_bytes=size, text_bytes=text, sections=counted)
