"""Committing label shards as they are written (`stitchopt labels search|broadcast --commit`), so that a session
that ends at any moment keeps its work."""

from __future__ import annotations

import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from stitchopt.errors import InputError

COMMIT_ATTEMPTS = 5
SHARDS_PATHSPEC = ":(glob)**/*.json.gz"  # the directory's shard files, nothing else in it


def shard_committer(directory: Path) -> Callable[[Path], None]:
    """Commits the directory's shards as each is written (only them, whatever else is staged). A commit refused
    (another git command holds the index lock) is retried, and a shard left uncommitted goes in with the next."""
    existing = next(p for p in (directory, *directory.parents) if p.exists())
    probe = subprocess.run(["git", "-C", str(existing), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise InputError(f"--commit: {directory} is not inside a git repository; drop --commit or move the directory")
    directory.mkdir(parents=True, exist_ok=True)

    def git(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(directory), *argv], capture_output=True, text=True)

    def commit(path: Path) -> None:
        for attempt in range(COMMIT_ATTEMPTS):
            added = git("add", "--", SHARDS_PATHSPEC)
            message = f"labels: {path.relative_to(directory)}"
            done = git("commit", "-q", "-m", message, "--", SHARDS_PATHSPEC) if added.returncode == 0 else added
            if done.returncode == 0 or "nothing" in done.stdout + done.stderr:
                return
            time.sleep(1 + attempt)
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
        warnings.warn(
            f"could not commit {path} ({reason}); it stays on disk and goes in with the next shard", stacklevel=2
        )

    return commit
