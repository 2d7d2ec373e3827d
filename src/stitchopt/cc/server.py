"""The compile server behind `stitchopt-cc` (`cc.client`, which states the rules and the protocol): a fork
server that has imported what a model build needs (WARM_MODULES) once, and forks one worker per compile. The
worker runs exactly what the in-process wrapper runs (`cc.wrapper.run_wrapper`) in the client's working
directory, environment and umask, on the client's stdin, stdout and stderr (received as descriptors), so the
objects, the output and the exit status are the in-process wrapper's. It keeps nothing else warm: whatever
depends on the environment (the toolchain, the cache directory, the model) is found again by each worker, as
a fresh process would.

One queue, at most `workers` compiles at a time (the CPUs it may use); the rest wait their turn. Each worker
sends its exit status straight to its client, so a server that dies leaves its running compiles to finish. A
client that goes away (Ctrl-C of make) gets its worker interrupted: SIGINT to the worker's process group, which the
wrapper handles as it does Ctrl-C, then SIGKILL after GRACE_S. The server stops when asked (`stitchopt serve
--stop`, SIGTERM, SIGINT), when idle for its idle time, and when its own code changed on disk (it answers
that client `stale`, and the next compile starts a new server). Stopping releases the socket and the lock at
once, so a new server can start while the old one waits for its running compiles.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import importlib
import io
import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from stitchopt.cc.client import IDLE_ENV, INTERRUPTED, ServerPaths, server_token
from stitchopt.errors import InputError

# What a model build imports, lazily included: the static and jit modes' model, features and guards, the
# searching modes' search. Imported once here instead of once per compile.
WARM_MODULES = (
    "stitchopt.cc.wrapper",
    "stitchopt.cc.model_builds",
    "stitchopt.cc.candidates",
    "stitchopt.passes.catalogue",
    "stitchopt.tune.session",
    "stitchopt.apply.search",
    "numpy",
)
DEFAULT_IDLE_S = 600.0
GRACE_S = 5.0  # an interrupted worker's time to clean up (scratch files, its tools) before SIGKILL
MAX_REQUEST_BYTES = 16 << 20  # arguments and environment; a response file counts as its name
_REQUEST_FDS = 4  # stdin, stdout, stderr, working directory
# What a worker shares with the server and must share with its client to be that process: the files it sees
# (a client under `unshare`, in a sandbox or a container sees others), processes, users, network, host name.
_NAMESPACES = ("mnt", "pid", "user", "net", "ipc", "uts")
_HEADER_BYTES = 64


@dataclass(eq=False)
class _Reader:
    """A connection whose request is arriving."""

    conn: socket.socket
    peer: int  # the client's pid, as this server's pid namespace sees it (0: it cannot)
    data: bytearray = field(default_factory=bytearray)
    fds: list[int] = field(default_factory=list)


@dataclass(eq=False)
class _Job:
    """A compile: queued (pid 0) or running in worker `pid`, interrupted with a SIGKILL `deadline`."""

    conn: socket.socket
    fds: list[int]
    cxx: bool
    umask: int
    pgid: int
    args: list[str]
    environment: dict[bytes, bytes]
    pid: int = 0
    deadline: float | None = None


class CodeStamp:
    """The stamps (mtime, size) of stitchopt's imported files: a server whose files changed runs old code."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.stamps = self._read()

    @classmethod
    def of_imported(cls) -> CodeStamp:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        files = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
        return cls(sorted(path for path in files if isinstance(path, str) and path.startswith(package)))

    def changed(self) -> bool:
        return self._read() != self.stamps

    def _read(self) -> list[tuple[int, int]]:
        stamps = []
        for path in self.paths:
            try:
                found = os.stat(path)
            except OSError:
                stamps.append((-1, -1))
            else:
                stamps.append((found.st_mtime_ns, found.st_size))
        return stamps


