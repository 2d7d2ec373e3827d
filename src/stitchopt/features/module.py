"""One LLVM module as the feature extractors see it: its bytes, their hash, and its text in `llvm-dis` layout.

Text input is assembled and disassembled again rather than used as given: the parsers in this package read
the printer's layout (one instruction per line, block labels at column 0, numbered values), which hand-written
IR need not follow, and the round trip also rejects malformed IR before any representation sees it.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from stitchopt.diagnostics import first_error
from stitchopt.errors import InputError
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.process import run_tool

BITCODE_MAGIC = b"BC\xc0\xde"
WRAPPER_MAGIC = b"\xde\xc0\x17\x0b"  # the bitcode wrapper header Darwin toolchains put in front
TOOL_TIMEOUT_S = 120.0


@dataclass(frozen=True, eq=False)
class FeatureModule:
    """Bitcode or textual IR bytes; the canonical text is computed on first use, once, and kept."""

    toolchain: Toolchain = field(repr=False)
    data: bytes = field(repr=False)
    name: str = "<module>"
    _text: list[str] = field(default_factory=list, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @classmethod
    def from_bytes(cls, toolchain: Toolchain, data: bytes, name: str = "<module>") -> FeatureModule:
        return cls(toolchain, bytes(data), name)

    @classmethod
    def from_path(cls, toolchain: Toolchain, path: str | Path) -> FeatureModule:
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}; pass an existing .bc or .ll file") from exc
        return cls(toolchain, data, str(path))

    @property
    def is_bitcode(self) -> bool:
        return self.data.startswith((BITCODE_MAGIC, WRAPPER_MAGIC))

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def text(self) -> str:
        """The module as `llvm-dis` prints it; raises InputError naming the tool's first error line."""
        with self._lock:
            if not self._text:
                bitcode = self.data if self.is_bitcode else self._run("llvm-as", self.data)
                self._text.append(self._run("llvm-dis", bitcode).decode("utf-8", errors="replace"))
            return self._text[0]

    def _run(self, tool: str, data: bytes) -> bytes:
        run = run_tool([self.toolchain.tool(tool), "-", "-o", "-"], stdin=data, timeout=TOOL_TIMEOUT_S)
        if run.timed_out:
            raise InputError(f"{self.name}: {tool} timed out after {TOOL_TIMEOUT_S:.0f} s; check the module's size")
        if run.returncode != 0:
            raise InputError(
                f"{self.name} is not a valid LLVM {self.toolchain.major} module: "
                f"{first_error(run.stderr_text)}; pass bitcode or text IR that llvm-as accepts"
            )
        return run.stdout
