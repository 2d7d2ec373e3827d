"""The CLI driven with random files, pass lists, URIs and option values, and with damaged model and cache files:
every run ends with 0, 1 or 2, and a user error is one line without a traceback. Bounded (a fixed number of
examples, derandomized) so that `make test` stays short."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis (the dev extra) runs the CLI fuzz test")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from stitchopt.cli.main import exit_status  # noqa: E402
from stitchopt.models.shipped import DEFAULT_MODEL_DIR  # noqa: E402

DATA = Path(__file__).parent.parent / "data"
WORK = Path(os.environ.get("TMPDIR", "/tmp")) / f"stitchopt-fuzz-{os.getpid()}"

TOKENS = ["sroa", "instcombine", "default<Oz>", "function(", "loop(", "cgscc(", ")", ",", "<", ">", "licm", "x", "-"]
pipelines = st.lists(st.sampled_from(TOKENS), max_size=6).map("".join) | st.text(max_size=12)
numbers = st.sampled_from(["-5", "-1", "0", "0.5", "1", "3", "nan", "inf", "x", "1e9"])
contents = st.binary(max_size=300) | st.sampled_from(
    [b"int main(void) { return 0; }\n", b"define i32 @f() {\n ret i32 0\n}\n", b'{"program": "a"}\n', b"{", b""]
)
suffixes = st.sampled_from([".c", ".cpp", ".ll", ".bc", ".jsonl", ".json", ""])
uris = st.sampled_from(
    ["bench://demo-v1/ring_buffer", "bench://demo-v1/nothing", "bench://demo-v1?split=zzz", "bench://x", "bench:/"]
)


def _damaged_model(seed: int) -> Path:
    """The shipped model with one file cut short or rewritten."""
    directory = WORK / f"model-{seed}"
    shutil.rmtree(directory, ignore_errors=True)
    shutil.copytree(DEFAULT_MODEL_DIR, directory)
    target = directory / ("weights.npz" if seed % 2 else "config.json")
    data = target.read_bytes()
    target.write_bytes(data[: len(data) * (seed % 5) // 5] if seed % 3 else data[::-1][:200])
    return directory


def _damaged_cache(seed: int) -> Path:
    directory = WORK / f"cache-{seed}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "evaluations.sqlite").write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * (seed % 7))
    return directory


@contextlib.contextmanager
def _environment(cache: Path) -> Iterator[None]:
    saved = os.environ.get("STITCHOPT_CACHE_DIR")
    os.environ["STITCHOPT_CACHE_DIR"] = str(cache)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("STITCHOPT_CACHE_DIR", None)
        else:
            os.environ["STITCHOPT_CACHE_DIR"] = saved


def _run(args: list[str], cache: Path) -> tuple[int, str]:
    stderr, stdout = io.StringIO(), io.StringIO()
    with _environment(cache), contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
        status = exit_status(args)
    return status, stderr.getvalue()


@st.composite
def commands(draw: st.DrawFn) -> tuple[list[str], Path]:
    seed = draw(st.integers(0, 1000))
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"input-{seed}{draw(suffixes)}"
    path.write_bytes(draw(contents))
    target = draw(st.sampled_from([str(path), str(DATA / "loop_sum.c"), draw(uris)]))
    cache = _damaged_cache(seed) if draw(st.booleans()) else WORK / "cache"
    pipeline, number = draw(pipelines), draw(numbers)
    command = draw(
        st.sampled_from(
            [
                ["eval", target, "-p", pipeline],
                ["eval", target, "-p", "sroa", "--timeout", number],
                ["tune", target, "--budget", number, "--no-validate"],
                ["tune", target, "--budget", "2", "--seconds", number, "--no-validate"],
                ["predict", target, "--model", str(_damaged_model(seed))],
                ["pareto", target],
                ["report", "run", target],
                ["validate", target, "-p", pipeline, "--run-timeout", number],
                ["cache", "stats"],
                ["ir", target, "-o", str(WORK / "nowhere" / "x.bc")],
            ]
        )
    )
    return command, cache


@pytest.mark.slow
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(commands())
def test_random_input_ends_in_a_verdict_or_one_line(case: tuple[list[str], Path]) -> None:
    args, cache = case
    status, stderr = _run(args, cache)
    assert status in (0, 1, 2), f"{args}: exit {status}: {stderr}"
    assert "Traceback" not in stderr, f"{args}: {stderr}"
    if status == 2:
        errors = [line for line in stderr.splitlines() if line.startswith("stitchopt: error:")]
        assert len(errors) == 1, f"{args}: {stderr}"


def teardown_module() -> None:
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