def serve(paths: ServerPaths, *, lock: int | None = None, idle_s: float | None = None) -> None:
    """Run the server in this process until it stops. `lock`: the server lock, already held (a client that
    started this server passes it); else taken here, InputError when another server holds it."""
    _open_standard_descriptors()
    if lock is None:
        lock = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            raise InputError("a compile server already runs here (`stitchopt serve --status`)") from None
    os.set_inheritable(lock, False)
    for name in WARM_MODULES:
        importlib.import_module(name)
    server = CompileServer(paths, lock, idle_s=idle_s or idle_setting(), workers=len(os.sched_getaffinity(0)))
    server.run()


def _open_standard_descriptors() -> None:
    """Descriptors 0-2 open (on /dev/null if closed), so that no socket or received descriptor takes their
    numbers, which a worker replaces with its client's stdio."""
    fd = os.open(os.devnull, os.O_RDWR)
    while fd < 3:
        fd = os.open(os.devnull, os.O_RDWR)
    os.close(fd)


def idle_setting() -> float:
    """$STITCHOPT_SERVER_IDLE seconds, else DEFAULT_IDLE_S (a bad value is logged)."""
    text = os.environ.get(IDLE_ENV, "").strip()
    try:
        seconds = float(text) if text else DEFAULT_IDLE_S
    except ValueError:
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        _log(f"{IDLE_ENV}={text!r}: use a number of seconds above 0; exiting after {DEFAULT_IDLE_S:g} s idle")
        return DEFAULT_IDLE_S
    return seconds


