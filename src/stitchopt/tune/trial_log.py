"""Trial logs (`tune --log trials.jsonl`): one JSON line per evaluation, stamped with the run's id.

The run record (`tune -o run.json`) carries the same id, so a report can tell a log that belongs to the run
from one left by another run. A log is written beside its destination and renamed onto it when the run ends:
a run that is stopped leaves the previous, finished log in place and its own trials in a `.partial` file.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from stitchopt.errors import InputError
from stitchopt.jsonlines import read_json_lines

TRIAL_LOG_COMMAND = "stitchopt tune ... --log trials.jsonl"  # what writes the trial logs read here
RUN_ID_KEY = "run_id"  # in every trial of a log and in the run record of the same run
PARTIAL_SUFFIX = ".partial"


def new_run_id() -> str:
    return uuid.uuid4().hex


@contextmanager
def trial_log_file(path: Path) -> Iterator[IO[str]]:
    """A log that replaces `path` only when the run finishes; a stopped run's trials stay in `path`.partial. A
    path that is not a regular file (/dev/stderr, a pipe) is written as it goes, and a link is followed, so
    that the log goes where the user pointed it."""
    path = path.resolve()
    if path.exists() and not path.is_file():
        with open(path, "w") as stream:
            yield stream
        return
    partial = path.with_name(path.name + PARTIAL_SUFFIX)
    with open(partial, "w") as log:
        try:
            yield log
        except BaseException:
            if log.tell():
                unchanged = f" ({path}, of an earlier run, is unchanged)" if path.exists() else ""
                warnings.warn(f"the run stopped: its trials are in {partial}{unchanged}", stacklevel=1)
            else:
                partial.unlink()
            raise
    partial.replace(path)


def read_trials(path: Path) -> list[dict[str, Any]]:
    return read_json_lines(path, "trial log", TRIAL_LOG_COMMAND)


def check_log_belongs(path: Path, trials: Sequence[dict[str, Any]], run_ids: set[str | None]) -> None:
    """Refuse a trial log of another run than the records' (the report would mix two runs); warn when either was
    written before runs were stamped, as nothing can then be checked."""
    logged = {trial.get(RUN_ID_KEY) for trial in trials}
    if not trials or logged <= run_ids - {None}:
        return
    if None in logged or None in run_ids:
        warnings.warn(
            f"{path}: cannot check that this log belongs to the run records (written before runs were stamped)",
            stacklevel=1,
        )
        return
    raise InputError(
        f"{path}: its trials are from another tune run than the run records: give the --log file written by the "
        "same run (`tune -o run.json --log trials.jsonl`)"
    )
