import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from stitchopt.cache import store as store_module
from stitchopt.cache.store import SCHEMA_VERSION, CodegenKey, EvalKey, EvaluationStore, remove_store
from stitchopt.core import MEASUREMENT_VERSION, CompileOptions, EvalResult, EvalStatus
from stitchopt.errors import CacheError


def _key(i: int, pipeline: str = "function(sroa)") -> EvalKey:
    return EvalKey(f"{i:064x}", "llvm-test", pipeline, "x86_64-pc-linux-gnu", CompileOptions())


def _result(i: int) -> EvalResult:
    return EvalResult(
        EvalStatus.OK,
        "function(sroa)",
        size_bytes=1000 + i,
        text_bytes=900,
        ir_instruction_count=i,
        ir_hash="ab" * 32,
        opt_seconds=0.01,
        codegen_seconds=0.02,
        sections={".text": 900},
    )


def test_round_trip_and_key_parts(store: EvaluationStore) -> None:
    store.put(_key(1), _result(1))
    assert store.get(_key(1)) == _result(1)
    assert store.get(_key(1, "function(instcombine)")) is None
    other_codegen = EvalKey(
        _key(1).ir_sha256, "llvm-test", "function(sroa)", "x86_64-pc-linux-gnu", CompileOptions(codegen_level=3)
    )
    assert store.get(other_codegen) is None
    failed = EvalResult(EvalStatus.TIMEOUT, "function(sroa)", opt_seconds=120.0, stderr_tail="opt: killed")
    store.put(_key(2), failed)
    assert store.get(_key(2)) == failed
    assert store.stats().by_status == {"ok": 1, "timeout": 1}