class CompileServer:
    """The listening socket, the queue and the workers, in one thread: everything happens in `run`'s loop,
    which is what makes forking safe."""

    def __init__(self, paths: ServerPaths, lock: int, *, idle_s: float, workers: int) -> None:
        self.paths = paths
        self.lock = lock
        self.idle_s = idle_s
        self.workers = workers
        self.token = server_token()
        self.code = CodeStamp.of_imported()
        self.place = _place("self")
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.socket_id = (0, 0)
        self.readers: list[_Reader] = []
        self.queue: deque[_Job] = deque()
        self.running: dict[int, _Job] = {}
        self.served = 0
        self.started = time.time()
        self.last_active = time.monotonic()
        self.stopping: str | None = None
        self.signalled: int | None = None
        self.wakeup_read, self.wakeup_write = os.pipe()

    def run(self) -> None:
        self._listen()
        self._catch_signals()
        _log(f"serving {self.paths.socket}: {self.workers} workers, exits after {self.idle_s:g} s idle")
        while not (self.stopping and not self.running):
            for key, _ in self.selector.select(self._timeout()):
                handle: Callable[[], None] = key.data
                handle()
            if self.signalled is not None:
                self._stop(f"signal {self.signalled}")
            self._reap()
            self._kill_overdue()
            self._start_queued()
            if not self.stopping and self._idle() and time.monotonic() - self.last_active >= self.idle_s:
                self._stop("idle")
        self.selector.close()
        _log(f"stopped ({self.stopping}) after {self.served} compiles")

    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.paths.socket)  # a dead server's: a live one would hold the lock
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        umask = os.umask(0o177)
        try:
            listener.bind(self.paths.socket)
        finally:
            os.umask(umask)
        listener.listen(socket.SOMAXCONN)
        listener.setblocking(False)
        found = os.stat(self.paths.socket)
        self.socket_id = (found.st_dev, found.st_ino)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, self._accept)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.paths.failed)

    def _catch_signals(self) -> None:
        """SIGTERM and SIGINT stop the server; SIGCHLD only wakes the loop, which reaps every turn. The
        handlers only note the signal: a worker that receives one before it resets them must not stop us."""
        os.set_blocking(self.wakeup_write, False)
        signal.set_wakeup_fd(self.wakeup_write, warn_on_full_buffer=False)
        self.selector.register(self.wakeup_read, selectors.EVENT_READ, self._drain_wakeups)

        def stop(signum: int, _frame: object) -> None:
            self.signalled = signum

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)

    def _drain_wakeups(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.wakeup_read, 4096)

    def _timeout(self) -> float | None:
        """Until the next SIGKILL of an interrupted worker, or the idle exit; None: until something happens."""
        deadlines = [job.deadline for job in self.running.values() if job.deadline is not None]
        if not self.stopping and self._idle():
            deadlines.append(self.last_active + self.idle_s)
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _idle(self) -> bool:
        """No compile running or queued (a request still arriving counts not: a client that hangs in it must
        not keep the server up; stopping drops it, and that client compiles in process)."""
        return not (self.running or self.queue)

    def _accept(self) -> None:
        while self.listener is not None:
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as error:  # out of descriptors: the clients compile in process
                _log(f"cannot accept a connection: {error.strerror}")
                return
            self.last_active = time.monotonic()
            self._greet(conn)

    def _greet(self, conn: socket.socket) -> None:
        """Say hello to a client of this user, or `stale` (and stop) when this server's code changed."""
        try:
            credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            peer = int.from_bytes(credentials[0:4], sys.byteorder)
            if int.from_bytes(credentials[4:8], sys.byteorder) != os.getuid():
                conn.close()
                return
            stale = self.code.changed()
            conn.setblocking(False)
            conn.send(b"hello %d %s\n" % (os.getpid(), b"stale" if stale else self.token.encode()))
        except OSError:
            conn.close()
            return
        if stale:
            conn.close()
            self._stop("its code changed")
            return
        reader = _Reader(conn, peer)
        self.readers.append(reader)
        self.selector.register(conn, selectors.EVENT_READ, lambda: self._read(reader))

    def _read(self, reader: _Reader) -> None:
        """More of a request: its header line, its payload, and the descriptors that came with it."""
        if reader not in self.readers:  # dropped by a stop earlier in this turn
            return
        try:
            data, ancillary, flags, _ = reader.conn.recvmsg(
                1 << 16, socket.CMSG_SPACE(_REQUEST_FDS * 4), socket.MSG_CMSG_CLOEXEC
            )
        except BlockingIOError:
            return
        except OSError:
            data, ancillary, flags = b"", [], 0
        for level, kind, rights in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                reader.fds.extend(array.array("i", rights[: len(rights) - len(rights) % 4]))
        reader.data += data
        header, newline, payload = reader.data.partition(b"\n")
        words = header.split()
        announced = int(words[1]) if len(words) == 2 and words[1].isdigit() else -1
        malformed = (announced < 0 or announced > MAX_REQUEST_BYTES) if newline else len(header) > _HEADER_BYTES
        if malformed or flags & socket.MSG_CTRUNC:
            self._drop(reader)  # not our protocol, or descriptors lost: the client compiles in process
        elif newline and len(payload) >= announced:
            self.selector.unregister(reader.conn)
            self.readers.remove(reader)
            self._dispatch(bytes(words[0]), bytes(payload[:announced]), reader)
        elif not data:
            self._drop(reader)  # the client left before it sent all of its request

    def _dispatch(self, kind: bytes, payload: bytes, reader: _Reader) -> None:
        if kind == b"compile":
            try:
                job = _job(reader, payload)
            except (ValueError, IndexError):
                _log("a compile request that cannot be read: the client compiles in process")
                _close(reader.conn, reader.fds)
                return
            if job.pgid in self.running:  # a compile run by one of our workers: queueing it could deadlock
                _reply(job.conn, b"refused nested\n")
                _close(job.conn, job.fds)
                return
            if reader.peer == 0 or _place(str(reader.peer)) != self.place:
                _reply(job.conn, b"refused elsewhere\n")  # another mount namespace, root, ...: not ours to run
                _close(job.conn, job.fds)
                return
            self.queue.append(job)
            self.selector.register(job.conn, selectors.EVENT_READ, lambda: self._client_gone(job))
            return
        if kind == b"status":
            _reply(reader.conn, b"info %s\n" % json.dumps(self.status(), separators=(",", ":")).encode())
        elif kind == b"stop":
            _reply(reader.conn, b"stopping\n")
            self._stop("asked to")
        _close(reader.conn, reader.fds)

    def status(self) -> dict[str, object]:
        """What `stitchopt serve --status` shows."""
        return {
            "pid": os.getpid(),
            "token": self.token,
            "uptime_s": round(time.time() - self.started, 1),
            "idle_exit_s": self.idle_s,
            "workers": self.workers,
            "busy": len(self.running),
            "queued": len(self.queue),
            "served": self.served,
        }

    def _drop(self, reader: _Reader) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(reader.conn)
        self.readers.remove(reader)
        _close(reader.conn, reader.fds)

    def _client_gone(self, job: _Job) -> None:
        """The client closed its side (or shut down its writes): drop its queued compile, or interrupt it."""
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(job.conn)
        if job.pid == 0:
            if job in self.queue:  # else a stop earlier in this turn closed it
                self.queue.remove(job)
                _close(job.conn, job.fds)
        elif job.deadline is None and job.pid in self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(job.pid, signal.SIGINT)
            job.deadline = time.monotonic() + GRACE_S

    def _kill_overdue(self) -> None:
        now = time.monotonic()
        for job in self.running.values():
            if job.deadline is not None and now >= job.deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(job.pid, signal.SIGKILL)
                job.deadline = None

    def _reap(self) -> None:
        while self.running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            job = self.running.pop(pid, None)
            if job is None:
                continue
            self.last_active = time.monotonic()
            if os.WIFSIGNALED(status):  # it could not say so itself
                _reply(job.conn, b"killed %d\n" % os.WTERMSIG(status))
                _log(f"worker {pid} was killed by signal {os.WTERMSIG(status)}")
            elif os.waitstatus_to_exitcode(status) != 0:
                _log(f"worker {pid} ended before it reported a status (its client left, or it could not start)")
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(job.conn)
            _close(job.conn, job.fds)

    def _start_queued(self) -> None:
        while self.queue and len(self.running) < self.workers and not self.stopping:
            job = self.queue.popleft()
            try:
                pid = os.fork()
            except OSError as error:  # the client compiles in process
                _log(f"cannot fork a worker: {error.strerror}")
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(job.conn)
                _close(job.conn, job.fds)
                continue
            if pid == 0:
                try:
                    self._work(job)
                finally:
                    os._exit(1)
            with contextlib.suppress(OSError):
                os.setpgid(pid, pid)  # the worker does it too; whichever runs first, killpg finds the group
            _close(None, job.fds)
            job.fds = []
            job.pid = pid
            self.running[pid] = job
            self.served += 1

    def _work(self, job: _Job) -> NoReturn:
        """In the worker: become the client's process, say `started`, run the wrapper, report its status."""
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self._close_all_but(job)
        if _client_left(job.conn):  # interrupted before the handler above was in place
            os._exit(1)
        for target, fd in enumerate(job.fds[:3]):
            os.dup2(fd, target)
        os.fchdir(job.fds[3])
        _close(None, job.fds)
        os.umask(job.umask)
        os.environb.clear()
        os.environb.update(job.environment)
        tempfile.tempdir = None  # found again from $TMPDIR, as a fresh process would
        if isinstance(sys.stdout, io.TextIOWrapper):
            sys.stdout.reconfigure(line_buffering=os.isatty(1))  # as Python's start-up sets it up
        job.conn.setblocking(True)
        job.conn.sendall(b"started %d\n" % os.getpid())
        status = _run_wrapper(job)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # done: nothing left to interrupt
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        job.conn.sendall(b"status %d\n" % status)
        os._exit(0)

    def _close_all_but(self, job: _Job) -> None:
        """The worker keeps its own client's descriptors only: another client's stdout held open here would
        keep that client's reader (make -O, a pipe) waiting for its end."""
        self.selector.close()
        os.close(self.wakeup_read)
        os.close(self.wakeup_write)
        if self.listener is not None:
            self.listener.close()
        if self.lock >= 0:
            os.close(self.lock)
        for reader in self.readers:
            _close(reader.conn, reader.fds)
        for other in [*self.queue, *self.running.values()]:
            if other is not job:
                _close(other.conn, other.fds)

    def _stop(self, reason: str) -> None:
        """Stop taking compiles; queued ones compile in their clients. The socket and the lock go at once, so
        that a new server may start while the running compiles finish here."""
        if self.stopping:
            return
        self.stopping = reason
        if self.listener is not None:
            self.selector.unregister(self.listener)
            with contextlib.suppress(OSError):
                found = os.stat(self.paths.socket)
                if (found.st_dev, found.st_ino) == self.socket_id:
                    os.unlink(self.paths.socket)
            self.listener.close()
            self.listener = None
        os.close(self.lock)
        self.lock = -1
        for job in self.queue:
            with contextlib.suppress(KeyError, ValueError):
                self.selector.unregister(job.conn)
            _close(job.conn, job.fds)
        self.queue.clear()
        for reader in list(self.readers):
            self._drop(reader)


