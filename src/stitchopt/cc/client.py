"""`stitchopt-cc` and `stitchopt-c++`: a model build is handed to the compile server (`cc.server`), which holds
stitchopt, numpy and the model builds' modules imported, so that a compile costs a few milliseconds on top of
the build itself instead of a Python start-up that imports them (0.2-0.3 s). Anything else, and anything the
server does not take, runs in this process (`cc.wrapper.run_wrapper`), as it always did.

This module is the fast path of every compile: it imports only what Python's start-up has loaded, `_socket`
and `zlib` (`socket` would cost 7 ms, `json` 12 ms); the in-process path imports the rest when it runs.

The rules (docs/build-integration.md, "The compile server"):
- The server is used for model builds (STITCHOPT_MODEL, STITCHOPT_LIST or STITCHOPT_MODE set) unless
  STITCHOPT_SERVER=off. The first compile starts it in the background and waits for it (START_TIMEOUT_S).
- The compile runs here, as asked, whenever the server has not started it: no server and none started in
  time, a server of another installation or version, a reply that cannot be read, a connection lost before
  the server said `started`, a refusal (this process runs in one of its workers, or in another namespace or
  root, where a worker would see other files). Nothing of the compile happened then, so nothing is done twice.
- Once started, the compile is the worker's: its exit status is this command's. A worker killed before it
  reported fails the command (128 + the signal), never compiles again here: it may already have written the
  objects and the build log's records. A server that dies does not take its workers with it.

Protocol, over a Unix stream socket (each line ends in a newline):
  server: `hello PID TOKEN`
  client: `KIND LENGTH` and LENGTH bytes; for `compile` the payload is NUL-separated (c++ driver 0|1, umask
          in octal, process group, argument count, the arguments, the environment as K=V) and the request
          carries stdin, stdout, stderr and the working directory as file descriptors (SCM_RIGHTS)
  server: `started PID` then `status N` (from the worker), or `killed SIGNAL` (the worker died of it), or
          `refused REASON`; for `status`: `info JSON`; for `stop`: `stopping`.
The client closing its side (or shutting down its writes) asks for the compile to be interrupted.
"""

from __future__ import annotations

import _socket  # the C module: `socket` imports enum and selectors, 7 ms of a compile's start-up
import os
import stat
import sys
import time
import zlib

import stitchopt
from stitchopt.errors import InputError

SERVER_ENV = "STITCHOPT_SERVER"  # on (default) | off
SERVER_DIR_ENV = "STITCHOPT_SERVER_DIR"  # where the sockets are (default: $XDG_RUNTIME_DIR/stitchopt)
IDLE_ENV = "STITCHOPT_SERVER_IDLE"  # seconds without a compile before the server exits
# cc.settings' names, spelled again: importing it would cost every compile the imports this module avoids.
MODEL_BUILD_ENVS = ("STITCHOPT_MODEL", "STITCHOPT_LIST", "STITCHOPT_MODE")
INTERRUPTED = 130  # as the in-process wrapper returns on Ctrl-C
HELLO_TIMEOUT_S = 5.0  # a server that does not greet in this time is wedged: compile here
START_TIMEOUT_S = 10.0  # how long the first compile waits for the server it started
RETRY_START_S = 60.0  # after a server that could not start, compile here this long before starting one again
INTERRUPT_WAIT_S = 7.0  # Ctrl-C: how long to wait for the worker to clean up (the server's grace, and some)
_POLL_S = 0.01
_FD_BYTES = 4  # a C int: the size of one descriptor in SCM_RIGHTS
_LOG_BYTES = 1 << 20
_SOCKET_PATH_BYTES = 107  # sun_path holds 108 bytes, its terminating NUL included


def main_cc() -> int:
    return compile_command(sys.argv[1:], cxx=False)


def main_cxx() -> int:
    return compile_command(sys.argv[1:], cxx=True)


