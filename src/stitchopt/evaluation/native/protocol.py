"""Messages between the evaluator and its native workers: a length-prefixed JSON header, then raw bytes.

Reads take a deadline: the parent's watchdog is simply a read that gives up.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

_LENGTH = struct.Struct(">I")


class WorkerGone(Exception):
    """The other side closed its pipe (it exited or was killed)."""


class Deadline(Exception):
    """No complete message arrived in time."""


def send(fd: int, header: dict[str, Any], payload: bytes = b"") -> None:
    body = json.dumps({**header, "payload": len(payload)}).encode()
    data = _LENGTH.pack(len(body)) + body + payload
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except (BrokenPipeError, OSError) as exc:
        raise WorkerGone(str(exc)) from exc


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise Deadline()
        chunk = os.read(fd, min(size - len(chunks), 1 << 20))
        if not chunk:
            raise WorkerGone("end of stream")
        chunks += chunk
    return bytes(chunks)


def receive(fd: int, deadline: float | None = None) -> tuple[dict[str, Any], bytes]:
    (length,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, deadline))
    header: dict[str, Any] = json.loads(_read_exactly(fd, length, deadline))
    payload = _read_exactly(fd, header.pop("payload"), deadline) if header.get("payload") else b""
    header.pop("payload", None)
    return header, payload