def test_wal_mode_and_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    EvaluationStore(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.execute("UPDATE meta SET value='999' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(CacheError, match=r"schema v999 .*stitchopt cache clear"):
        EvaluationStore(path)
    assert remove_store(path)
    EvaluationStore(path).close()  # a cleared cache opens again


def test_a_v3_cache_is_upgraded_and_its_rows_still_read(tmp_path: Path) -> None:
    """v4 only added result fields (the limits of failures): rows written by v3 lack them and read as None."""
    path = tmp_path / "c.sqlite"
    with EvaluationStore(path) as store:
        store.put(_key(1), _result(1))
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    old_row = json.loads(db.execute("SELECT result_json FROM evaluations").fetchone()[0])
    del old_row["time_limit_s"], old_row["memory_limit_bytes"]
    db.execute("UPDATE evaluations SET result_json=?", (json.dumps(old_row),))
    db.commit()
    db.close()
    with EvaluationStore(path) as store:
        assert store.get(_key(1)) == _result(1)
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()


def test_corrupt_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CacheError, match="cannot open the evaluation cache .*; delete it, or point --cache-dir"):
        EvaluationStore(path)


def test_a_cache_that_cannot_be_created_says_to_point_it_elsewhere_not_to_delete_it(tmp_path: Path) -> None:
    taken = tmp_path / "taken"  # a directory where the database file would be
    taken.mkdir()
    with pytest.raises(CacheError, match=r"cannot create the evaluation cache .*; point --cache-dir or \$STITCHOPT"):
        EvaluationStore(taken)


def test_lru_eviction_keeps_recent_entries(tmp_path: Path) -> None:
    with EvaluationStore(tmp_path / "c.sqlite", max_bytes=400_000) as store:
        store.put(_key(0), _result(0))
        for i in range(1, 3000):
            store.put(_key(i), _result(i))
            if i % 100 == 0:
                assert store.get(_key(0)) is not None  # keeps entry 0 recently used
        stats = store.stats()
        assert stats.entries < 3000
        assert store.get(_key(0)) is not None
        assert store.get(_key(1)) is None  # the oldest untouched entries went first
        assert store.get(_key(2999)) is not None


WRITER = textwrap.dedent(
    """
    import sys
    from stitchopt.cache.store import EvalKey, EvaluationStore
    from stitchopt.core import MEASUREMENT_VERSION, CompileOptions, EvalResult, EvalStatus
    store = EvaluationStore(__import__("pathlib").Path(sys.argv[1]))
    prefix, i = sys.argv[2], 0
    while True:
        batch = []
        for _ in range(20):
            key = EvalKey(f"{prefix}{i:060x}", "llvm-test", "p", "t", CompileOptions())
            batch.append((key, EvalResult(EvalStatus.OK, "p", size_bytes=i, text_bytes=i, ir_instruction_count=i,
                                          stderr_tail="x" * 2000)))
            i += 1
        store.put_many(batch)
        if len(sys.argv) > 3 and i >= int(sys.argv[3]):
            break
    """
)


def _spawn_writer(path: Path, prefix: str, limit: int | None = None) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-c", WRITER, str(path), prefix] + ([str(limit)] if limit else [])
    return subprocess.Popen(argv)


def _rows(path: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = db.execute("SELECT key, result_json FROM evaluations").fetchall()
    db.close()
    return rows


def test_killed_writer_leaves_no_corruption_or_half_rows(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    EvaluationStore(path).close()
    for round_ in range(5):
        writer = _spawn_writer(path, f"{round_:04x}")
        deadline = time.time() + 30
        before = len(_rows(path))
        while len(_rows(path)) < before + 100 and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(0.01 * round_)  # kill at varying points of a transaction
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
    rows = _rows(path)
    assert len(rows) >= 500
    assert len(rows) % 20 == 0  # whole batches only: each put_many is one transaction
    for _, blob in rows:
        data = json.loads(blob)
        assert data["stderr_tail"] == "x" * 2000 and data["size_bytes"] is not None
    with EvaluationStore(path) as store:  # and the store still opens and writes
        store.put(_key(1), _result(1))
        assert store.get(_key(1)) == _result(1)


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    EvaluationStore(path).close()
    writers = [_spawn_writer(path, f"{n:04x}", limit=400) for n in range(3)]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    assert len(_rows(path)) == 1200


BASE_KEY = EvalKey("ir", "llvm-19", "function(sroa)", "x86_64-pc-linux-gnu", CompileOptions())


@pytest.mark.parametrize(
    "changed",
    [
        replace(BASE_KEY, ir_sha256="other ir"),
        replace(BASE_KEY, toolchain="llvm-18"),
        replace(BASE_KEY, pipeline="function(sroa),globaldce"),
        replace(BASE_KEY, triple="aarch64-linux-gnu"),
        replace(BASE_KEY, options=CompileOptions(codegen_level=0)),
        replace(BASE_KEY, options=CompileOptions(relocation_model="static")),
        replace(BASE_KEY, options=CompileOptions(opt_flags=("-inline-threshold=5",))),
    ],
)
def test_every_input_of_an_evaluation_is_in_its_key(changed: EvalKey) -> None:
    assert changed.digest != BASE_KEY.digest


def test_the_measurement_version_is_in_every_key(monkeypatch: pytest.MonkeyPatch) -> None:
    codegen = CodegenKey("ir", "llvm-19", "x86_64-pc-linux-gnu", CompileOptions())
    before = (BASE_KEY.digest, codegen.digest)
    monkeypatch.setattr(store_module, "MEASUREMENT_VERSION", MEASUREMENT_VERSION + 1)
    assert BASE_KEY.digest != before[0] and codegen.digest != before[1]


def test_a_full_disk_keeps_the_run_going_in_memory_with_one_warning(tmp_path: Path) -> None:
    """Under a file-size limit (a full disk, as SQLite sees it) writes fail: the store warns once and keeps
    every later row in memory, where this run still finds it."""
    script = textwrap.dedent(
        f"""
        import resource, signal, warnings
        from pathlib import Path
        from stitchopt.cache.store import EvaluationStore
        from test_store import _key, _result
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        store = EvaluationStore(Path({str(tmp_path / "cache.sqlite")!r}))
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for i in range(400):
                store.put(_key(i), _result(i))
        assert all(store.get(_key(i)) == _result(i) for i in range(400))
        print(len(caught), caught[0].message if caught else "")
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{Path(__file__).parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    count, message = done.stdout.split(" ", 1)
    assert count == "1" and "cannot be written" in message and "keeps its results in memory" in message


def test_damaged_pages_are_a_clear_error_in_stats_and_a_warning_in_a_run(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with EvaluationStore(path) as store:
        for i in range(300):
            store.put(_key(i), _result(i))
    size = path.stat().st_size
    with open(path, "r+b") as handle:  # overwrite every page after the first quarter of the file
        handle.seek(size // 4)
        handle.write(os.urandom(size - size // 4))
    with EvaluationStore(path) as store:
        with pytest.raises(CacheError, match="is damaged .*`stitchopt cache clear` starts a new one"):
            store.stats()
        with pytest.warns(store_module.CacheWarning, match="cannot be written"):
            found = [store.get(_key(i)) for i in range(300)]  # damaged rows read as misses
            for i in range(300, 320):
                store.put(_key(i), _result(i))
                assert store.get(_key(i)) == _result(i)  # kept in memory
    assert found.count(None) > 0


def test_a_cache_cleared_during_a_run_gets_the_later_rows(store: EvaluationStore) -> None:
    """`stitchopt cache clear` in another process deletes the file a running store writes to: the next write
    creates a new cache rather than going to the deleted file."""
    store.put(_key(1), _result(1))
    remove_store(store.path)
    store.put(_key(2), _result(2))
    with EvaluationStore(store.path) as reader:
        assert reader.get(_key(2)) == _result(2) and reader.get(_key(1)) is None


def test_a_read_only_cache_is_read_and_the_run_keeps_new_rows_in_memory(tmp_path: Path) -> None:
    """On a read-only mount (a private mount namespace, as root) the cache is opened immutable: its rows are
    read, new ones stay in memory, and one warning says so; it is not called damaged."""
    cache = tmp_path / "cache"
    with EvaluationStore(cache / "evaluations.sqlite") as store:
        store.put(_key(1), _result(1))
    script = textwrap.dedent(
        f"""
        import warnings
        from pathlib import Path
        from stitchopt.cache.store import EvaluationStore
        from test_store import _key, _result
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store = EvaluationStore(Path({str(cache / "evaluations.sqlite")!r}))
            store.put(_key(2), _result(2))
        assert store.get(_key(1)) == _result(1) and store.get(_key(2)) == _result(2)
        print(len(caught), caught[0].message)
        """
    )
    mount = f'mount --bind {cache} {cache} && mount -o remount,bind,ro {cache} && exec {sys.executable} -c "$0"'
    env = {**os.environ, "PYTHONPATH": f"{Path(__file__).parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", mount, script], capture_output=True, text=True, env=env, timeout=60
    )
    if done.returncode != 0 and ("unshare:" in done.stderr or "mount:" in done.stderr):
        pytest.skip(f"no private read-only mount here: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 ") and "is read-only: it is read" in done.stdout