def compile_command(args: list[str], *, cxx: bool) -> int:
    """The command's exit status: the server's worker's when the server took the compile, else the wrapper's
    in this process."""
    if _server_wanted():
        try:
            status = _compile_on_server(args, cxx)
        except KeyboardInterrupt:
            return INTERRUPTED
        if status is not None:
            return status
    from stitchopt.cc.wrapper import run_wrapper  # the in-process path, with all of stitchopt's imports

    return run_wrapper(args, cxx=cxx)


def _server_wanted() -> bool:
    if not any(os.environ.get(name) for name in MODEL_BUILD_ENVS):
        return False
    setting = os.environ.get(SERVER_ENV, "").strip()
    if setting in ("", "on"):
        return True
    if setting != "off":
        print(f"stitchopt: {SERVER_ENV}={setting!r}: use on or off; compiling without the server", file=sys.stderr)
    return False


class ServerPaths:
    """This installation's server files in a private directory: its socket, the lock that a live or starting
    server holds (so that one starts, and a socket file without it is a dead server's), its log, and the mark
    of a start that failed."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        base = os.path.join(directory, f"cc-{server_token()}")
        self.socket = base + ".sock"
        self.lock = base + ".lock"
        self.log = base + ".log"
        self.failed = base + ".failed"


def server_paths(*, create: bool) -> ServerPaths:
    """The paths in $STITCHOPT_SERVER_DIR, else $XDG_RUNTIME_DIR/stitchopt, else /tmp/stitchopt-UID, made
    (`create`) mode 0700. InputError when the directory is not private to this user: whoever else could write
    there could answer its compiles."""
    directory = os.environ.get(SERVER_DIR_ENV, "").strip()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if not directory:
        directory = os.path.join(runtime, "stitchopt") if os.path.isdir(runtime) else f"/tmp/stitchopt-{os.getuid()}"
    directory = os.path.abspath(directory)
    try:
        if create:
            os.makedirs(directory, 0o700, exist_ok=True)
        found = os.lstat(directory)
    except FileNotFoundError as error:
        if create:
            raise InputError(f"{directory}: cannot make the server directory: {error.strerror}") from error
        return ServerPaths(directory)  # none yet: no server either
    except OSError as error:
        raise InputError(f"{directory}: cannot use it as the server directory: {error.strerror}") from error
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        raise InputError(
            f"{directory}: not a directory private to this user (owner uid {found.st_uid}, mode "
            f"{stat.filemode(found.st_mode)}); remove it, or set {SERVER_DIR_ENV} to a directory of mode 0700"
        )
    paths = ServerPaths(directory)
    if len(os.fsencode(paths.socket)) > _SOCKET_PATH_BYTES:
        raise InputError(f"{paths.socket}: too long for a socket's path; set {SERVER_DIR_ENV} to a shorter directory")
    return paths


def server_token() -> str:
    """What a server shares with its clients: stitchopt's version and installation, the Python that runs it,
    and the settings of Python's start-up, which a worker inherits from the server rather than its client."""
    start_up = sorted(
        f"{name}={value}"
        for name, value in os.environ.items()
        if name.startswith("PYTHON") or name in ("LANG", "LC_ALL", "LC_CTYPE")
    )
    here = (stitchopt.__version__, sys.prefix, os.path.realpath(sys.executable), os.path.dirname(stitchopt.__file__))
    fingerprint = "\0".join((*here, *start_up)).encode(errors="surrogateescape")
    return f"{stitchopt.__version__}-{zlib.crc32(fingerprint):08x}{zlib.adler32(fingerprint):08x}"


class _Unusable(Exception):
    """A server answered, but not as this client's server should: compile here."""


class Connection:
    """A connection to the server, after its hello."""

    def __init__(self, sock: _socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self._pending = b""

    def send(self, kind: bytes, payload: bytes = b"", fds: tuple[int, ...] = ()) -> None:
        data = b"%s %d\n%s" % (kind, len(payload), payload)
        rights = b"".join(fd.to_bytes(_FD_BYTES, sys.byteorder) for fd in fds)
        sent = self.sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)] if fds else [])
        if sent < len(data):
            self.sock.sendall(data[sent:])

    def line(self) -> bytes | None:
        """The server's next line; None when it closed the connection."""
        while b"\n" not in self._pending:
            chunk = self.sock.recv(4096)
            if not chunk:
                return None
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def close(self) -> None:
        self.sock.close()


