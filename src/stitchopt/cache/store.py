"""SQLite store of evaluation results, shared safely by several processes.

WAL mode lets readers run beside one writer; every write is one transaction, so a process killed mid-write
leaves either the whole row or nothing. Rows are evicted least-recently-used once the file passes its bound.
A store that can no longer be written (a full disk, a damaged file) keeps the rest of the run's rows in memory,
with one warning, so no result of the run is lost; one removed while open (`cache clear`) is created again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import platformdirs

from stitchopt.core import MEASUREMENT_VERSION, CompileOptions, EvalResult
from stitchopt.errors import CacheError
from stitchopt.toolchain.elf import ObjectSizes

SCHEMA_VERSION = 4  # 4: results keep the limits a failure happened under
UPGRADABLE_VERSIONS = {2, 3}  # older schemas that the current one only adds tables or result fields to
DEFAULT_MAX_BYTES = 1 << 30
CACHE_DIR_ENV = "STITCHOPT_CACHE_DIR"
TOOLCHAIN_STATE = "toolchain.json"  # the remembered toolchain discovery of the compiler wrapper
DB_NAME = "evaluations.sqlite"
_BUSY_TIMEOUT_MS = 60_000
_EVICT_FRACTION = 0.9  # evict down to this share of the bound, so eviction is not paid on every write

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS evaluations (
    key TEXT PRIMARY KEY,
    ir_sha256 TEXT NOT NULL,
    toolchain TEXT NOT NULL,
    pipeline TEXT NOT NULL,
    triple TEXT NOT NULL,
    options TEXT NOT NULL,
    status TEXT NOT NULL,
    result_json TEXT NOT NULL,
    created REAL NOT NULL,
    last_used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS evaluations_last_used ON evaluations(last_used);
CREATE TABLE IF NOT EXISTS codegen (
    key TEXT PRIMARY KEY,
    sizes_json TEXT NOT NULL,
    created REAL NOT NULL,
    last_used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS codegen_last_used ON codegen(last_used);
CREATE TABLE IF NOT EXISTS artifacts (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    value BLOB NOT NULL,
    created REAL NOT NULL,
    last_used REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS artifacts_last_used ON artifacts(last_used);
"""
_TABLES = ("evaluations", "codegen", "artifacts")


def default_cache_dir() -> Path:
    """`$STITCHOPT_CACHE_DIR`, else the per-user cache directory (e.g. ~/.cache/stitchopt)."""
    override = os.environ.get(CACHE_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir("stitchopt"))


def store_path(cache_dir: Path | None = None) -> Path:
    """The evaluation database of a cache directory (default: `default_cache_dir()`)."""
    return (cache_dir or default_cache_dir()) / DB_NAME


def _digest(*parts: str) -> str:
    """The content address of a cache row: sha256 over its NUL-separated key parts."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class EvalKey:
    """Everything that decides an evaluation's outcome (its time and memory limits decide only failures, which
    `EvalResult.holds_under` checks on a hit)."""

    ir_sha256: str
    toolchain: str
    pipeline: str
    triple: str
    options: CompileOptions

    @property
    def digest(self) -> str:
        return _digest(
            str(MEASUREMENT_VERSION), self.ir_sha256, self.toolchain, self.pipeline, self.triple, self.options.key()
        )


@dataclass(frozen=True)
class CodegenKey:
    """What decides an object file: the optimized IR (by hash), the toolchain, triple and codegen options."""

    ir_hash: str
    toolchain: str
    triple: str
    options: CompileOptions

    @property
    def digest(self) -> str:
        return _digest(str(MEASUREMENT_VERSION), self.ir_hash, self.toolchain, self.triple, self.options.codegen_key())


@dataclass(frozen=True)
class CacheStats:
    path: Path
    entries: int
    file_bytes: int
    max_bytes: int
    by_status: dict[str, int]
    codegen_entries: int
    artifacts_by_kind: dict[str, int]


def _read_only(exc: sqlite3.OperationalError) -> bool:
    """SQLite's ways of saying that the file or its directory cannot be written."""
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open database file" in text


class CacheWarning(UserWarning):
    """The cache could not be written: the run goes on with its results in memory."""


