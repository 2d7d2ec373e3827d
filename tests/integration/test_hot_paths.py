"""Hot-path prediction on real profiles: collection, labels, a tiny LSTM (trained with PyTorch, run with
NumPy), the shipped model in `stitchopt hot` and in hybrid mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stitchopt.datasets.demo import demo_programs
from stitchopt.hotpath.blocks import FEATURES, ProgramBlocks, program_blocks
from stitchopt.hotpath.evaluate import loop_depth, lstm, score, static_frequency
from stitchopt.hotpath.labels import hot_blocks, hot_functions, hot_path, split_by_function
from stitchopt.hotpath.model import HotPathModel
from stitchopt.hotpath.profile import cached_profile, profile_program
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.validate.suites import source_program

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent.parent / "data"


def _profiled(toolchain: Toolchain, path: Path, *args: str) -> ProgramBlocks:
    profiled = profile_program(toolchain, source_program(path, run_args=args))
    assert profiled.annotated_ir is not None
    return program_blocks(toolchain, path.stem, profiled.plain_ir, profiled.annotated_ir)


@pytest.fixture(scope="module")
def hot_loop(toolchain: Toolchain) -> ProgramBlocks:
    return _profiled(toolchain, DATA / "hot_loop.c", "2")


def test_profiles_map_onto_every_block_of_the_unoptimized_ir(hot_loop: ProgramBlocks) -> None:
    functions = {f.name: f for f in hot_loop.functions}
    assert set(functions) == {"main", "work", "report", "mix"} and hot_loop.profiled
    assert functions["mix"].counts is not None and functions["mix"].counts.tolist() == [40000.0]
    work = functions["work"]
    assert work.counts is not None and work.counts[0] == 2  # entered twice (repeat = 2)
    assert work.loop_depth.max() == 1 and max(work.counts) > 20000  # the loop, read through branch weights
    assert all(f.features.shape == (len(f.labels), len(FEATURES)) for f in hot_loop.functions)
    assert work.successors[0] == (1,) and not work.successors[-1]  # entry jumps to the loop; the last block returns


def test_labels_take_the_fewest_blocks_covering_ninety_percent(hot_loop: ProgramBlocks) -> None:
    by_function = dict(
        zip((f.name for f in hot_loop.functions), split_by_function(hot_loop, hot_blocks(hot_loop)), strict=True)
    )
    assert by_function["mix"].all() and not by_function["main"].any() and not by_function["report"].any()
    assert 0 < by_function["work"].sum() < len(by_function["work"])  # the loop, not the entry or the exit
    assert hot_functions(hot_loop) == ["work", "mix"]
    work = next(f for f in hot_loop.functions if f.name == "work")
    assert work.counts is not None
    path = hot_path(work, work.counts.tolist())
    assert path[0] == 0 and all(b in work.successors[a] for a, b in zip(path, path[1:], strict=False))
    assert all(by_function["work"][i] for i in path[1:])  # after the entry, the path stays in the hot loop


def test_profiles_are_cached_and_a_crashing_run_keeps_what_it_can(toolchain: Toolchain, store) -> None:  # type: ignore[no-untyped-def]
    program = source_program(DATA / "hot_loop.c", run_args=("1",))
    first = cached_profile(toolchain, program, store)
    assert cached_profile(toolchain, program, store) == first
    refused = profile_program(toolchain, source_program(DATA / "hot_loop.c", run_args=("-1",)))
    assert refused.annotated_ir is not None  # exit status 2 still writes counters: a profile of that run


def test_a_tiny_lstm_trains_runs_in_numpy_and_round_trips(
    toolchain: Toolchain, hot_loop: ProgramBlocks, tmp_path: Path
) -> None:
    torch = pytest.importorskip("torch")
    from stitchopt.studies.hotpath.train import LSTMConfig, _Net, train_lstm

    demo = sorted(demo_programs().values())
    train = [hot_loop, *(_profiled(toolchain, path) for path in demo[:2])]
    held_out = [_profiled(toolchain, demo[2])]
    model = train_lstm(train, held_out, LSTMConfig(hidden=4, epochs=3, seed=0))
    again = train_lstm(train, held_out, LSTMConfig(hidden=4, epochs=3, seed=0))
    assert all(np.array_equal(model.weights[k], again.weights[k]) for k in model.weights)  # deterministic
    net = _Net(len(FEATURES), 4)
    net.load_state_dict({k: torch.tensor(v, dtype=torch.float32) for k, v in model.weights.items()})
    function = max(held_out[0].functions, key=lambda f: len(f.labels))
    x = torch.tensor((function.features - model.mean) / model.scale, dtype=torch.float32)[None]
    expected = torch.sigmoid(net(x, torch.tensor([len(function.labels)]))).detach().numpy()[0]
    assert np.allclose(model.function_probabilities(function.features), expected, atol=1e-5)
    model.save_pretrained(tmp_path / "hot")
    loaded = HotPathModel.from_pretrained(tmp_path / "hot")
    assert np.allclose(loaded.function_probabilities(function.features), expected, atol=1e-5)
    assert loaded.threshold == model.threshold
    for name, predictor in (("lstm", lstm(loaded)), ("static", static_frequency), ("loops", loop_depth)):
        result = score(name, predictor, held_out)
        assert 0 <= result.accuracy <= 1 and 0 <= result.f1 <= 1 and result.blocks > 0


def test_hot_command_and_hybrid_mode_use_the_shipped_model(tmp_path: Path) -> None:
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env, timeout=300
        )

    predicted = cli("hot", str(DATA / "hot_loop.c"))
    assert predicted.returncode == 0 and "work" in predicted.stdout, predicted.stderr
    compared = cli("hot", str(DATA / "hot_loop.c"), "--run", "{exe} 2")
    assert compared.returncode == 0 and "measured hot functions: work, mix" in compared.stdout, compared.stderr
    assert "LLVM static frequency: accuracy" in compared.stdout
    bad = cli("hot", str(DATA / "hot_loop.c"), "--run", "valgrind {exe}")
    assert bad.returncode == 2 and "--run must start with {exe}" in bad.stderr
    malformed = cli("hot", str(DATA / "malformed.ll"))
    assert malformed.returncode == 2 and "malformed IR at line" in malformed.stderr
    built = cli("optimize", str(DATA / "hot_loop.c"), "-o", str(tmp_path / "out.o"), "--mode", "hybrid", "--k", "2")
    assert built.returncode == 0 and "(no profile given): work" in built.stderr, built.stderr
    assert (tmp_path / "out.o").read_bytes()[:4] == b"\x7fELF"
