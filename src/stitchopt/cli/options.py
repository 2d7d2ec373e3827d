"""The CLI's conventions, declared once: every command takes its shared options from here, so an option means
the same everywhere (`tests/unit/test_cli_conventions.py` checks it over every command).

- A command's main input is an argument, never an option (no `--dataset`, `--input`, `--file`, `--program`).
- `--json` is a flag: one JSON document on stdout, status and progress on stderr.
- A file is written with `-o/--output FILE`, in `--format` (default: the file's suffix, else the command's
  natural format); `--format` without `-o` prints that format on stdout instead of the tables. A path to write
  is checked as the options are read (`writable_file_output`), so a bad one costs no work.
- `--validate SUITE` (repeatable) names validation suites; `--run '{exe} ARGS'` is how the program is run.
- Commands that evaluate take `--jobs --backend --address --cache-dir --llvm` and pass them to the Evaluator.
- A command ends with one of the exit statuses of `cli.exit_codes`; NEGATIVE is a verdict (validation failed, or
  nothing beat -Oz with `--fail-if-no-gain`), not an error.
"""

from __future__ import annotations

import math
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import Progress, ProgressColumn, TaskID
from rich.table import Table

from stitchopt.cache.store import CACHE_DIR_ENV, EvaluationStore, store_path
from stitchopt.cli.exit_codes import NEGATIVE
from stitchopt.core import Objective
from stitchopt.datasets.benchmarks import dataset_programs, is_dataset_uri, program_path
from stitchopt.errors import InputError
from stitchopt.evaluation.evaluator import BACKEND_ENV, Evaluator
from stitchopt.reports.tables import fit_columns
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import supported_suffixes
from stitchopt.tune.acceptance import ListValidation, list_validation
from stitchopt.validate.csmith import BuildProgress
from stitchopt.validate.suites import DATA_DIR_ENV

console = Console()  # results: tables, listings, answers
status_console = Console(stderr=True)  # progress, notes and status lines: stdout keeps only results (and --json)


def progress_bar(*columns: str | ProgressColumn, disable: bool = False, **options: Any) -> Progress:
    """A progress bar on stderr that leaves nothing behind, shown only on a terminal: elsewhere (a log, a pipe)
    rich would leave a blank line where the bar was."""
    return Progress(
        *columns, console=status_console, transient=True, disable=disable or not status_console.is_terminal, **options
    )


def time_left(elapsed: float, done: int, total: int) -> str:
    """How long a run `done` steps of `total` in has left ("about 1h05m left"; "done" at the end), from its mean
    time per step so far: the steps of a long run (units, programs) take seconds to minutes, too few for a short
    window."""
    if done >= total:
        return "done"
    minutes = round(elapsed / done * (total - done) / 60)
    if minutes < 1:
        return "under a minute left"
    return f"about {minutes // 60}h{minutes % 60:02d}m left" if minutes >= 60 else f"about {minutes}m left"


FILE_FORMATS = ("json", "csv", "md", "html")  # every format a command may write; each command supports some
EXE = "{exe}"  # stands for the built program in a --run command

LlvmOption = Annotated[
    Optional[Path],  # noqa: UP045 (typer needs Optional on Python 3.10)
    typer.Option("--llvm", help="LLVM bin directory (default: $STITCHOPT_LLVM, then versioned installs, then PATH)."),
]
CacheDirOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--cache-dir", help=f"Evaluation cache directory (default: ${CACHE_DIR_ENV} or the user cache)."),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Machine-readable output: one JSON document on stdout (status on stderr).")
]
JobsOption = Annotated[int, typer.Option("--jobs", min=0, help="Concurrent evaluations (default: all cores).")]
BackendOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--backend", help=f"auto (default), native, subprocess or ray (or ${BACKEND_ENV})."),
]
AddressOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--address", help="With --backend ray: the cluster to join (default: Ray's own, else a local one)."),
]
ModelOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--model", help="Model directory (default: the model shipped with stitchopt)."),
]
ModeOption = Annotated[
    str,
    typer.Option(
        help="static: the model's top-1 for this program and -Oz; jit: "
        "the top k lists and -Oz; search: a local search of --budget evaluations that starts from the top k "
        "lists (--k, default 10 here), and -Oz; hybrid: jit per hot function (--hot, --run, or else predicted "
        "by the hot-path model), static for the rest."
    ),
]
KOption = Annotated[
    int,
    typer.Option(
        "--k",
        min=1,
        help=(
            "How many of the model's lists jit mode compiles beside the baseline (at most all of them; with hybrid "
            "and search modes, where a command has them: hybrid's lists too, and search's seeds, 40 there)."
        ),
    ),
]
TopOption = Annotated[int, typer.Option(min=1, help="Show this many lists (at most all of them).")]
FailIfNoGainOption = Annotated[
    bool,
    typer.Option(
        "--fail-if-no-gain", help="Exit with status 1 when no answer beats -Oz (files are written all the same)."
    ),
]
ObjectiveOption = Annotated[
    str,
    typer.Option(
        help="Weighted terms: size, instructions, compile-time, perf (needs --run), security (security-relevant "
        "code lost, vs -Oz)."
    ),
]

