"""OpenMP offload programs run with the host CPU as the offload device (LLVM's libomptarget, real copies between
host and device memory), and the plugin's stitchopt-hoist-target-data pass that keeps mapped data on the device
across a loop only where the program cannot tell."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stitchopt.cli.main import exit_status
from stitchopt.datasets.kernels import FAMILY_SPLITS, offload_expected_output, offload_sources
from stitchopt.errors import InputError, ToolchainError
from stitchopt.toolchain.cuda import CudaToolkit
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.llvm import opt_command
from stitchopt.toolchain.offload_build import (
    HOST_BASELINE,
    OFFLOAD_FLAGS,
    build_offload_program,
    hoisting_report,
    offload_host_module,
    runtime_directory,
)
from stitchopt.toolchain.plugin_library import plugin_path
from stitchopt.validate.offload import OFFLOAD_ENV, OFFLOAD_LIMITS, Transfers, check_host_list
from stitchopt.validate.sandbox import Sandbox

DATA = Path(__file__).parents[1] / "data"
LOOPS = DATA / "offload_loops.c"
STENCIL = Path(__file__).parents[2] / "src" / "stitchopt" / "datasets" / "kernels_v1" / "omp" / "stencil.c"
HOISTING = f"{HOST_BASELINE},stitchopt-hoist-target-data"


@pytest.fixture(scope="module")
def plugin(toolchain: Toolchain) -> Path:
    try:
        runtime_directory(toolchain)
        return plugin_path()
    except ToolchainError as exc:
        pytest.skip(f"{exc} (make test installs it)")


def remarks(toolchain: Toolchain, plugin: Path) -> list[tuple[str, str, str]]:
    """(kind, function, message) of every remark the pass makes on tests/data/offload_loops.c."""
    argv = opt_command(
        toolchain.tool("opt"),
        HOISTING,
        flags=[f"-load-pass-plugin={plugin}", "-pass-remarks-output=-", "-pass-remarks-filter=stitchopt"],
        args=["-", "-o", "/dev/null"],
    )
    done = subprocess.run(argv, input=offload_host_module(toolchain, LOOPS), capture_output=True, check=True)
    found = []
    for document in done.stdout.decode().split("--- !")[1:]:
        function = re.search(r"^Function:\s+(\S+)", document, re.MULTILINE)
        assert function is not None
        words = re.findall(r"^\s+- (?:String|Arrays):\s+(.*)$", document, re.MULTILINE)
        found.append((document.split()[0], function.group(1), "".join(w.strip("'") for w in words)))
    return found


def test_data_stays_on_the_device_only_where_the_program_cannot_tell(toolchain: Toolchain, plugin: Path) -> None:
    """`hoisted` keeps both arrays; `host_reads` keeps d but not c (the host reads c between launches);
    `writes_to_only` keeps f but not e (its launch writes e, which it maps `to` only); `device_only_writes` keeps
    first but not g (only the device code writes g: the embedded device image is read, not the host fallback);
    `through_a_pointer` keeps nothing (a launch maps h again through a pointer to it); `firstprivate_reader`
    keeps q_sums but not q (its second launch copies q from the host); `straight_run` keeps r across its three
    launches."""
    by_function: dict[str, list[tuple[str, str]]] = {}
    for kind, function, message in remarks(toolchain, plugin):
        by_function.setdefault(function, []).append((kind, message))
    assert by_function["hoisted"] == [("Passed", "kept 2 mapped array(s) on the device across the loop: b a")]
    assert sorted(by_function["host_reads"]) == [
        ("Missed", "target data stays per launch: the host may read c in the loop"),
        ("Passed", "kept 1 mapped array(s) on the device across the loop: d"),
    ]
    assert sorted(by_function["writes_to_only"]) == [
        (
            "Missed",
            "target data stays per launch: a launch maps e without `from` and may write it: its kernel may write it",
        ),
        ("Passed", "kept 1 mapped array(s) on the device across the loop: f"),
    ]
    assert sorted(by_function["device_only_writes"]) == [
        (
            "Missed",
            "target data stays per launch: a launch maps g without `from` and may write it: its kernel may write it",
        ),
        ("Passed", "kept 1 mapped array(s) on the device across the loop: first"),
    ]
    assert sorted(by_function["firstprivate_reader"]) == [
        ("Missed", "target data stays per launch: a launch copies q from the host (firstprivate)"),
        ("Passed", "kept 1 mapped array(s) on the device across the loop: q_sums"),
    ]
    assert by_function["straight_run"] == [
        ("Passed", "kept 1 mapped array(s) on the device across the run of launches: r")
    ]
    assert by_function["through_a_pointer"] == [
        (
            "Missed",
            "target data stays per launch: a map item reaches memory through a stored pointer or a struct member",
        )
    ]


CXX_NAMES = """#include <cstdio>
#include <cstring>
#include <vector>
static float a[64], b[64], c[64], d[64], e[64];
int main() {
  std::vector<float> u(1024, 1.0f), v(1024, 0.0f);
  float *pu = u.data(), *pv = v.data();
  int n = 1024;
  for (int s = 0; s < 10; ++s) {
#pragma omp target teams distribute parallel for map(to: pu[0:n]) map(tofrom: pv[0:n])
    for (int i = 0; i < n; ++i) pv[i] += pu[i];
    std::printf("%d\\n", s);
  }
  for (int s = 0; s < 4; ++s) {
#pragma omp target teams distribute parallel for map(to: a) map(tofrom: b)
    for (int i = 0; i < 64; ++i) b[i] += a[i];
  }
  for (int s = 0; s < n; ++s) {
#pragma omp target teams distribute parallel for map(tofrom: c)
    for (int i = 0; i < 64; ++i) c[i] += 1;
    std::memcpy(d, c, sizeof d);
  }
  int m = 64;
  for (int s = 0; s < n; ++s) {
#pragma omp target teams distribute parallel for map(tofrom: e[0:m])
    for (int i = 0; i < m; ++i) e[i] += 1;
    m -= s & 1;
  }
  std::printf("%f %f %f %f\\n", pv[5], b[5], d[5], e[5]);
}
"""


def test_the_report_names_arrays_as_the_source_does(toolchain: Toolchain, plugin: Path, tmp_path: Path) -> None:
    """C++ leaves IR values unnamed and globals mangled: the report names arrays by their map clauses' text, says
    which call or host access keeps data per launch and on which line (a memcpy is an access, not a call to an
    intrinsic) or why an array cannot be kept at all (its size changes), and gives a fully unrolled loop its
    launches' line."""
    source = tmp_path / "names.cpp"
    source.write_text(CXX_NAMES)
    report = hoisting_report(toolchain, source, plugin)
    assert report.kept == ("names.cpp:15: kept 2 mapped array(s) on the device across the run of launches: b a",)
    assert report.not_kept == (  # in source order
        "names.cpp:9: target data stays per launch: a call to printf in the loop may read or write pv[0:n] (line 12);"
        " a call to printf in the loop may read or write pu[0:n] (line 12)",
        "names.cpp:18: target data stays per launch: the host may read c in the loop (line 21)",  # a memcpy
        "names.cpp:24: target data stays per launch: e[0:m]'s size may change between its launches",
    )