def connect(paths: ServerPaths) -> Connection | None:
    """The server's connection after a hello of this client's token; None when no server listens (no socket
    file, or a dead server's). _Unusable when one answers but is not this installation's, is stale, or hangs."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(HELLO_TIMEOUT_S)
        sock.connect(paths.socket)
        credentials = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 3 * _FD_BYTES)
        connection = Connection(sock, 0)
        hello = connection.line()
    except (FileNotFoundError, ConnectionRefusedError, ConnectionResetError):
        sock.close()
        return None
    except OSError as error:
        sock.close()
        raise _Unusable from error
    if hello is None:  # closed before its hello: a server that is stopping
        sock.close()
        return None
    words = hello.split()
    owner = int.from_bytes(credentials[_FD_BYTES : 2 * _FD_BYTES], sys.byteorder)
    hello_ok = len(words) == 3 and words[0] == b"hello" and words[1].isdigit() and words[2] == server_token().encode()
    if owner != os.getuid() or not hello_ok:
        sock.close()
        raise _Unusable
    sock.settimeout(None)
    connection.pid = int(words[1])
    return connection


def _compile_on_server(args: list[str], cxx: bool) -> int | None:
    """The compile's exit status from the server; None when the server did not start it."""
    try:
        connection = connect_or_start(server_paths(create=True), idle_s=None)
    except (InputError, _Unusable):
        return None
    if connection is None:
        return None
    try:
        return _compile(connection, args, cxx)
    finally:
        connection.close()


def connect_or_start(paths: ServerPaths, *, idle_s: float | None) -> Connection | None:
    """The running server's connection, or a new server's, started here and waited for; None when there is
    none in START_TIMEOUT_S (or one failed to start in the last RETRY_START_S). _Unusable as connect()."""
    started = False
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        connection = connect(paths)
        if connection is not None:
            return connection
        lock = _free_lock(paths)
        if lock is not None:  # no server runs or starts
            if started or _failed_recently(paths):
                os.close(lock)
                if started:  # the server started here exited before it listened
                    _mark_failed(paths)
                return None
            _spawn(paths, lock, idle_s)
            started = True
        if time.monotonic() > deadline:
            return None
        time.sleep(_POLL_S)


