import struct

import pytest

from stitchopt.errors import InputError
from stitchopt.toolchain.elf import SHF_ALLOC, SHF_EXECINSTR, SHT_NOBITS, object_sizes

SHT_PROGBITS, SHT_STRTAB = 1, 3


def _elf64(sections: list[tuple[str, int, int, int]]) -> bytes:
    """A minimal little-endian ELF64 with the given (name, type, flags, size) sections plus .shstrtab."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, *_ in sections) + b".shstrtab\0"
    header_size, entry = 64, 64
    strtab_offset = header_size
    shoff = strtab_offset + len(names)
    table = [b"\0" * entry]  # the null section
    offset = 1
    for name, sh_type, flags, size in sections:
        table.append(struct.pack("<IIQQQQIIQQ", offset, sh_type, flags, 0, 0, size, 0, 0, 1, 0))
        offset += len(name) + 1
    table.append(struct.pack("<IIQQQQIIQQ", offset, SHT_STRTAB, 0, 0, strtab_offset, len(names), 0, 0, 1, 0))
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, entry, len(table), len(table) - 1
    )
    return header + names + b"".join(table)


def test_counts_allocated_file_backed_sections_only() -> None:
    data = _elf64(
        [
            (".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 100),
            (".rodata", SHT_PROGBITS, SHF_ALLOC, 30),
            (".data", SHT_PROGBITS, SHF_ALLOC | 0x1, 8),
            (".bss", SHT_NOBITS, SHF_ALLOC | 0x1, 4096),
            (".comment", SHT_PROGBITS, 0, 50),
            (".text.startup", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 20),
        ]
    )
    sizes = object_sizes(data)
    assert sizes.size_bytes == 158
    assert sizes.text_bytes == 120
    assert sizes.sections == {".text": 100, ".rodata": 30, ".data": 8, ".text.startup": 20}


def test_rejects_non_elf() -> None:
    with pytest.raises(InputError, match="not an ELF"):
        object_sizes(b"MZ\x90\x00" + b"\0" * 60)


def test_rejects_truncated_table() -> None:
    data = _elf64([(".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, 10)])
    with pytest.raises(InputError, match="truncated"):
        object_sizes(data[:-70])