ONCE_EACH = """#include <stdio.h>
#define N 1024
float x[N], y[N], z[N];
int main(void) {
  for (int i = 0; i < N; ++i) x[i] = i;
#pragma omp target teams distribute parallel for map(to: x) map(from: y)
  for (int i = 0; i < N; ++i) y[i] = 2 * x[i];
#pragma omp target teams distribute parallel for map(to: y) map(from: z)
  for (int i = 0; i < N; ++i) z[i] = y[i] + 1;
  printf("%f\\n", z[7]);
  return 0;
}
"""


def test_a_run_keeps_only_what_saves_a_copy(plugin: Path, cuda: CudaToolkit, tmp_path: Path) -> None:
    """Two launches, y written by the first (`from`) and read by the second (`to`): kept, copied out once and
    never in (the first launch to map it starts from memory the host never wrote); x and z are mapped by one
    launch each, which a data region could not copy less: not kept, and the report says why. A run copies a
    quarter fewer bytes with the same output."""
    source = tmp_path / "once.c"
    source.write_text(ONCE_EACH)
    argv = [sys.executable, "-m", "stitchopt", "gpu", "optimize", str(source), "--json", "--run", "{exe}"]
    host = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)["host"]
    assert host["kept"] == ["once.c:6: kept 1 mapped array(s) on the device across the run of launches: y"]
    assert host["not_kept"] == [
        "once.c:6: target data stays per launch: keeping x would save no copy (its launches copy it once); keeping"
        " z would save no copy (its launches copy it once)"
    ]
    # -O3: x in, y out, y in, z out (4 copies of one size); kept: x in, y out once, z out
    assert host["same_output"] and host["bytes_change"] == pytest.approx(3 / 4 - 1)


