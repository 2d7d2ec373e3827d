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
    _fields_ = [
        ("status", ctypes.c_int),
        ("instruction_count", ctypes.c_longlong),
        ("size_estimate", ctypes.c_longlong),
        ("opt_seconds", ctypes.c_double),
        ("elements", ctypes.c_int),
        ("reused_elements", ctypes.c_int),
    ]


class _PrefixStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_longlong) for name in ("entries", "bytes", "max_bytes", "evictions")]


class _CodegenResult(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("codegen_seconds", ctypes.c_double)]


@dataclass(frozen=True)
class NativeOptimized:
    status: int
    instruction_count: int
    size_estimate: int | None  # LLVM's code-size cost of the optimized module (None without a target)
    opt_seconds: float
    bitcode: bytes
    error: str
    elements: int  # top-level pipeline elements, when the pipeline ran element by element (prefix reuse); else 0
    reused_elements: int  # of those, how many were resumed from the prefix cache


@dataclass(frozen=True)
class PrefixCacheStats:
    entries: int
    bytes: int
    max_bytes: int
    evictions: int


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
    """One loaded evaluator. Not thread-safe: LLVM's option registry is process-global, so one per process.

    With `prefix_cache_bytes`, the module states along a search's base pipeline are kept (up to that many bytes)
    and the pipelines derived from it resume from them (see evaluator.cpp)."""

    def __init__(self, path: Path, prefix_cache_bytes: int = 0) -> None:
        lib = ctypes.CDLL(str(path))
        lib.so_llvm_version.restype = ctypes.c_char_p
        lib.so_llvm_bindir.restype = ctypes.c_char_p
        lib.so_optimize.restype = ctypes.c_void_p
        lib.so_optimize.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.POINTER(_OptResult),
        ]
        lib.so_prefix_cache_new.restype = ctypes.c_void_p
        lib.so_prefix_cache_new.argtypes = [ctypes.c_size_t]
        lib.so_prefix_cache_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(_PrefixStats)]
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
        self._prefix_cache: int | None = lib.so_prefix_cache_new(prefix_cache_bytes) if prefix_cache_bytes else None

    @property
    def llvm_version(self) -> str:
        return bytes(self._lib.so_llvm_version()).decode()

    @property
    def llvm_bindir(self) -> str:
        return bytes(self._lib.so_llvm_bindir()).decode()

    def optimize(
        self, bitcode: bytes, pipeline: str, options: CompileOptions, base: str | None = None
    ) -> NativeOptimized:
        """Run `pipeline`; the optimized module stays loaded for `codegen()` until `release()`. With a prefix
        cache and a `base` (the pipeline it was derived from), it resumes from the base's recorded module states,
        recording them first if needed; otherwise it runs whole."""
        self.release()
        result = _OptResult()
        handle = self._lib.so_optimize(
            bitcode,
            len(bitcode),
            pipeline.encode(),
            base.encode() if base else None,
            "\n".join(options.opt_flags).encode(),
            int(options.relocation_model == "pic"),
            options.codegen_level,
            self._prefix_cache,
            ctypes.byref(result),
        )
        self._pending = handle
        return NativeOptimized(
            status=result.status,
            instruction_count=result.instruction_count,
            size_estimate=result.size_estimate if result.size_estimate >= 0 else None,
            opt_seconds=result.opt_seconds,
            bitcode=self._bytes(self._lib.so_bitcode, handle) if result.status == SO_OK else b"",
            error=self._error(handle),
            elements=result.elements,
            reused_elements=result.reused_elements,
        )

    def prefix_cache_stats(self) -> PrefixCacheStats | None:
        if self._prefix_cache is None:
            return None
        stats = _PrefixStats()
        self._lib.so_prefix_cache_stats(self._prefix_cache, ctypes.byref(stats))
        return PrefixCacheStats(stats.entries, stats.bytes, stats.max_bytes, stats.evictions)

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
