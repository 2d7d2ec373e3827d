"""What loading a model costs every compile that runs the clang plugin: `opt` with the plugin printing the
order of the model's lists (`print<stitchopt-order>`: read plugin.json, compute the features, rank) against
`opt` alone, on one small demo unit, for each model directory given (the shipped one by default).

Each compile is its own process, so the plugin reads the model once per translation unit; the neighbours'
training rows are most of it (format 2 keeps them in a binary rows file beside plugin.json). Runs alternate
between the directories so that load on the machine slows them alike; a directory the plugin cannot read times
its warning and plain -Oz instead.

    python benchmarks/plugin_model_load.py [--repeats 10] [--unit ring_buffer] [MODEL_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from stitchopt.datasets.demo import demo_directory
from stitchopt.models.plugin_file import PLUGIN_MODEL_NAME
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.llvm import FRONTEND_LEVEL, frontend_command
from stitchopt.toolchain.plugin_library import plugin_path


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def model_megabytes(model: Path) -> float:
    """plugin.json and the rows file it names (format 2), in MB."""
    document = model / PLUGIN_MODEL_NAME
    rows = json.loads(document.read_text()).get("rows")
    return (document.stat().st_size + ((model / rows["file"]).stat().st_size if rows else 0)) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, default=[DEFAULT_MODEL_DIR])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--unit", default="ring_buffer", help="a demo program's name")
    args = parser.parse_args()
    toolchain = find_toolchain(None)
    opt = toolchain.tool("opt")
    with tempfile.TemporaryDirectory() as scratch:
        bitcode = Path(scratch) / "unit.bc"
        source = demo_directory() / f"{args.unit}.c"
        argv = frontend_command([toolchain.tool("clang")], FRONTEND_LEVEL, args=[str(source), "-o", str(bitcode)])
        subprocess.run(argv, check=True)
        plain = [opt, "-passes=verify", "-disable-output", str(bitcode)]
        ordered = [
            opt,
            f"-load-pass-plugin={plugin_path()}",
            "-passes=print<stitchopt-order>",
            "-disable-output",
            str(bitcode),
        ]
        times: dict[str, list[float]] = {"opt alone": []}
        for model in args.models:
            times[str(model)] = []
        for _ in range(args.repeats):
            times["opt alone"].append(timed(plain, dict(os.environ)))
            for model in args.models:
                times[str(model)].append(timed(ordered, {**os.environ, "STITCHOPT_MODEL": str(model)}))
    base = statistics.median(times["opt alone"])
    print(f"{args.unit}, {args.repeats} runs each, median wall time\n")
    print("| run | model file(s) MB | ms | over opt alone |\n| --- | --- | --- | --- |")
    print(f"| opt alone | - | {1000 * base:.0f} | - |")
    for model in args.models:
        median = statistics.median(times[str(model)])
        print(f"| {model} | {model_megabytes(model):.1f} | {1000 * median:.0f} | +{1000 * (median - base):.0f} ms |")


if __name__ == "__main__":
    main()