FIRST_MAY_NOT_WRITE = {
    # the launches that map m are in an if that may be false: the region would copy m out over the host's values
    "cond.c": """#define N 1024
float a[N], b[N], m[N];
void run(int c) {
#pragma omp target teams distribute parallel for map(to: a) map(from: b)
  for (int i = 0; i < N; ++i) b[i] = a[i] + 1;
  if (c) {
#pragma omp target teams distribute parallel for map(from: m)
    for (int i = 0; i < N; ++i) m[i] = 5;
#pragma omp target teams distribute parallel for map(tofrom: m)
    for (int i = 0; i < N; ++i) m[i] += 1;
  }
}
""",
    # the first launch maps m alloc (it may read it): the second must still find the host's values
    "alloc.c": """#define N 1024
float b[N], m[N];
void run(int k) {
#pragma omp target teams distribute parallel for map(alloc: m) map(from: b)
  for (int i = 0; i < N; ++i) b[i] = k ? m[i] : i;
#pragma omp target teams distribute parallel for map(tofrom: m)
  for (int i = 0; i < N; ++i) m[i] += 1;
}
""",
}


def test_a_run_copies_in_what_its_first_launch_may_not_write(
    toolchain: Toolchain, plugin: Path, tmp_path: Path
) -> None:
    """m is copied in unless the first launch to map it always runs and maps it `from` only: here one may not run
    and the other maps it `alloc`, so a region would copy m in and out, no fewer copies than the launches that
    always run make: m stays per launch (a review's two programs whose output a region without the copy in
    changed)."""
    reasons = {
        "cond.c": "keeping m would save no copy (the launches that map it may not run)",
        "alloc.c": "keeping m would save no copy (its launches copy it twice)",
    }
    for name, text in FIRST_MAY_NOT_WRITE.items():
        source = tmp_path / name
        source.write_text(text)
        report = hoisting_report(toolchain, source, plugin)
        assert report.kept == () and len(report.not_kept) == 1 and reasons[name] in report.not_kept[0], report


BEFORE_THE_RUN = """#include <stdio.h>
#define N 1024
float g[N];
__attribute__((noinline)) void touch(void) { g[3] += 1; }
void straight(void) {
  touch();
#pragma omp target teams distribute parallel for map(tofrom: g)
  for (int i = 0; i < N; ++i) g[i] += i;
#pragma omp target teams distribute parallel for map(tofrom: g)
  for (int i = 0; i < N; ++i) g[i] *= 3;
}
int main(void) { straight(); printf("%f %f\\n", g[3], g[7]); return 0; }
"""


UNROLLED_LOOPS = """#include <stdio.h>
#include <string.h>
#define N 512
float a[N], b[N], seen[N];
int main(void) {
  for (int i = 0; i < N; i++) a[i] = i;
  for (int it = 0; it < 4; it++) {
#pragma omp target teams distribute parallel for map(to: a) map(tofrom: b)
    for (int i = 0; i < N; i++) b[i] += a[i];
    memcpy(seen, b, sizeof seen);
  }
  for (int it = 0; it < 4; it++) {
#pragma omp target teams distribute parallel for map(to: a) map(tofrom: b)
    for (int i = 0; i < N; i++) b[i] += 2 * a[i];
  }
  printf("%f %f\\n", b[1], seen[5]);
  return 0;
}
"""