def _job(reader: _Reader, payload: bytes) -> _Job:
    """The compile a request asks for (ValueError, IndexError: not one)."""
    if len(reader.fds) != _REQUEST_FDS:
        raise ValueError("a compile request carries stdin, stdout, stderr and its directory")
    fields = payload.split(b"\0")
    count = int(fields[3])
    args = fields[4 : 4 + count]
    if count < 0 or len(args) != count:
        raise ValueError("fewer arguments than announced")
    pairs = (item.partition(b"=") for item in fields[4 + count :])
    environment = {name: value for name, _, value in pairs if name}
    return _Job(
        reader.conn,
        reader.fds,
        cxx=fields[0] == b"1",
        umask=int(fields[1], 8),
        pgid=int(fields[2]),
        args=[os.fsdecode(arg) for arg in args],
        environment=environment,
    )


def _place(process: str) -> tuple[tuple[int, int], ...]:
    """The namespaces and root directory of a process (`self`, or a pid); (-1, -1) for what cannot be read."""
    place = []
    for path in [*(f"/proc/{process}/ns/{name}" for name in _NAMESPACES), f"/proc/{process}/root"]:
        try:
            found = os.stat(path)
        except OSError:
            place.append((-1, -1))
        else:
            place.append((found.st_dev, found.st_ino))
    return tuple(place)


