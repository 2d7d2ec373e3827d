"""A long-lived process that holds the native evaluator and serves one evaluation at a time.

Run by `NativeBackend` as `python -m stitchopt.evaluation.native.worker LIBRARY [PREFIX_CACHE_BYTES]`. LLVM's
fatal errors and crashes come back as statuses; after a signal-level crash the worker answers and then exits,
because a process that was interrupted by SIGSEGV or SIGABRT anywhere (inside malloc, holding a lock) may give
wrong answers later.
Anything worse (a hang, a stack overflow) is handled by the parent killing this process.
"""

from __future__ import annotations

import hashlib
import sys
from collections import OrderedDict
from contextlib import suppress
from dataclasses import asdict
from pathlib import Path

from stitchopt.core import CompileOptions
from stitchopt.evaluation.native.library import SO_OK, SO_SIGNAL, NativeLibrary
from stitchopt.evaluation.native.protocol import WorkerGone, receive, send

MAX_MODULES = 64  # inputs kept parsed-ready (as bitcode) so the parent sends each one once


def serve(library: NativeLibrary, read_fd: int, write_fd: int) -> None:
    modules: OrderedDict[str, bytes] = OrderedDict()
    send(write_fd, {"op": "ready", "llvm_version": library.llvm_version, "llvm_bindir": library.llvm_bindir})
    while True:
        request, payload = receive(read_fd)
        key = request["module"]
        if payload:
            modules[key] = payload
            while len(modules) > MAX_MODULES:
                modules.popitem(last=False)
        bitcode = modules.get(key)
        if bitcode is None:
            send(write_fd, {"op": "missing"})
            continue
        modules.move_to_end(key)
        options = CompileOptions(
            codegen_level=request["codegen_level"],
            relocation_model=request["relocation_model"],
            opt_flags=tuple(request["opt_flags"]),
        )
        optimized = library.optimize(bitcode, request["pipeline"], options, request.get("base"))
        prefixes = library.prefix_cache_stats()
        send(
            write_fd,
            {
                "op": "optimized",
                "status": optimized.status,
                "instructions": optimized.instruction_count,
                "size_estimate": optimized.size_estimate,
                "opt_seconds": optimized.opt_seconds,
                "ir_hash": hashlib.sha256(optimized.bitcode).hexdigest() if optimized.status == SO_OK else None,
                "error": optimized.error,
                "elements": optimized.elements,
                "reused_elements": optimized.reused_elements,
                "prefix_cache": asdict(prefixes) if prefixes is not None else None,
            },
        )
        if optimized.status == SO_SIGNAL:
            return
        if optimized.status != SO_OK:
            continue
        decision, _ = receive(read_fd)
        if decision["op"] == "codegen":
            emitted = library.codegen()
            send(
                write_fd,
                {
                    "op": "object",
                    "status": emitted.status,
                    "codegen_seconds": emitted.codegen_seconds,
                    "error": emitted.error,
                },
                emitted.object,
            )
            if emitted.status == SO_SIGNAL:
                return
        library.release()


def main() -> None:
    library = NativeLibrary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    with suppress(WorkerGone):  # the parent closed the pipe: exit quietly
        serve(library, sys.stdin.fileno(), sys.stdout.fileno())


if __name__ == "__main__":
    main()