def test_loops_the_optimizer_unrolled_are_kept_apart(plugin: Path, cuda: CudaToolkit, tmp_path: Path) -> None:
    """Two loops of 4 launches, unrolled: the host's read of b after each launch of the first keeps b per launch
    there, not in the second: a stays on the device across both, b across the second's launches (as with
    loops the optimizer keeps), and a run copies fewer bytes with the same output."""
    source = tmp_path / "unrolled.c"
    source.write_text(UNROLLED_LOOPS)
    argv = [sys.executable, "-m", "stitchopt", "gpu", "optimize", str(source), "--json", "--run", "{exe}"]
    host = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)["host"]
    assert host["kept"] == [
        "unrolled.c:8: kept 1 mapped array(s) on the device across the run of launches: a",
        "unrolled.c:13: kept 1 mapped array(s) on the device across the run of launches: b",
    ]
    assert host["not_kept"] == [
        "unrolled.c:8: target data stays per launch: the host may read b in the run of launches (line 10)"
    ]
    # -O3: 8 launches copy a in, b in and b out (24 copies of one size); kept: a in once, b in and out at each
    # launch of the first loop (8) and once around the second (2): 11
    assert host["same_output"] and host["bytes_change"] == pytest.approx(11 / 24 - 1)


def test_a_run_of_launches_begins_at_its_first_launch(plugin: Path, cuda: CudaToolkit, tmp_path: Path) -> None:
    """Host code in the first launch's block before it (a call that writes g) is not in the run: g is kept across
    the two launches, and a run copies half the bytes with the same output."""
    source = tmp_path / "before.c"
    source.write_text(BEFORE_THE_RUN)
    argv = [sys.executable, "-m", "stitchopt", "gpu", "optimize", str(source), "--json", "--run", "{exe}"]
    host = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)["host"]
    assert host["kept"] == ["before.c:7: kept 1 mapped array(s) on the device across the run of launches: g"]
    assert host["same_output"] and host["bytes_change"] == pytest.approx(-0.5)


def test_a_run_counts_the_copies_and_compares_the_output(toolchain: Toolchain, plugin: Path) -> None:
    """Four steps of six loops and a run of three launches: 95 copies at -O3. With the pass, 34 fewer: a and b
    once (3 instead of 12), d once and c every step (9 of 12), f once each way and e every step (6 of 12), first
    once each way and g every step (6 of 12), q_sums once each way and q every step (14 of 20), r once each way
    (2 of 6); through_a_pointer's 21 stay."""
    check = check_host_list(toolchain, [LOOPS], HOISTING, pass_plugins=[plugin])
    before, after = check.baseline.transfers, check.candidate.transfers
    assert (before.to_device, before.from_device) == (60, 35)
    assert (after.to_device, after.from_device) == (40, 21)
    assert -0.4 < check.bytes_change < -0.3
    assert check.same_output and check.candidate.outcome.stdout == check.baseline.outcome.stdout
    assert check.baseline.outcome.stdout.strip()


def test_both_builds_run_from_one_path(toolchain: Toolchain, plugin: Path, tmp_path: Path) -> None:
    """A program that prints its argv[0] prints the same with either build: the output comparison sees code."""
    source = tmp_path / "argv0.c"
    source.write_text(
        "#include <stdio.h>\nint main(int argc, char **argv) {\n  float a[64] = {0};\n"
        '#pragma omp target map(tofrom: a)\n  a[7] += 1.0f;\n  printf("%s %f\\n", argv[0], a[7]);\n  return 0;\n}\n'
    )
    check = check_host_list(toolchain, [source], HOISTING, pass_plugins=[plugin])
    assert check.same_output and b"program 1.0" in check.baseline.outcome.stdout