def _run_wrapper(job: _Job) -> int:
    """The in-process wrapper's status, and its traceback on stderr where it would have crashed."""
    from stitchopt.cc.wrapper import run_wrapper

    try:
        return run_wrapper(job.args, cxx=job.cxx)
    except KeyboardInterrupt:
        return INTERRUPTED
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
    except BaseException:
        traceback.print_exc()
        return 1


def _client_left(conn: socket.socket) -> bool:
    """Whether the client closed its side: it sends nothing after its request, so anything readable is that."""
    try:
        conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        pass
    return True


def _reply(conn: socket.socket, line: bytes) -> None:
    with contextlib.suppress(OSError):
        conn.setblocking(True)
        conn.settimeout(1.0)
        conn.sendall(line)


def _close(conn: socket.socket | None, fds: list[int]) -> None:
    if conn is not None:
        conn.close()
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _log(line: str) -> None:
    """One line in the server's log (its stderr: the log file, or the terminal of `stitchopt serve --foreground`)."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} stitchopt serve[{os.getpid()}]: {line}", file=sys.stderr, flush=True)


def main(argv: list[str]) -> int:
    """`python -m stitchopt.cc.server DIR LOCK_FD [IDLE_S]`: the server a client starts (`cc.client`)."""
    directory, lock, *idle = argv
    try:
        serve(ServerPaths(directory), lock=int(lock), idle_s=float(idle[0]) if idle else None)
    except Exception:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
