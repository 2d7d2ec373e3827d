"""The `stitchopt` command: the table of commands, loaded one at a time, and the one entry point that turns what
happened into an exit status (EXIT_STATUSES)."""

from __future__ import annotations

import importlib
import itertools
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Annotated, NoReturn

import typer

from stitchopt.cli.exit_codes import INTERNAL_ERROR, INTERRUPTED, INTERRUPTED_LINE, NEGATIVE, SUCCESS, USER_ERROR
from stitchopt.diagnostics import warning_line
from stitchopt.errors import StitchoptError

DEBUG_ENV = "STITCHOPT_DEBUG"
EXIT_STATUSES = (
    f"Exit status: {SUCCESS} success; {NEGATIVE} a negative verdict (validation failed, or nothing beat -Oz with "
    f"--fail-if-no-gain); {USER_ERROR} a user error (bad input or option, a path that cannot be read or written); "
    f"{INTERNAL_ERROR} an internal error (its traceback with --debug or {DEBUG_ENV}=1); {INTERRUPTED} interrupted."
)
# What to do about a path the command could not read or write (OSError with a filename): the user's to fix.
PATH_ERRORS: dict[type[OSError], str] = {
    FileNotFoundError: "check the path (a file to write needs an existing directory)",
    PermissionError: "choose a path you may read or write",
    IsADirectoryError: "name a file, not a directory",
    NotADirectoryError: "a part of the path is a file, not a directory",
    FileExistsError: "a file is in the way of a directory to create: choose another path",
}

# Every command by name: its module and the command function or Typer group there. A run loads the one it names
# (`command_app`), not the others' modules, which were a quarter to a half of a command's start.
COMMANDS: dict[str, tuple[str, str]] = {
    "doctor": ("stitchopt.cli.doctor", "doctor_command"),
    "ir": ("stitchopt.cli.measure", "ir_command"),
    "passes": ("stitchopt.cli.measure", "passes_command"),
    "eval": ("stitchopt.cli.measure", "eval_command"),
    "demo": ("stitchopt.cli.demo", "demo_command"),
    "validate": ("stitchopt.cli.validate", "validate_command"),
    "train": ("stitchopt.cli.learn", "train_command"),
    "predict": ("stitchopt.cli.learn", "predict_command"),
    "optimize": ("stitchopt.cli.learn", "optimize_command"),
    "evaluate": ("stitchopt.cli.heldout", "evaluate_command"),
    "report": ("stitchopt.cli.report", "report_command"),
    "hot": ("stitchopt.cli.hot", "hot_command"),
    "lift-eval": ("stitchopt.cli.lift", "lift_eval_command"),
    "tune": ("stitchopt.cli.tune", "tune_command"),
    "broadcast": ("stitchopt.cli.tune", "broadcast_command"),
    "pareto": ("stitchopt.cli.tune", "pareto_command"),
    "minimize": ("stitchopt.cli.tune", "minimize_command"),
    "serve": ("stitchopt.cli.serve", "serve_command"),
    "labels": ("stitchopt.cli.labels", "labels_app"),
    "datasets": ("stitchopt.cli.datasets", "datasets_app"),
    "stitch": ("stitchopt.cli.stitch", "stitch_app"),
    "security": ("stitchopt.cli.security", "security_app"),
    "cache": ("stitchopt.cli.cache", "cache_app"),
    "plugin": ("stitchopt.cli.plugin", "plugin_app"),
    "gpu": ("stitchopt.cli.gpu", "gpu_app"),
}


def command_app(names: Iterable[str] = COMMANDS) -> typer.Typer:
    """The app with the commands `names` registered, their modules loaded (all by default)."""
    app = typer.Typer(
        help="Choose LLVM optimization pass lists that make programs smaller and faster.",
        epilog=EXIT_STATUSES,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    app.callback()(_global_options)
    for name in names:
        module, attribute = COMMANDS[name]
        command = getattr(importlib.import_module(module), attribute)
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        else:
            app.command(name)(command)
    return app


def _show_version(shown: bool) -> None:
    """The eager `--version` callback; doctor's modules are loaded only when it is given."""
    if shown:
        importlib.import_module("stitchopt.cli.doctor").show_version(shown)


def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_show_version,
            help="Print the versions of stitchopt, the LLVM it finds and the shipped model.",
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help=f"Print the traceback of an internal error (also {DEBUG_ENV}=1).")
    ] = False,
) -> None:
    """Options before the command: --version answers at once (eager); --debug is read by `_run` before the
    command's modules load (one that fails to load shows its traceback too)."""


