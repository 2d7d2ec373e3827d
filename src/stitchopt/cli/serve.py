"""`stitchopt serve`: the compile server that keeps `stitchopt-cc`'s model builds at a few milliseconds of
overhead per compile (`cc.server`). A build starts it by itself; this command starts it ahead of a build, runs
it in the foreground, says whether it runs, or stops it."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from stitchopt.cc.client import IDLE_ENV, server_paths, server_status, start_server, stop_server
from stitchopt.cc.server import serve
from stitchopt.cli.options import JsonOption, console, require_positive, status_console
from stitchopt.errors import InputError


def serve_command(
    status: Annotated[
        bool, typer.Option("--status", help="Say whether the server runs, and what it is doing.")
    ] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Stop the server; the compiles it runs finish.")] = False,
    foreground: Annotated[
        bool, typer.Option("--foreground", help="Run the server in this process, logging to stderr, until stopped.")
    ] = False,
    idle: Annotated[
        Optional[float],  # noqa: UP045 (typer needs Optional on Python 3.10)
        typer.Option(
            "--idle", min=1, help=f"Exit after this many seconds without a compile (default: ${IDLE_ENV}, else 600)."
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Start the compile server of stitchopt-cc in the background (a build starts it on its first compile)."""
    require_positive("--idle", idle)
    if status + stop + foreground > 1:
        raise InputError("give one of --status, --stop and --foreground")
    if json_output and not status:
        raise InputError("--json goes with --status")
    if idle is not None and (status or stop):
        raise InputError("--idle goes with starting the server")
    paths = server_paths(create=not (status or stop))
    if status:
        info = server_status(paths)
        document = {"running": info is not None, "socket": paths.socket, "log": paths.log, **(info or {})}
        if json_output:
            print(json.dumps(document, indent=2))
        elif info is None:
            console.print(f"no compile server runs ({paths.socket})", highlight=False, markup=False, soft_wrap=True)
        else:
            console.print(
                f"compile server {info['pid']}: {info['busy']} of {info['workers']} workers busy, {info['queued']} "
                f"queued; {info['served']} compiles in {info['uptime_s']:.0f} s; exits after {info['idle_exit_s']:g} "
                f"s idle\nsocket {paths.socket}\nlog {paths.log}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    elif stop:
        pid = stop_server(paths)
        status_console.print(
            "no compile server runs" if pid is None else f"compile server {pid} stops (its compiles finish)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    elif foreground:
        serve(paths, idle_s=idle)
    else:
        pid = start_server(paths, idle_s=idle)
        status_console.print(
            f"compile server {pid} runs ({paths.socket})", highlight=False, markup=False, soft_wrap=True
        )