def test_a_failed_link_leaves_nothing_in_tmpdir(
    toolchain: Toolchain, plugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """clang's linker wrapper leaves its device image object in TMPDIR when a link fails (here: no main)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    module = offload_host_module(toolchain, DATA / "offload.c")
    with pytest.raises(InputError, match="no main"):
        build_offload_program(toolchain, [module], HOST_BASELINE, tmp_path / "program")
    assert list(scratch.iterdir()) == []


def test_gpu_transfers_run_on_the_stencil_program(plugin: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    cli = [sys.executable, "-m", "stitchopt", "gpu", "transfers", str(STENCIL)]
    done = subprocess.run([*cli, "--run", "{exe}", "--json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["same_output"] and document["bytes_change"] < -0.8
    assert document["candidate"]["pipeline"] == HOISTING and document["difference"] == ""
    text = subprocess.run([*cli, "--run", "{exe}"], capture_output=True, text=True, env=env)
    moved = [document[b]["transfers"]["bytes"] for b in ("baseline", "candidate")]
    assert f"bytes copied {moved[0]:,} -> {moved[1]:,} (" in text.stdout and "output identical" in text.stdout
    alone = subprocess.run([*cli, "-p", "default<O3>"], capture_output=True, text=True, env=env)
    assert alone.returncode == 2 and "add --run" in alone.stderr
    no_main = [sys.executable, "-m", "stitchopt", "gpu", "transfers", str(DATA / "offload.c"), "--run", "{exe}"]
    done = subprocess.run(no_main, capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "no main" in done.stderr and done.stderr.count("\n") == 1
    bad = [*cli, "--run", "{exe}", "-p", "default<O3>,no-such-pass"]
    bad = subprocess.run(bad, capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "no-such-pass" in bad.stderr and "Traceback" not in bad.stderr
    doctor = subprocess.run([sys.executable, "-m", "stitchopt", "doctor", "--json"], capture_output=True, text=True)
    assert json.loads(doctor.stdout)["gpu"]["offload_runs"]["library"].endswith("libomptarget.so")


def test_gpu_optimize_keeps_host_data_where_the_pass_proves_it_and_a_run_confirms(
    plugin: Path, cuda: CudaToolkit, tmp_path: Path
) -> None:
    """The host side of `gpu optimize`: statically, the hoisting pipeline where the pass keeps something (its
    remarks with their lines, what it refuses with why), -O3 where it keeps nothing (histogram: no loop of
    launches); with --run, kept only after the run copies fewer bytes with the same output. An OpenMP program
    named by its URI is chosen for too; one of its regions alone has no host side to run."""
    cli = [sys.executable, "-m", "stitchopt", "gpu", "optimize", "--json"]
    spaced = tmp_path / "a dir" / STENCIL.name  # remarks name the file as clang was given it
    spaced.parent.mkdir()
    spaced.write_bytes(STENCIL.read_bytes())
    static = subprocess.run([*cli, str(spaced)], capture_output=True, text=True, check=True)
    host = json.loads(static.stdout)["host"]
    assert host["pipeline"] == HOISTING and "bytes_change" not in host and host["not_kept"] == []
    assert host["kept"] == [
        f"stencil.c:{line}: kept 2 mapped array(s) on the device across the loop: next grid" for line in (21, 30)
    ]
    ran = subprocess.run([*cli, str(STENCIL), "--run", "{exe}"], capture_output=True, text=True, check=True)
    host = json.loads(ran.stdout)["host"]
    assert host["pipeline"] == HOISTING and host["same_output"] and host["bytes_change"] < -0.8
    histogram = STENCIL.with_name("histogram.c")
    nothing = subprocess.run([*cli, str(histogram), "--run", "{exe}"], capture_output=True, text=True, check=True)
    assert json.loads(nothing.stdout)["host"] == {"pipeline": HOST_BASELINE, "kept": [], "not_kept": []}
    uri = subprocess.run([*cli, "bench://kernels-v1/omp/nbody"], capture_output=True, text=True, check=True)
    assert json.loads(uri.stdout)["host"]["kept"] == [
        "nbody.c:34: kept 3 mapped array(s) on the device across the loop: pos acc vel"
    ]
    region = subprocess.run(
        [*cli, "bench://kernels-v1/omp/nbody#__omp_offloading_step_l10", "--run", "{exe}"],
        capture_output=True,
        text=True,
    )
    assert region.returncode == 2 and "not a whole C/C++ program" in region.stderr and region.stderr.count("\n") == 1
    loops = subprocess.run([*cli[:-1], str(LOOPS)], capture_output=True, text=True, check=True).stdout
    assert "host: offload_loops.c:25: kept 1 mapped array(s) on the device across the loop: d" in loops
    assert (
        "host: not kept: offload_loops.c:25: target data stays per launch: the host may read c in the loop (line 28)"
        in loops
    )


def test_gpu_optimize_keeps_the_device_answer_when_the_host_side_cannot_be_chosen(
    plugin: Path, cuda: CudaToolkit, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No pass plugin (an install without the C++ part): the host side says why it has no choice and -O3 stays;
    the device answer is still given (exit 0), and with --run, what was asked cannot be done (exit 2, one line)."""

    def missing() -> Path:
        raise ToolchainError("stitchopt's pass plugin is not built: run `make`")

    monkeypatch.setattr("stitchopt.cli.gpu.plugin_path", missing)
    histogram = str(STENCIL.with_name("histogram.c"))
    assert exit_status(["gpu", "optimize", histogram, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["device"]["pipeline"] and document["host"] == {
        "pipeline": HOST_BASELINE,
        "error": "stitchopt's pass plugin is not built: run `make`",
    }
    assert exit_status(["gpu", "optimize", histogram, "--run", "{exe}"]) == 2
    said = capsys.readouterr()
    assert "device (static):" in said.out and "host: not chosen (stitchopt's pass plugin is not built" in said.out
    assert said.err == "stitchopt: error: stitchopt's pass plugin is not built: run `make`\n"


def test_every_family_has_an_openmp_program_that_prints_its_expected_output(
    toolchain: Toolchain, plugin: Path, tmp_path: Path
) -> None:
    """kernels_v1/omp: one program per family, built with clang's -O3 host pipeline and run with the host as the
    offload device, prints what omp/expected.json says."""
    sources = offload_sources()
    assert [source.stem for source in sources] == list(FAMILY_SPLITS)
    sandbox = Sandbox(OFFLOAD_LIMITS, private_tmp=True)
    for source in sources:
        program = tmp_path / source.stem
        build_offload_program(toolchain, [offload_host_module(toolchain, source)], HOST_BASELINE, program)
        done = sandbox.run(program, env=OFFLOAD_ENV)
        assert done.returncode == 0 and done.stdout.decode() == offload_expected_output(source), source.stem


def test_clang_with_the_plugin_keeps_offload_data_on_the_device(
    toolchain: Toolchain, plugin: Path, tmp_path: Path
) -> None:
    """`STITCHOPT_OFFLOAD=keep clang -O3 -fopenmp -foffload-lto -fpass-plugin=...` runs the pass last in
    clang's own pipeline (with -foffload-lto the embedded device code is bitcode the pass can read): the
    stencil program makes 7 copies instead of 51, its output as expected; off (the default) leaves clang's maps
    alone."""
    runtime = runtime_directory(toolchain)
    sandbox = Sandbox(OFFLOAD_LIMITS, private_tmp=True)
    copies = {}
    for setting in ("keep", "off"):
        program = tmp_path / setting
        argv = [toolchain.tool("clang"), "-O3", *OFFLOAD_FLAGS, "-foffload-lto", f"-fpass-plugin={plugin}"]
        argv += [str(STENCIL), "-o", str(program), f"-Wl,-rpath,{runtime}"]
        subprocess.run(argv, check=True, env={**os.environ, "STITCHOPT_OFFLOAD": setting})
        done = sandbox.run(program, env=OFFLOAD_ENV)
        assert done.returncode == 0 and done.stdout.decode() == offload_expected_output(STENCIL)
        moved = Transfers.from_log(done.stderr)
        copies[setting] = moved.to_device + moved.from_device
    assert copies == {"keep": 7, "off": 51}


def test_a_gpu_build_in_clang_makes_the_same_decisions(toolchain: Toolchain, plugin: Path, cuda: CudaToolkit) -> None:
    """tests/data/offload_loops.c built for an NVPTX GPU (sm_90, -foffload-lto; compiled only: no GPU needed):
    the device code read is NVPTX's, whose regions pass their arguments through __kmpc_parallel_51's array,
    and the pass keeps and refuses exactly what it does with the host as the device."""
    argv = [toolchain.tool("clang"), "-O3", "-fopenmp", "--offload-arch=sm_90", "-foffload-lto"]
    argv += [f"--cuda-path={cuda.root}", f"-fpass-plugin={plugin}", "-Rpass=stitchopt", "-Rpass-missed=stitchopt"]
    argv += ["-c", str(LOOPS), "-o", os.devnull]
    env = {**os.environ, "STITCHOPT_OFFLOAD": "keep"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    said = {re.sub(r"^remark: \S+:\d+:\d+: (.*) \[-Rpass.*\]$", r"\1", line) for line in done.stderr.splitlines()}
    assert "target data stays per launch: the host may read c in the loop (line 28)" in said  # clang tracks lines
    assert {re.sub(r" \(line \d+\)", "", message) for message in said} == {
        message for _, _, message in remarks(toolchain, plugin)
    }
