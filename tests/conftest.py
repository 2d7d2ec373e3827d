"""Shared fixtures: the real LLVM toolchain (found once per session), the tiny test programs, and the commands of
`stitchopt`."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import typer
from click import Command
from typer.core import TyperGroup

from stitchopt.cache.store import EvaluationStore
from stitchopt.cc.client import SERVER_DIR_ENV, server_paths, stop_server
from stitchopt.cli.main import command_app
from stitchopt.core import IRModule
from stitchopt.errors import ToolchainError
from stitchopt.evaluation.evaluator import BACKEND_ENV, Evaluator
from stitchopt.evaluation.native.pool import probe_native
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.toolchain.cuda import CudaToolkit, find_cuda, openmp_offload_bitcode
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.frontend import load_module

DATA = Path(__file__).parent / "data"


def _native_unavailable(toolchain: Toolchain) -> str | None:
    """Why tests of the native evaluator cannot run here, or None."""
    if os.environ.get(BACKEND_ENV) == "subprocess":
        return f"native backend disabled by {BACKEND_ENV}=subprocess"
    probe = probe_native(toolchain)
    return None if probe.available else f"native evaluator unavailable: {probe.reason}"


@pytest.fixture(scope="session", autouse=True)
def compile_servers_of_this_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Model builds through the installed `stitchopt-cc` start a compile server: the servers of a test run live
    in a directory of its own (never the user's) and are stopped when it ends, so no test leaves one behind."""
    os.environ["XDG_RUNTIME_DIR"] = str(tmp_path_factory.mktemp("run"))
    os.environ.pop(SERVER_DIR_ENV, None)
    yield
    stop_server(server_paths(create=False))


@pytest.fixture(scope="session", autouse=True)
def interruptible_children() -> None:
    """Tests send Ctrl-C to the commands they start, which inherit an ignored SIGINT (as a suite started as a
    background job of a script has it) and would not stop; a handler here leaves them the default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_report_header() -> str:
    try:
        reason = _native_unavailable(find_toolchain())
    except ToolchainError as exc:
        return f"LLVM toolchain: {exc}"
    return reason or "native evaluator: tested"


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return find_toolchain()


@pytest.fixture()
def toolchain_with_opt(toolchain: Toolchain, tmp_path: Path) -> Callable[[str], Toolchain]:
    """A toolchain like the real one but for `opt`, which is the given script (for error paths: an opt that
    corrupts, hangs, ...)."""

    def make(script: str) -> Toolchain:
        fake = tmp_path / "bin"
        fake.mkdir(exist_ok=True)
        for name, path in toolchain.tools.items():
            if name != "opt" and not (fake / name).exists():
                (fake / name).symlink_to(path)
        (fake / "opt").write_text(script)
        (fake / "opt").chmod(0o755)
        return find_toolchain(fake)

    return make


@pytest.fixture(scope="session")
def native_available(toolchain: Toolchain) -> None:
    """Skips, with the reason, a test of the native evaluator where it cannot run (a subprocess-only install)."""
    reason = _native_unavailable(toolchain)
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def cuda() -> CudaToolkit:
    """The CUDA toolkit GPU tests measure with; they are skipped without one."""
    try:
        return find_cuda()
    except ToolchainError as exc:
        pytest.skip(f"{exc} (make test installs the gpu extra)")


@pytest.fixture(scope="session")
def openmp_runtime(toolchain: Toolchain, cuda: CudaToolkit) -> Path:
    """LLVM's OpenMP device runtime bitcode for sm_90, which OpenMP target regions are built with as a program's
    build links it in; tests that build them are skipped without it."""
    library = openmp_offload_bitcode(toolchain, "sm_90")
    if library is None:
        pytest.skip("no OpenMP device runtime bitcode: libomp-19-dev (make test installs it)")
    return library


@pytest.fixture(scope="session")
def catalogue(toolchain: Toolchain) -> Catalogue:
    return load_catalogue(toolchain)


@pytest.fixture(scope="session")
def loop_sum(toolchain: Toolchain) -> IRModule:
    return load_module(toolchain, DATA / "loop_sum.c")


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """For a module that asks (`usefixtures("one_thread")`): numpy's BLAS and torch (when the module imported it) on
    one thread. Their models and matrices are tiny, and on a busy 2-core machine a second thread only spins: the
    stitching tests took 3-10x longer."""
    with ExitStack() as stack:
        if importlib.util.find_spec("threadpoolctl") is not None:  # installed with scikit-learn (the stitch extra)
            stack.enter_context(importlib.import_module("threadpoolctl").threadpool_limits(1))
        torch = sys.modules.get("torch")
        if torch is not None:
            stack.callback(torch.set_num_threads, torch.get_num_threads())
            torch.set_num_threads(1)
        yield


@pytest.fixture()
def store(tmp_path: Path) -> EvaluationStore:
    with EvaluationStore(tmp_path / "cache.sqlite") as opened:
        yield opened  # type: ignore[misc]


@pytest.fixture(params=["subprocess", "native"])
def evaluator(request: pytest.FixtureRequest, toolchain: Toolchain, store: EvaluationStore) -> Iterator[Evaluator]:
    """Both backends: every property tested through this fixture must hold for each."""
    if request.param == "native":
        request.getfixturevalue("native_available")
    with Evaluator(toolchain, store, backend=request.param) as opened:
        yield opened


@pytest.fixture(scope="session")
def cli_commands() -> dict[str, Command]:
    """Every command and subcommand ("tune", "stitch table"), found in the app itself (typer's own click)."""
    found: dict[str, Command] = {}
    pending: list[tuple[str, Command]] = [("", typer.main.get_command(command_app()))]
    while pending:
        path, command = pending.pop()
        if isinstance(command, TyperGroup):
            pending += [(f"{path} {name}".strip(), sub) for name, sub in command.commands.items()]
        else:
            found[path] = command
    return found