def main(args: Sequence[str] | None = None) -> NoReturn:
    """The entry point: every way a command ends becomes one exit status (EXIT_STATUSES), an error one line."""
    sys.exit(exit_status(args))


def exit_status(args: Sequence[str] | None = None) -> int:
    """Runs the command; what it returns, raises or is interrupted by, as an exit status."""
    warnings.formatwarning = warning_line
    with terminated_as_interrupt():
        return _run(args)


@contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (a kill, the end of a session) raised as a Ctrl-C is: commands then keep what they finished
    (label shards) and clean up as they do on Ctrl-C. Only where signals can be set (the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run(args: Sequence[str] | None) -> int:
    """The command run, its outcome as an exit status (what `exit_status` says)."""
    try:
        try:
            # Not standalone: click raises usage errors (printed here as one line) and returns typer.Exit's status.
            words = list(sys.argv[1:] if args is None else args)
            if "--debug" in _leading_options(words):  # before the command's modules load: that can fail too
                os.environ[DEBUG_ENV] = "1"
            returned = command_app(_commands_to_load(words))(args=args, prog_name="stitchopt", standalone_mode=False)
        except Exception as exc:
            if not _raised_unwinding_an_interrupt(exc):
                raise
            if _debugging():
                traceback.print_exception(exc)  # a cleanup that fails under a signal may still be a bug
            raise KeyboardInterrupt from exc
        status = returned if isinstance(returned, int) else SUCCESS
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else SUCCESS if exc.code is None else NEGATIVE
    except (KeyboardInterrupt, typer.Abort):
        status = INTERRUPTED
    except typer.TyperException as exc:  # usage errors: an unknown option, a bad option value, a missing argument
        if not str(exc.format_message() if hasattr(exc, "format_message") else exc).strip():
            return USER_ERROR  # a command group run bare: click printed its help, there is nothing to add
        return _error(exc, f"stitchopt: error: {_usage_line(exc)}", USER_ERROR)
    except StitchoptError as exc:
        return _error(exc, f"stitchopt: error: {exc}", USER_ERROR)
    except OSError as exc:
        hint = PATH_ERRORS.get(type(exc)) if exc.filename is not None else None
        if hint is None:
            return _internal_error(exc)
        return _error(exc, f"stitchopt: error: {exc.filename}: {exc.strerror}: {hint}", USER_ERROR)
    except Exception as exc:
        return _internal_error(exc)
    if status == INTERRUPTED:  # typer ends a Ctrl-C with this status, silently
        print(INTERRUPTED_LINE, file=sys.stderr)
    return status


def _leading_options(args: list[str]) -> list[str]:
    """The options before the command (they take no value: the command is the first word that is not one)."""
    return list(itertools.takewhile(lambda arg: arg.startswith("-"), args))


def _commands_to_load(args: list[str]) -> Iterable[str]:
    """The command a command line names; none for --version, which answers alone; every one where it names
    none or one not in the table (the help lists them all; click suggests the nearest name to a typo)."""
    options = _leading_options(args)
    if "--version" in options and "--help" not in options:
        return ()
    named = args[len(options)] if len(options) < len(args) else None
    return (named,) if named in COMMANDS else COMMANDS


def _raised_unwinding_an_interrupt(exc: BaseException) -> bool:
    """An error raised while a Ctrl-C (or SIGTERM) unwinds the command is the interrupt's: e.g. the signal
    landed inside a queue's lock handling, whose cleanup then fails with "release unlocked lock"."""
    cause = exc.__context__
    while cause is not None:  # Python keeps the chain free of cycles
        if isinstance(cause, KeyboardInterrupt):
            return True
        cause = cause.__context__
    return False


def _usage_line(exc: typer.TyperException) -> str:
    """click's message for a usage error, and where the command's options are listed."""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    context = getattr(exc, "ctx", None)
    return f"{message} (see `{context.command_path} --help`)" if context is not None else message


def _internal_error(exc: Exception) -> int:
    """A bug: its type and first line, and how to see the traceback."""
    text = str(exc).strip()
    what = f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
    line = f"stitchopt: internal error: {what} (run with --debug or {DEBUG_ENV}=1 for the traceback)"
    return _error(exc, line, INTERNAL_ERROR)


def _error(exc: BaseException, line: str, status: int) -> int:
    """One line on stderr; the traceback before it only when debugging."""
    if _debugging():
        traceback.print_exception(exc)
    print(line, file=sys.stderr)
    return status


def _debugging() -> bool:
    """--debug or STITCHOPT_DEBUG set: tracebacks are shown."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")
