"""What the libraries a program's build links into its OpenMP target regions change: each program of
src/stitchopt/datasets/kernels_v1/omp built at -O3 for the GPU as clang's `--offload-device-only -S` writes it
(calls into the OpenMP device runtime and into libdevice left external: how the project measured and labelled
them until its twenty-seventh session) and as a program's build, `gpu measure` and the device labels do
(`--libomptarget-nvptx-bc-path`: clang links the runtime's bitcode and libdevice in before the optimizer,
`-mlink-builtin-bitcode`). The second is checked against clang's own device
object of that build (every cubin section the same size), and each region alone (`bench://kernels-v1/omp/
<family>#<region>`: the other regions deleted) against the region in its program. Needs
`scripts/install-system-deps.sh --gpu` (Debian's libomp-19-dev).

    python benchmarks/gpu_openmp_runtime.py [--arch sm_90] [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from stitchopt.datasets.kernels import FAMILY_SPLITS, offload_sources
from stitchopt.diagnostics import first_error
from stitchopt.reports.tables import Rows, to_markdown
from stitchopt.toolchain.cuda import CudaToolkit, find_cuda, openmp_offload_bitcode
from stitchopt.toolchain.device import (
    DEFAULT_ARCH,
    DEVICE_LEVEL,
    DeviceBuild,
    build_device,
    device_baseline,
    device_options,
    kernel_unit,
    openmp_device_ir,
    without_file_ids,
)
from stitchopt.toolchain.discovery import Toolchain, find_toolchain
from stitchopt.toolchain.elf import read_sections
from stitchopt.toolchain.frontend import disassemble
from stitchopt.toolchain.process import run_tool


def o3(toolchain: Toolchain, cuda: CudaToolkit, bitcode: bytes) -> DeviceBuild:
    """Device bitcode built as clang's -O3 builds it (the options read from the module)."""
    options = device_options(disassemble(toolchain, bitcode, "device"), cuda)
    return build_device(toolchain, bitcode, device_baseline(options).pipeline, options)


def clangs_sections(toolchain: Toolchain, cuda: CudaToolkit, source: Path, arch: str, runtime: Path) -> dict[str, int]:
    """Section sizes of clang's own -O3 device object of `source` with the runtime linked in."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "device.o"
        argv = [toolchain.tool("clang"), "-fopenmp", f"--offload-arch={arch}", "--offload-device-only"]
        argv += [f"-{DEVICE_LEVEL}", "-c", f"--cuda-path={cuda.root}", f"--libomptarget-nvptx-bc-path={runtime}"]
        run = run_tool([*argv, str(source), "-o", str(out)], timeout=600)
        if run.returncode != 0:
            raise SystemExit(f"{source.name}: clang's device compile failed: {first_error(run.stderr_text)}")
        return {s.name: s.size for s in read_sections(out.read_bytes())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default=DEFAULT_ARCH)
    parser.add_argument("--json", type=Path, default=None, help="write the per-region results here")
    args = parser.parse_args()
    toolchain, cuda = find_toolchain(), find_cuda()
    library = openmp_offload_bitcode(toolchain, args.arch)
    if library is None:
        raise SystemExit("no OpenMP device runtime bitcode: run `sudo bash scripts/install-system-deps.sh --gpu`")
    rows, results, sass_ratios = [], [], []
    for source in offload_sources():
        external = o3(toolchain, cuda, openmp_device_ir(toolchain, cuda, source, args.arch))
        linked_ir = openmp_device_ir(toolchain, cuda, source, args.arch, runtime=library)
        linked = o3(toolchain, cuda, linked_ir)
        sections = {s.name: s.size for s in read_sections(linked.cubin)}
        as_clang = sections == clangs_sections(toolchain, cuda, source, args.arch, library)
        for name in sorted(external.kernels):
            before, after = external.kernels[name], linked.kernels[name]
            alone = o3(toolchain, cuda, kernel_unit(toolchain, linked_ir, name)).kernels[name].sass_bytes
            region = without_file_ids(name).removeprefix("__omp_offloading_")
            sass_ratios.append(after.sass_bytes / before.sass_bytes)
            results.append(
                {
                    "program": source.stem,
                    "split": FAMILY_SPLITS[source.stem],
                    "region": region,
                    "external": {"sass": before.sass_bytes, "registers": before.resources.registers},
                    "linked": {"sass": after.sass_bytes, "registers": after.resources.registers},
                    "linked_as_clang": as_clang,
                    "linked_alone_sass": alone,
                }
            )
            rows.append(
                [
                    source.stem, region, str(before.sass_bytes), str(after.sass_bytes),
                    f"{100 * (after.sass_bytes / before.sass_bytes - 1):+.1f}%",
                    f"{before.resources.registers} -> {after.resources.registers}", "yes" if as_clang else "no",
                    "same" if alone == after.sass_bytes else str(alone),
                ]
            )  # fmt: skip
        print(f"{source.stem}: {len(external.kernels)} region(s)", file=sys.stderr)
    headers = ["program", "region", "SASS, libraries external", "SASS, libraries linked", "change", "registers",
               "linked build = clang's (sections)", "linked region alone: SASS"]  # fmt: skip
    print(to_markdown(Rows("The OpenMP device runtime and libdevice linked in", headers, rows)))
    geomean = statistics.geometric_mean(sass_ratios) - 1
    changed = sum(r["external"] != r["linked"] for r in results)
    print(
        f"\n{len(results)} regions: {changed} measure otherwise with the libraries linked; "
        f"SASS geomean {100 * geomean:+.1f}%"
    )
    if args.json is not None:
        args.json.write_text(json.dumps({"arch": args.arch, "regions": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