ValidateOption = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--validate",
        help="Validation suite: humaneval, csmith, demo (the 25 built-in programs; ./demo names a directory), a "
        "directory of self-testing programs or a .jsonl(.gz) file (repeatable). Where validation is on by default, "
        "the default is humaneval when its data is found, else csmith (train adds demo); elsewhere giving a suite "
        "turns validation on.",
    ),
]
ValidateLimitOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--validate-limit", min=1, help="Validate on the first N programs of each suite (csmith: N programs)."
    ),
]
NoValidateOption = Annotated[
    bool, typer.Option("--no-validate", help="Skip full validation (guards still run): answers are NOT validated.")
]
DataDirOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--data-dir", help=f"Where humaneval_cpp.jsonl.gz is (default ${DATA_DIR_ENV})."),
]


def run_option(purpose: str) -> Any:
    """`--run`, the command string that runs the program (`run_arguments` reads it), saying what the run is for."""
    return typer.Option(
        "--run",
        help=f"{purpose}: a command where {EXE} is the built program, e.g. '{EXE} -v in.txt'.",
        callback=checked_run_command,
    )


def checked_run_command(ctx: typer.Context, param: typer.CallbackParam, run: str) -> str:
    """The callback of `--run`: a command given (even an empty one, which would otherwise read as no run) is
    checked as the options are read."""
    if ctx.resilient_parsing:  # (shell completion: nothing is run)
        return run
    source = ctx.get_parameter_source(param.name or "")  # (typer's own click: its enum, compared by name)
    if source is not None and source.name != "DEFAULT":
        run_arguments(run, inputs=any(option.name == "inputs" for option in ctx.command.params))
    return run


RunOption = Annotated[
    str, run_option("Also run each C/C++ program (its main) with the answer and compare with its -O0/-O2 builds")
]
InputsOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(help="Directory of inputs for --run (each fed on stdin, or substituted for {input})."),
]
PerfCounterOption = Annotated[
    str,
    typer.Option(
        "--perf-counter",
        help="How perf is measured: auto (valgrind instructions when installed, else seconds), instructions, seconds.",
    ),
]


def passes_option(what: str = "Flat list 'sroa,instcombine' or a pipeline") -> Any:
    """`-p/--passes`, the pass list a command measures, validates or shortens, saying which lists it takes."""
    return typer.Option("--passes", "-p", help=f"{what}.")


PassesOption = Annotated[str, passes_option()]


def output_option(what: str, directory: bool = False) -> Any:
    """`-o/--output`, saying what this command writes there (typer's OptionInfo); the path is checked as the
    options are read, so a bad one costs no work."""
    return typer.Option(
        "-o", "--output", help=what, callback=writable_directory_output if directory else writable_file_output
    )


def writable_file_output(param: typer.CallbackParam, path: Path | None) -> Path | None:
    """The callback of an option naming a file to write (`-o`, `--log`): checked as the options are read."""
    return None if path is None else writable_file(param.opts[0], path)


def writable_directory_output(param: typer.CallbackParam, path: Path | None) -> Path | None:
    """The callback of an option naming a directory to create or fill (`train -o`, `--save-model`)."""
    return None if path is None else writable_directory(param.opts[0], path)


def writable_file(option: str, path: Path) -> Path:
    """A file the command will write, tried before any work: the parent directory must exist and take a new
    file (tried by creating it exclusively and removing it again: permission bits say nothing for root or /proc),
    and an existing regular file must open for writing (without truncating it). A link is checked where it
    points and left in place; a device or a pipe (/dev/stderr) is taken as it is. Found after the work, the work
    would be lost."""
    target = path.resolve()
    if target.is_dir():
        raise InputError(f"{option} {path}: is a directory: name a file to write")
    if not target.parent.is_dir():
        raise InputError(
            f"{option} {path}: {target.parent} is not an existing directory: create it or choose another path"
        )
    try:
        if not target.exists():
            os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            target.unlink()
        elif target.is_file():
            with open(target, "a"):
                pass
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot be written ({exc.strerror}): choose a path you may write") from exc
    return path


