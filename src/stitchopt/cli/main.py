"""The `stitchopt` command: the app with every command registered, and the one entry point that turns what
happened into an exit status (EXIT_STATUSES)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Annotated, NoReturn

import typer

from stitchopt.cli.cache import cache_app
from stitchopt.cli.datasets import datasets_app
from stitchopt.cli.demo import demo_command
from stitchopt.cli.doctor import doctor_command, show_version
from stitchopt.cli.exit_codes import INTERNAL_ERROR, INTERRUPTED, INTERRUPTED_LINE, NEGATIVE, SUCCESS, USER_ERROR
from stitchopt.cli.gpu import gpu_app
from stitchopt.cli.heldout import evaluate_command
from stitchopt.cli.hot import hot_command
from stitchopt.cli.labels import labels_app
from stitchopt.cli.learn import optimize_command, predict_command, train_command
from stitchopt.cli.lift import lift_eval_command
from stitchopt.cli.measure import eval_command, ir_command, passes_command
from stitchopt.cli.plugin import plugin_app
from stitchopt.cli.report import report_command
from stitchopt.cli.security import security_app
from stitchopt.cli.serve import serve_command
from stitchopt.cli.stitch import stitch_app
from stitchopt.cli.tune import broadcast_command, minimize_command, pareto_command, tune_command
from stitchopt.cli.validate import validate_command
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

app = typer.Typer(
    help="Choose LLVM optimization pass lists that make programs smaller and faster.",
    epilog=EXIT_STATUSES,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("doctor")(doctor_command)
app.command("ir")(ir_command)
app.command("passes")(passes_command)
app.command("eval")(eval_command)
app.command("demo")(demo_command)
app.command("validate")(validate_command)
app.command("train")(train_command)
app.command("predict")(predict_command)
app.command("optimize")(optimize_command)
app.command("evaluate")(evaluate_command)
app.command("report")(report_command)
app.command("hot")(hot_command)
app.command("lift-eval")(lift_eval_command)
app.command("tune")(tune_command)
app.command("broadcast")(broadcast_command)
app.command("pareto")(pareto_command)
app.command("minimize")(minimize_command)
app.command("serve")(serve_command)
app.add_typer(labels_app, name="labels")
app.add_typer(datasets_app, name="datasets")
app.add_typer(stitch_app, name="stitch")
app.add_typer(security_app, name="security")
app.add_typer(cache_app, name="cache")
app.add_typer(plugin_app, name="plugin")
app.add_typer(gpu_app, name="gpu")


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=show_version,
            help="Print the versions of stitchopt, the LLVM it finds and the shipped model.",
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help=f"Print the traceback of an internal error (also {DEBUG_ENV}=1).")
    ] = False,
) -> None:
    """Options before the command; --version answers at once (eager), --debug is for exit_status()."""
    if debug:
        os.environ[DEBUG_ENV] = "1"  # read by exit_status(), which sees the exception after the command


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
            returned = app(args=args, prog_name="stitchopt", standalone_mode=False)
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