def _free_lock(paths: ServerPaths) -> int | None:
    """The server lock, taken, when no server holds it (None when one does)."""
    import fcntl  # only when there was no server to connect to

    try:
        lock = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        if lock < 3:  # this process has a closed stdio descriptor: keep the lock off the server's stdio
            moved = fcntl.fcntl(lock, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(lock)
            lock = moved
    except OSError as error:
        raise _Unusable from error
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return None
    return lock


def _spawn(paths: ServerPaths, lock: int, idle_s: float | None) -> None:
    """Start the server in the background, in its own session, with the lock that says it runs; it keeps no
    descriptor of this process (make's pipes) but the lock, and appends to the log (emptied past 1 MiB)."""
    import subprocess  # only when a server starts

    argv = [sys.executable, "-m", "stitchopt.cc.server", paths.directory, str(lock)]
    try:
        log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            if os.fstat(log).st_size > _LOG_BYTES:  # the servers before this one: their last lines are enough
                os.ftruncate(log, 0)
            subprocess.Popen(
                [*argv, *([] if idle_s is None else [repr(idle_s)])],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                pass_fds=(lock,),
                start_new_session=True,
                cwd="/",
            )
        finally:
            os.close(log)
    except OSError as error:
        raise _Unusable from error
    finally:
        os.close(lock)  # the server holds it now (the lock belongs to the open file, which it shares)


def _failed_recently(paths: ServerPaths) -> bool:
    try:
        return time.time() - os.stat(paths.failed).st_mtime < RETRY_START_S
    except OSError:
        return False


def _mark_failed(paths: ServerPaths) -> None:
    try:
        mark = os.open(paths.failed, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    os.close(mark)


def _compile(connection: Connection, args: list[str], cxx: bool) -> int | None:
    """Hand the compile over (this process's arguments, environment, umask, directory and stdio) and wait for
    its status; None when the server did not start it."""
    umask = os.umask(0o022)
    os.umask(umask)
    environment = [name + b"=" + value for name, value in os.environb.items()]
    fields = [b"1" if cxx else b"0", b"%o" % umask, b"%d" % os.getpgid(0), b"%d" % len(args)]
    payload = b"\0".join([*fields, *map(os.fsencode, args), *environment])
    try:
        directory = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            connection.send(b"compile", payload, (0, 1, 2, directory))
        finally:
            os.close(directory)
    except OSError:  # a closed stdio descriptor, a deleted directory, a server gone: compile here
        return None
    started = False
    try:
        while (line := connection.line()) is not None:
            words = line.split()
            if words[0] == b"started":
                started = True
            elif words[0] == b"status":
                return int(words[1])
            elif words[0] == b"killed":
                if not started:  # before it began: nothing of the compile happened
                    return None
                signal = int(words[1])
                print(f"stitchopt: the compile was killed by signal {signal} (in the compile server)", file=sys.stderr)
                return 128 + signal
            elif words[0] == b"refused" and not started:
                return None
    except KeyboardInterrupt:
        return _interrupted(connection)
    except (OSError, ValueError, IndexError):  # a reply that cannot be read
        pass
    if not started:
        return None
    print("stitchopt: the compile server's worker ended without an exit status; build again", file=sys.stderr)
    return 1


def _interrupted(connection: Connection) -> int:
    """Ctrl-C: shutting down this side asks the server to interrupt the worker, which cleans up as the wrapper
    does on Ctrl-C; wait for it, so that make sees the compile end when this process does."""
    try:
        connection.sock.shutdown(_socket.SHUT_WR)
        connection.sock.settimeout(INTERRUPT_WAIT_S)
        while connection.line() is not None:
            pass
    except (OSError, KeyboardInterrupt):
        pass
    return INTERRUPTED


def server_status(paths: ServerPaths) -> dict[str, object] | None:
    """What the running server says about itself (see `cc.server`), None when none runs."""
    import json

    answer = _ask(paths, b"status")
    if answer is None:
        return None
    kind, _, document = (answer[1] or b"").partition(b" ")
    if kind != b"info":
        raise InputError(f"{paths.socket}: the server did not say its status; see {paths.log}")
    info: dict[str, object] = json.loads(document)
    return info


def stop_server(paths: ServerPaths) -> int | None:
    """Ask the running server to stop (its running compiles finish) and return its pid; None when none runs."""
    answer = _ask(paths, b"stop")
    return None if answer is None else answer[0]


def _ask(paths: ServerPaths, request: bytes) -> tuple[int, bytes | None] | None:
    """The running server's pid and its one-line answer to `request` (None: it did not answer); None when no
    server runs."""
    try:
        connection = connect(paths)
    except _Unusable:
        raise _unusable(paths) from None
    if connection is None:
        return None
    try:
        connection.send(request)
        line = connection.line()
    except OSError:
        line = None
    finally:
        connection.close()
    return connection.pid, line


def start_server(paths: ServerPaths, *, idle_s: float | None) -> int:
    """The pid of the running server, started in the background when none runs (even after a failed start)."""
    import contextlib  # `stitchopt serve`, not a compile

    with contextlib.suppress(OSError):
        os.unlink(paths.failed)
    try:
        connection = connect_or_start(paths, idle_s=idle_s)
    except _Unusable:
        raise _unusable(paths) from None
    if connection is None:
        raise InputError(f"the compile server did not start; see {paths.log}")
    connection.close()
    return connection.pid


def _unusable(paths: ServerPaths) -> InputError:
    return InputError(
        f"{paths.socket}: the server there is another version's (a stale one stops by itself), or does not answer"
    )