def writable_directory(option: str, path: Path) -> Path:
    """A directory the command will create or fill, checked before any work: not a file, and its nearest
    existing ancestor a directory that takes new entries."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{option} {path}: is a file, not a directory: name a directory to write")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise InputError(f"{option} {path}: {existing} is a file, not a directory: choose another path")
    try:
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as exc:
        raise InputError(
            f"{option} {path}: {existing} cannot be written ({exc.strerror}): choose another path"
        ) from exc
    return path


def format_option(formats: Sequence[str]) -> Any:
    """`--format`, naming the formats this command writes; the first is its natural one."""
    return typer.Option(
        "--format",
        help=f"{', '.join(formats)}: the -o file's format (default: its suffix, else {formats[0]}); without -o, "
        "printed on stdout instead of the tables.",
    )


def open_store(cache_dir: Path | None) -> EvaluationStore:
    return EvaluationStore(store_path(cache_dir))


@contextmanager
def open_evaluator(
    toolchain: Toolchain, cache_dir: Path | None, jobs: int, backend: str | None, address: str | None = None
) -> Iterator[Evaluator]:
    """The Evaluator every evaluating command uses: its --cache-dir, --jobs (0: all cores), --backend (and
    --address for Ray); its workers and its cache are closed together at the end."""
    with (
        open_store(cache_dir) as store,
        Evaluator(toolchain, store, jobs=jobs or None, backend=backend, address=address) as evaluator,
    ):
        yield evaluator


def exit_if_no_gain(asked: bool, gained: bool) -> None:
    """--fail-if-no-gain: NEGATIVE once the results are written and shown, so a script can tell "nothing beat
    -Oz" from success without parsing them."""
    if asked and not gained:
        status_console.print("nothing beat -Oz: exit status 1 (--fail-if-no-gain)", highlight=False)
        raise typer.Exit(NEGATIVE)


def print_table(table: Table) -> None:
    """At the terminal's width, no cell cut: a table too wide for it wraps its headers, else is split into
    several that repeat its first column (`reports.tables.fit_columns`)."""
    for part in fit_columns(table, console):
        console.print(part)


def refuse_ignored(ctx: typer.Context, names: Sequence[str], applies: str) -> None:
    """A one-line error (exit 2) for an option given where it would be ignored: an option accepted and silently
    dropped makes the user believe it took effect."""
    for param in ctx.command.params:
        if not (param.name and param.name in names):
            continue
        source = ctx.get_parameter_source(param.name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):  # given, not defaulted
            raise InputError(f"{max(param.opts, key=len)} only applies {applies}: drop it")


def refuse_data_dir_without_humaneval(ctx: typer.Context, suites: Sequence[str] | None) -> None:
    """--data-dir only locates the HumanEval-X data: refused when suites are named and none is humaneval (with
    none named, the default suite is humaneval when its data is found)."""
    if suites and "humaneval" not in suites:
        refuse_ignored(ctx, ("data_dir",), "to the humaneval suite")


@dataclass(frozen=True)
class Destination:
    """Where results go: JSON on stdout (--json), a format in -o's file or on stdout (--format), else tables."""

    output: Path | None
    fmt: str | None  # None: neither -o nor --format
    json_output: bool = False

    @property
    def tables(self) -> bool:
        """Whether stdout is free for the tables (nothing else was printed there)."""
        return not self.json_output and (self.fmt is None or self.output is not None)

    def write(self, render: Callable[[str], str]) -> None:
        """`render(format)` (text ending in a newline) wherever the options say."""
        if self.json_output:
            sys.stdout.write(render("json"))
        if self.fmt is None:
            return
        if self.output is None:
            sys.stdout.write(render(self.fmt))
            return
        self.output.write_text(render(self.fmt))
        status_console.print(f"wrote {self.output}", highlight=False)


def destination(output: Path | None, fmt: str | None, formats: Sequence[str], json_output: bool = False) -> Destination:
    """-o, --format and --json checked against the formats this command writes (natural one first)."""
    if fmt is None and output is None:
        return Destination(None, None, json_output)
    if json_output and output is None:
        raise InputError("--json and --format both print on stdout: give -o FILE for the --format one")
    suffix = output.suffix.lstrip(".") if output is not None else ""
    chosen = fmt or (suffix if suffix in FILE_FORMATS else formats[0])
    if chosen not in formats:
        raise InputError(f"format {chosen!r} not supported here: use one of {', '.join(formats)}")
    return Destination(output, chosen, json_output)


