"""Every list of a label directory's pools validated in full once (`stitchopt labels validate`), the verdicts kept
beside the shards in `validation/<suites>.json.gz`.

Object sizes, which labels measure, cannot see a list that breaks programs: most single-unit search bests did
not link HumanEval-X's C++ programs on Debian 12 while every unit's IR guards trusted them. Studies and pools
read these verdicts and leave failed lists out; a rerun validates only the lists no verdict covers yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from stitchopt.errors import InputError
from stitchopt.labels.groups import group_lists, load_groups
from stitchopt.labels.labelset import LabelSet, read_gzip_json, write_gzip_json
from stitchopt.labels.shards import matrix_directories, readable_shard
from stitchopt.passes.catalogue import Catalogue
from stitchopt.passes.pipeline import PassNames, tuned_pipeline
from stitchopt.tune.acceptance import ListValidation

VERDICTS_DIR = "validation"
VERDICTS_FORMAT = 1
COMMIT_EVERY = 10  # lists between two `on_save` calls (and after the last): a commit per list would flood the log


@dataclass(frozen=True)
class ListVerdict:
    passes: PassNames
    passed: bool
    note: str  # what was run and, on failure, where it failed
    toolchain: str  # the toolchain whose build of the suite's programs judged the list


@dataclass(frozen=True)
class ValidationRun:
    verdicts: tuple[ListVerdict, ...]  # the file's, this run's included
    validated: int  # lists this run validated (the others already had a verdict of this toolchain)
    path: Path


def pool_lists(directory: Path) -> tuple[PassNames, ...]:
    """The distinct lists of every matrix's pool, then of the groups that beat -Oz on their group: what a
    model trained from the directory may keep."""
    lists: list[PassNames] = []
    for matrix in matrix_directories(directory):
        shards = (readable_shard(LabelSet.load, path) for path in sorted(matrix.glob("*.json.gz")))
        lists.extend(next((shard.lists for shard in shards if shard is not None), ()))
    lists.extend(group_lists(load_groups(directory)))
    return tuple(dict.fromkeys(lists))


def verdicts_path(directory: Path, validation: ListValidation) -> Path:
    """One file per combination of suites: HumanEval-X's verdicts never stand for Csmith's."""
    return directory / VERDICTS_DIR / f"{'+'.join(suite.name for suite in validation.suites)}.json.gz"


def load_verdicts(path: Path) -> tuple[ListVerdict, ...]:
    """A verdicts file's entries (none when it does not exist yet); a damaged file is one InputError."""
    if not path.exists():
        return ()
    data = read_gzip_json(path, "not a stitchopt verdicts file; delete it and run `stitchopt labels validate` again")
    try:
        if data["format"] != VERDICTS_FORMAT:
            raise ValueError(f"format {data['format']}")
        return tuple(
            ListVerdict(tuple(entry["passes"]), bool(entry["passed"]), str(entry["note"]), str(entry["toolchain"]))
            for entry in data["verdicts"]
        )
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(
            f"{path}: not a verdicts file of format {VERDICTS_FORMAT} ({error}): delete it and run "
            "`stitchopt labels validate` again"
        ) from error


def judged_lists(directory: Path) -> dict[PassNames, bool]:
    """Each list with a verdict in the directory's files -> whether it passed every suite that judged it."""
    judged: dict[PassNames, bool] = {}
    for path in sorted((directory / VERDICTS_DIR).glob("*.json.gz")):
        for verdict in load_verdicts(path):
            judged[verdict.passes] = judged.get(verdict.passes, True) and verdict.passed
    return judged


def failed_lists(directory: Path) -> frozenset[PassNames]:
    """The lists that failed a suite in the directory's verdict files: studies leave them out of pools."""
    return frozenset(passes for passes, passed in judged_lists(directory).items() if not passed)


def validate_lists(
    directory: Path,
    lists: Sequence[PassNames],
    validation: ListValidation,
    catalogue: Catalogue,
    toolchain: str,
    on_list: Callable[[int, int], None] | None = None,
    on_save: Callable[[Path], None] | None = None,
) -> ValidationRun:
    """Validate the lists no verdict of this toolchain covers, saving the file after each one (a run stopped at
    any point keeps its verdicts); `on_list(done, total)` after each, `on_save(path)` every `COMMIT_EVERY`
    lists and after the last."""
    path = verdicts_path(directory, validation)
    known = {v.passes: v for v in load_verdicts(path)}
    todo = [passes for passes in dict.fromkeys(lists) if passes not in known or known[passes].toolchain != toolchain]
    for done, passes in enumerate(todo, 1):
        verified = validation.check(tuned_pipeline(passes, catalogue))
        known[passes] = ListVerdict(passes, verified.passed, verified.note, toolchain)
        _save(path, tuple(known.values()))
        if on_save is not None and (done % COMMIT_EVERY == 0 or done == len(todo)):
            on_save(path)
        if on_list is not None:
            on_list(done, len(todo))
    return ValidationRun(tuple(known.values()), len(todo), path)


def _save(path: Path, verdicts: Sequence[ListVerdict]) -> None:
    entries = [
        {"passes": list(v.passes), "passed": v.passed, "note": v.note, "toolchain": v.toolchain} for v in verdicts
    ]
    write_gzip_json(path, {"format": VERDICTS_FORMAT, "verdicts": entries})