class EvaluationStore:
    """Content-addressed results. Open one per process; threads share it (calls are serialized by a lock),
    and SQLite's own locking arbitrates between processes."""

    def __init__(self, path: Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path if path is not None else store_path()
        self.max_bytes = max_bytes
        self._lock = threading.RLock()
        self._memory: dict[tuple[str, str], Any] = {}  # rows the database could not take, by (table, key)
        self._trouble: str | None = None  # why the database takes no more writes
        deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
        pause = 0.05
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise CacheError(
                    f"cannot create the evaluation cache directory {self.path.parent}: {exc.strerror}; "
                    f"point --cache-dir or ${CACHE_DIR_ENV} at a writable directory"
                ) from exc
            try:
                self._db = self._connect()
                return
            except sqlite3.OperationalError as exc:
                if _read_only(exc) and self.path.is_file():
                    self._db = self._connect_read_only(exc)
                    return
                # Opening while another process checkpoints the WAL can be refused at once, without the busy
                # handler: many short-lived processes (a build's compiler wrappers) meet this. Try again.
                if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                    raise self._unusable(exc) from exc
                time.sleep(pause)
                pause = min(2 * pause, 1.0)
            except sqlite3.DatabaseError as exc:
                raise self._unusable(exc) from exc

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._db = db
            self._init_schema()
            self._inode = os.stat(self.path).st_ino
        except BaseException:
            db.close()
            raise
        return db

    def _connect_read_only(self, refused: sqlite3.OperationalError) -> sqlite3.Connection:
        """A cache on a read-only medium is read, not refused: immutable (no locks, no WAL files to create),
        and this run's new rows stay in memory."""
        db = sqlite3.connect(f"file:{self.path}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            db.close()
            raise self._unusable(exc) from exc
        if row is None or int(row[0]) != SCHEMA_VERSION:
            db.close()
            raise CacheError(f"the read-only evaluation cache {self.path} has another schema: set {CACHE_DIR_ENV}")
        self._inode = os.stat(self.path).st_ino
        self._trouble = str(refused)
        warnings.warn(
            f"the evaluation cache {self.path} is read-only: it is read, and this run keeps its new results in memory",
            CacheWarning,
            stacklevel=4,
        )
        return db

    def _unusable(self, exc: Exception) -> CacheError:
        elsewhere = f"point --cache-dir or ${CACHE_DIR_ENV} at a writable directory"
        if not self.path.is_file():  # nothing to delete: the directory refuses a new file
            return CacheError(f"cannot create the evaluation cache {self.path}: {exc}; {elsewhere}")
        return CacheError(f"cannot open the evaluation cache {self.path}: {exc}; delete it, or {elsewhere}")

    def _init_schema(self) -> None:
        with self._transaction() as db:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)
            row = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) in UPGRADABLE_VERSIONS:
                db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            elif int(row[0]) != SCHEMA_VERSION:
                raise CacheError(
                    f"the evaluation cache {self.path} has schema v{row[0]} but this stitchopt needs "
                    f"v{SCHEMA_VERSION}: run `stitchopt cache clear` or set {CACHE_DIR_ENV} to another directory"
                )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> EvaluationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, table: str, rows: list[tuple[str, Any]], write: Callable[[sqlite3.Connection], object]) -> None:
        """`write` in one transaction; once the database cannot take it, `rows` ((key, value) pairs) stay in
        memory for this run instead."""
        with self._lock:
            if self._trouble is None:
                try:
                    self._reopen_if_removed()
                    with self._transaction() as db:
                        write(db)
                    if self._file_bytes() > self.max_bytes:
                        self.evict()
                    return
                except (sqlite3.DatabaseError, OSError) as exc:  # full, damaged, read-only, I/O error
                    self._fall_back_to_memory(exc)
            self._memory.update(((table, key), value) for key, value in rows)

    def _reopen_if_removed(self) -> None:
        """`cache clear` in another process removes the file this connection writes: open a new one, so that
        later rows are not written to a deleted file."""
        try:
            same = os.stat(self.path).st_ino == self._inode
        except FileNotFoundError:
            same = False
        if not same:
            self._db.close()
            self._db = self._connect()

    def _fall_back_to_memory(self, exc: BaseException) -> None:
        self._trouble = str(exc)
        text = self._trouble.lower()
        advice = (
            "free some disk space"
            if "full" in text or "no space" in text
            else f"run `stitchopt cache clear` or set {CACHE_DIR_ENV}"
        )
        warnings.warn(
            f"the evaluation cache {self.path} cannot be written ({exc}): this run keeps its results in memory; "
            f"{advice} for later runs to reuse them",
            CacheWarning,
            stacklevel=3,
        )

    def get(self, key: EvalKey) -> EvalResult | None:
        row = self._lookup("evaluations", "result_json", key.digest)
        return None if row is None else EvalResult.from_dict(json.loads(row))

    def get_codegen(self, key: CodegenKey) -> ObjectSizes | None:
        row = self._lookup("codegen", "sizes_json", key.digest)
        return None if row is None else ObjectSizes(**json.loads(row))

    def put_codegen(self, key: CodegenKey, sizes: ObjectSizes) -> None:
        now, value = time.time(), json.dumps(asdict(sizes))
        self._write(
            "codegen",
            [(key.digest, value)],
            lambda db: db.execute("INSERT OR REPLACE INTO codegen VALUES (?,?,?,?)", (key.digest, value, now, now)),
        )

    def get_artifact(self, kind: str, *key_parts: str) -> bytes | None:
        """A build product or verdict (validation IR, reference runs, verdicts) stored under its content key."""
        with self._lock:
            row = self._lookup_row("artifacts", "value", _digest(kind, *key_parts))
        return None if row is None else bytes(row)

    def put_artifact(self, kind: str, value: bytes, *key_parts: str) -> None:
        now = time.time()
        row = (_digest(kind, *key_parts), kind, value, now, now)
        self._write(
            "artifacts",
            [(row[0], value)],
            lambda db: db.execute("INSERT OR REPLACE INTO artifacts VALUES (?,?,?,?,?)", row),
        )

    def _lookup(self, table: str, column: str, digest: str) -> str | None:
        row = self._lookup_row(table, column, digest)
        return None if row is None else str(row)

    def _lookup_row(self, table: str, column: str, digest: str) -> Any:
        """One row's value, marking it recently used for LRU eviction; a miss where the database cannot be
        read."""
        with self._lock:
            if (table, digest) in self._memory:
                return self._memory[table, digest]
            try:
                row = self._db.execute(f"SELECT {column} FROM {table} WHERE key=?", (digest,)).fetchone()
                if row is not None and self._trouble is None:
                    self._db.execute(f"UPDATE {table} SET last_used=? WHERE key=?", (time.time(), digest))
            except (sqlite3.DatabaseError, OSError) as exc:
                if self._trouble is None:
                    self._fall_back_to_memory(exc)
                return None
            return None if row is None else row[0]

    def put(self, key: EvalKey, result: EvalResult) -> None:
        self.put_many([(key, result)])

    def put_many(self, items: Iterable[tuple[EvalKey, EvalResult]]) -> None:
        now = time.time()
        rows = [
            (
                key.digest,
                key.ir_sha256,
                key.toolchain,
                key.pipeline,
                key.triple,
                key.options.key(),
                result.status.value,
                json.dumps(result.to_dict(), sort_keys=True),
                now,
                now,
            )
            for key, result in items
        ]
        self._write(
            "evaluations",
            [(row[0], row[7]) for row in rows],
            lambda db: db.executemany("INSERT OR REPLACE INTO evaluations VALUES (?,?,?,?,?,?,?,?,?,?)", rows),
        )

    def _file_bytes(self) -> int:
        with self._lock:
            page_count = self._db.execute("PRAGMA page_count").fetchone()[0]
            free_pages = self._db.execute("PRAGMA freelist_count").fetchone()[0]
            page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int((page_count - free_pages) * page_size)

    def evict(self) -> int:
        """Drop least-recently-used rows until the live data fits in 90% of the bound; return rows dropped."""
        dropped = 0
        target = self.max_bytes * _EVICT_FRACTION
        while self._file_bytes() > target:
            with self._transaction() as db:
                removed = 0
                for table in _TABLES:
                    total = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                    batch = max(1, total // 10) if total else 0
                    db.execute(
                        f"DELETE FROM {table} WHERE key IN (SELECT key FROM {table} ORDER BY last_used LIMIT ?)",
                        (batch,),
                    )
                    removed += batch
                if removed == 0:
                    break
                dropped += removed
        return dropped

    def stats(self) -> CacheStats:
        try:
            with self._lock:
                entries = self._db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
                rows = self._db.execute("SELECT status, COUNT(*) FROM evaluations GROUP BY status").fetchall()
                codegen = self._db.execute("SELECT COUNT(*) FROM codegen").fetchone()[0]
                artifacts = dict(self._db.execute("SELECT kind, COUNT(*) FROM artifacts GROUP BY kind").fetchall())
        except sqlite3.DatabaseError as exc:
            raise CacheError(
                f"the evaluation cache {self.path} is damaged ({exc}): `stitchopt cache clear` starts a new one"
            ) from exc
        by_status = dict(rows)
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.is_file())
        return CacheStats(self.path, entries, size, self.max_bytes, by_status, codegen, artifacts)


def remove_store(path: Path) -> list[Path]:
    """Delete a cache database and its WAL files; works even when its schema is not ours."""
    removed = []
    for suffix in ("", "-wal", "-shm"):
        candidate = path.with_name(path.name + suffix)
        if candidate.exists():
            candidate.unlink()
            removed.append(candidate)
    return removed