def status_note(text: str) -> None:
    """A status line on stderr (e.g. which validation suite stands in for HumanEval-X)."""
    status_console.print(text, highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class ValidationChoice:
    """--validate SUITE..., --validate-limit and --data-dir as one choice: on or off, and on which suites."""

    enabled: bool
    suites: list[str] | None
    limit: int | None
    data_dir: Path | None

    def open(self, evaluator: Evaluator, bar: Progress | None = None) -> ListValidation | None:
        """The validation; a status line says when it falls back to Csmith, and `bar` shows that suite being built."""
        if not self.enabled:
            return None
        return list_validation(
            evaluator,
            self.suites,
            limit=self.limit,
            data_dir=self.data_dir,
            note=status_note,
            progress=suite_build_bar(bar) if bar is not None else None,
        )


def suite_build_bar(bar: Progress) -> BuildProgress:
    """A line in `bar`, added on the first report, that follows the building of a Csmith suite: a minute or more
    when nothing is cached, which would otherwise look like a hang."""
    tasks: list[TaskID] = []

    def advance(ready: int, wanted: int) -> None:
        if not tasks:
            tasks.append(bar.add_task("", total=wanted))
        bar.update(
            tasks[0], completed=ready, description=f"validation suite: {ready} of {wanted} Csmith programs built"
        )

    return advance


def validation_choice(
    ctx: typer.Context, suites: list[str] | None, limit: int | None, data_dir: Path | None, no_validate: bool | None
) -> ValidationChoice:
    """`no_validate` None: validation is off unless suites are named; else it is on unless --no-validate. Options
    that would be ignored are refused."""
    enabled = bool(suites) if no_validate is None else not no_validate
    if not enabled:
        applies = "with --validate" if no_validate is None else "with validation (without --no-validate)"
        refuse_ignored(ctx, ("validate", "validate_limit", "data_dir"), applies)
    refuse_data_dir_without_humaneval(ctx, suites)
    return ValidationChoice(enabled, suites, limit, data_dir)


def require_positive(option: str, value: float | None) -> None:
    """A time or an amount that must be a finite number above 0 (None: not given), else a one-line error."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"{option} {value:g}: give a finite number above 0")


def run_arguments(run: str, inputs: bool = False) -> tuple[str, ...]:
    """The program's arguments in a `--run '{exe} ARGS'` command (shell quoting); a bad command is one line
    (`inputs`: the command has --inputs, which a redirection from a file is told of)."""
    try:
        words = shlex.split(run)
    except ValueError as exc:
        raise InputError(f"--run {run!r}: {exc} (quote it as in a shell)") from exc
    if operator := _shell_operator(run):
        stdin = " (--inputs feeds each input file on stdin)" if "<" in operator and inputs else ""
        raise InputError(
            f"--run {run!r}: {operator!r} would reach the program as an argument (the command is not run by a "
            f"shell): give the program's arguments only{stdin}"
        )
    if not words or words[0] != EXE:
        raise InputError(f"--run must start with {EXE}, the program: e.g. --run '{EXE} input.txt'")
    return tuple(words[1:])


def _shell_operator(run: str) -> str | None:
    """The first pipe, redirection, `;`, `&` or parenthesis written outside quotes in `run`, if any."""
    lexer = shlex.shlex(run, posix=False, punctuation_chars=True)  # (not posix: quoted words keep their quotes)
    lexer.whitespace_split = True
    try:
        return next((token for token in lexer if token and set(token) <= set(lexer.punctuation_chars)), None)
    except ValueError:  # quoting POSIX's split takes and this one does not (`"\""`): no operator found
        return None


def parse_objective(text: str) -> Objective:
    """`--objective size=1,compile-time=0.1` as an Objective; a malformed one is a one-line error that names
    the option and the bad term."""
    try:
        return Objective.parse(text)
    except ValueError as exc:
        raise InputError(f"--objective {text!r}: {exc}") from exc


def target_paths(targets: list[str], toolchain: Toolchain) -> list[Path]:
    """Files, directories (their C/C++/IR files), bench:// URIs and whole datasets (`bench://pypi-v1`, or
    `bench://pypi-v1?split=test` for one split), in the given order; a missing path or a directory without
    programs is a one-line error before any work."""
    paths: list[Path] = []
    for target in targets:
        if is_dataset_uri(target):
            uri, _, query = target.partition("?split=")
            paths += dataset_programs(uri, split=query or None)
            continue
        path = program_path(target, toolchain)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in supported_suffixes())
            if not found:
                raise InputError(
                    f"{target}: no C/C++/.ll/.bc files in this directory (subdirectories are not searched)"
                )
            paths += found
        elif path.exists():
            paths.append(path)
        else:
            raise InputError(f"{target}: no such file or directory")
    if not paths:
        raise InputError("no programs given: give C/C++/.ll/.bc files, directories or bench:// URIs")
    return paths


def require_stitch_extra() -> None:
    """A one-line error naming the `stitch` extra when PyTorch or POT is missing (imported here, not at start-up)."""
    try:
        import ot  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise InputError(f"this command needs PyTorch and POT ({exc}): pip install 'stitchopt[stitch]'") from exc
