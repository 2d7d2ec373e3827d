"""ctypes binding of the native evaluator (`evaluator.cpp`), built by the package's setup.py when libLLVM's
development files are present. A C ABI through ctypes needs no binding library at build time and keeps the
extension a plain shared object that only worker processes load.
"""

from __future__ import annotations

import ctypes
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from stitchopt.core import CompileOptions

EXTENSION_MODULE = "stitchopt.evaluation.native._evaluator"
SO_OK, SO_COMPILE_ERROR, SO_CRASH, SO_SIGNAL = 0, 1, 2, 3  # SO_SIGNAL: recovered, but the process is suspect


class _OptResult(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("instruction_count", ctypes.c_longlong), ("opt_seconds", ctypes.c_double)]


class _CodegenResult(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("codegen_seconds", ctypes.c_double)]


@dataclass(frozen=True)
class NativeOptimized:
    status: int
    instruction_count: int
    opt_seconds: float
    bitcode: bytes
    error: str


@dataclass(frozen=True)
class NativeObject:
    status: int
    codegen_seconds: float
    object: bytes
    error: str


def built_library() -> Path | None:
    """Where the built extension is, without importing it (it has no Python module init)."""
    spec = importlib.util.find_spec(EXTENSION_MODULE)
    return Path(spec.origin) if spec is not None and spec.origin else None


class NativeLibrary:
    """One loaded evaluator. Not thread-safe: LLVM's option registry is process-global, so one per process."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        lib.so_llvm_version.restype = ctypes.c_char_p
        lib.so_llvm_bindir.restype = ctypes.c_char_p
        lib.so_optimize.restype = ctypes.c_void_p
        lib.so_optimize.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(_OptResult),
        ]
        lib.so_codegen.argtypes = [ctypes.c_void_p, ctypes.POINTER(_CodegenResult)]
        for getter in (lib.so_bitcode, lib.so_object):
            getter.restype = ctypes.c_void_p
            getter.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        lib.so_error.restype = ctypes.c_char_p
        lib.so_error.argtypes = [ctypes.c_void_p]
        lib.so_free.argtypes = [ctypes.c_void_p]
        lib.so_initialize()
        self._lib = lib
        self._pending: int | None = None  # the optimized module awaiting codegen or release

    @property
    def llvm_version(self) -> str:
        return bytes(self._lib.so_llvm_version()).decode()

    @property
    def llvm_bindir(self) -> str:
        return bytes(self._lib.so_llvm_bindir()).decode()

    def optimize(self, bitcode: bytes, pipeline: str, options: CompileOptions) -> NativeOptimized:
        """Run `pipeline`; the optimized module stays loaded for `codegen()` until `release()`."""
        self.release()
        result = _OptResult()
        handle = self._lib.so_optimize(
            bitcode,
            len(bitcode),
            pipeline.encode(),
            "\n".join(options.opt_flags).encode(),
            int(options.relocation_model == "pic"),
            options.codegen_level,
            ctypes.byref(result),
        )
        self._pending = handle
        return NativeOptimized(
            status=result.status,
            instruction_count=result.instruction_count,
            opt_seconds=result.opt_seconds,
            bitcode=self._bytes(self._lib.so_bitcode, handle) if result.status == SO_OK else b"",
            error=self._error(handle),
        )

    def codegen(self) -> NativeObject:
        """Emit the object file of the module from the last `optimize()`."""
        assert self._pending is not None, "codegen() needs a preceding optimize()"
        result = _CodegenResult()
        self._lib.so_codegen(self._pending, ctypes.byref(result))
        return NativeObject(
            status=result.status,
            codegen_seconds=result.codegen_seconds,
            object=self._bytes(self._lib.so_object, self._pending) if result.status == SO_OK else b"",
            error=self._error(self._pending),
        )

    def release(self) -> None:
        if self._pending is not None:
            self._lib.so_free(self._pending)
            self._pending = None

    def _bytes(self, getter: ctypes._CFuncPtr, handle: int) -> bytes:  # type: ignore[name-defined]
        size = ctypes.c_size_t()
        address = getter(handle, ctypes.byref(size))
        return ctypes.string_at(address, size.value) if size.value else b""

    def _error(self, handle: int) -> str:
        return bytes(self._lib.so_error(handle)).decode(errors="replace")
