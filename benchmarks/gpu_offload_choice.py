"""Both sides of the project's OpenMP offload programs chosen as `stitchopt gpu optimize PROGRAM.c --run` chooses
them: the device model's list for the program's target regions (sm_90, the OpenMP device runtime and libdevice
linked in as the program's build links them; static and jit, -O3 the backup) and the
host pipeline (statically: stitchopt-hoist-target-data where the pass keeps some array on the device; then kept
only when a run with the host as the offload device copies fewer bytes with identical output). Unlike `gpu
optimize`, every program is run, also where the pass keeps nothing: the runs show that the static choice and
the run's agree.

The device model is the shipped one (or `--model`), trained on the train families' kernels (CUDA, and the
OpenMP programs' target regions of those families). Device figures are ptxas's (static, unverified on a GPU).

    python benchmarks/gpu_offload_choice.py [--model DIR] [--k 10] [--json F]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from stitchopt.apply.device import DEVICE_JIT_K, choose_device_list, sass_and_registers
from stitchopt.datasets.kernels import FAMILY_SPLITS, offload_sources
from stitchopt.models.device_model import load_device_model
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.cuda import find_cuda, openmp_offload_bitcode
from stitchopt.toolchain.device import DEFAULT_ARCH, device_options, openmp_device_ir
from stitchopt.toolchain.discovery import find_toolchain
from stitchopt.toolchain.frontend import disassemble, module_from_bitcode
from stitchopt.toolchain.offload_build import HOISTING_PIPELINE, hoisting_report
from stitchopt.toolchain.plugin_library import plugin_path
from stitchopt.validate.offload import check_host_list

MEASURES = ("sass", "registers", "spilled", "stack")


def _reasons(whys: list[str]) -> str:
    """Why lists were not kept, in short: the measures they are worse in (`apply.device.choose_device_list` names
    each with its kernel and numbers), and any other reason as given."""
    worse = {m for why in whys for m in MEASURES if f"({m} " in why or f", {m} " in why}
    others = sorted({why for why in whys if not why.startswith("worse than -O3")})
    return ", ".join([*(["worse in " + "/".join(m for m in MEASURES if m in worse)] if worse else []), *others])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="a device model directory (default: shipped)")
    parser.add_argument("--json", type=Path, default=None, help="write the per-program results here")
    parser.add_argument("--k", type=int, default=DEVICE_JIT_K, help="jit's lists (gpu optimize --k)")
    args = parser.parse_args()
    toolchain, cuda = find_toolchain(), find_cuda()
    model = load_device_model(args.model)
    began = time.monotonic()
    rows, results = [], []
    library = openmp_offload_bitcode(toolchain, DEFAULT_ARCH)
    if library is None:
        raise SystemExit("no OpenMP device runtime bitcode: run `sudo bash scripts/install-system-deps.sh --gpu`")
    for source in offload_sources():
        bitcode = openmp_device_ir(toolchain, cuda, source, runtime=library)  # as the program's build does
        module = module_from_bitcode(toolchain, bitcode, source.stem)
        options = device_options(disassemble(toolchain, bitcode, source.name), cuda)
        device, reasons = {}, []
        for mode in ("static", "jit"):
            choice = choose_device_list(toolchain, model, module, options, mode, args.k)
            device[mode] = sass_and_registers(choice.answer)[0] / sass_and_registers(choice.reference)[0] - 1
            reasons += [why for why in choice.tried.values() if why is not None]
        static = hoisting_report(toolchain, source, plugin_path())
        check = check_host_list(toolchain, [source], HOISTING_PIPELINE, pass_plugins=[plugin_path()])
        keeps = check.chosen == HOISTING_PIPELINE
        rows.append(
            [
                source.stem,
                FAMILY_SPLITS[source.stem],
                str(len(choice.reference.kernels)),
                f"{100 * device['static']:+.1f}%",
                f"{100 * device['jit']:+.1f}%",
                _reasons(reasons) or "-",
                f"kept at {len(static.kept)}" if static.kept else "-O3",
                "hoisting" if keeps else "-O3",
                f"{100 * check.bytes_change:+.1f}%" if keeps else "+0.0%",
                "yes" if check.same_output else "NO",
            ]
        )
        host = {"static": {"kept": static.kept, "not_kept": static.not_kept}, **check.to_dict()}
        results.append({"program": source.stem, "device": device, "not_kept": reasons, "host": host})
    header = [
        "program",
        "split",
        "kernels",
        "device SASS static",
        f"jit k={args.k}",
        "lists not kept",
        "host static (places the pass keeps data)",
        "host after the run",
        "bytes copied",
        "same output",
    ]
    print(to_markdown(Rows("OpenMP offload programs: device list and host pipeline chosen together", header, rows)))
    print(f"{time.monotonic() - began:.0f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
