"""Device labels, the device model and `stitchopt gpu optimize` with the real clang, opt, llc and ptxas: labels
resume and survive a broken shard, a model trains on them and saves without pickle, the modes never build a
kernel worse than -O3, and llama.cpp's kernels come in as a dataset (from a stand-in sdist of the same layout)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from stitchopt.core import CompileOptions, IRModule
from stitchopt.datasets.kernels import kernel_sources
from stitchopt.datasets.normalize import normalized_text
from stitchopt.datasets.sources.ggml_cuda import GgmlCudaSource
from stitchopt.errors import DatasetError, InputError
from stitchopt.features.base import Standardizer
from stitchopt.labels.device import (
    MATRIX,
    SEARCH,
    DeviceLabels,
    KernelUnit,
    StageStopped,
    earlier_measures,
    earlier_pools,
    kernel_units,
    labelled_kernels,
    load_device_labels,
    matrix_identity,
    matrix_row,
    pool_of,
    read_shards,
    run_stage,
    shard_path,
)
from stitchopt.labels.labelset import read_gzip_json, write_gzip_json
from stitchopt.learning.device import (
    BEST_SINGLE_LIST,
    EVERY_LIST,
    choose_by_folds,
    covering_order,
    family_folds,
    fit_chooser,
    judge,
    labelled_features,
    stacked,
    train_device_model,
)
from stitchopt.models.chooser import SoftmaxChooser
from stitchopt.models.device_model import DeviceModel, device_costs, load_device_model
from stitchopt.passes.catalogue import Catalogue, load_catalogue
from stitchopt.passes.pipeline import pipeline_from_text
from stitchopt.toolchain.cuda import CudaToolkit
from stitchopt.toolchain.device import cuda_device_ir, device_options, kernel_unit
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import disassemble, module_from_bitcode

KERNEL = (
    "__device__ const char *where() { return __FILE__; }\n"
    "__global__ void acc(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] += where()[0]; }\n"
)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def catalogue_device(toolchain: Toolchain) -> Catalogue:
    return load_catalogue(toolchain, device=True)


@pytest.fixture(scope="module")
def labelled(
    tmp_path_factory: pytest.TempPathFactory, cuda: CudaToolkit, openmp_runtime: Path
) -> tuple[Path, dict[str, str]]:
    """Device labels of one kernel per file of the project's kernels, CUDA and OpenMP (built with the OpenMP
    device runtime; short searches, not minimized, a pool of 3)."""
    root = tmp_path_factory.mktemp("device-labels")
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(root / "cache"), "COLUMNS": "200"}
    args = ("gpu", "labels", "bench://kernels-v1", "-o", str(root / "labels"), "--per-file", "1", "--no-minimize")
    done = cli(env, *args, "--budget", "6", "--pool", "3", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "30 kernels searched, 30 measured" in done.stdout
    return root / "labels", env


@pytest.mark.slow
def test_device_labels_resume_and_skip_a_broken_shard(
    labelled: tuple[Path, dict[str, str]], toolchain: Toolchain, cuda: CudaToolkit
) -> None:
    labels, env = labelled
    searches = read_shards(labels, SEARCH)
    assert len(searches) == 30 and {s["split"] for s in searches} == {"train", "validation", "test"}
    kept = [s for s in searches if s["pipeline"] is not None]
    assert all(s["best"]["sass"] <= s["o3"]["sass"] for s in kept)
    units = kernel_units(toolchain, cuda, ["bench://kernels-v1"], per_file=1)
    loaded = load_device_labels(labels, units)
    assert len(loaded.uris) == 30 and 1 <= len(loaded.pool) <= 3
    assert all(len(row) == len(loaded.pool) for row in loaded.lists)
    (pool_file,) = labels.glob("pool-*.json.gz")
    assert read_gzip_json(pool_file, "pool")["identity"]["minimized"] is False  # so minimized labels are not mixed in
    rerun = ("gpu", "labels", "bench://kernels-v1", "-o", str(labels), "--per-file", "1", "--no-minimize")
    rerun = (*rerun, "--budget", "6")
    again = cli(env, *rerun, "--pool", "3")
    assert again.returncode == 0 and "0 kernels searched, 0 measured" in again.stdout

    broken = next((labels / MATRIX).glob("*.json.gz"))
    broken.write_bytes(b"not gzip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(read_shards(labels, MATRIX)) == 29 and len(load_device_labels(labels, units).uris) == 29
    assert any(broken.name in str(w.message) for w in caught)
    repaired = cli(env, *rerun, "--pool", "3")  # the broken shard is measured again, nothing else
    assert repaired.returncode == 0 and "0 kernels searched, 1 measured" in repaired.stdout
    assert repaired.stderr.count("cannot read this shard") == 1, repaired.stderr  # said once, where it is relabelled
    assert len(load_device_labels(labels, units).uris) == 30


def test_a_changed_pool_builds_only_the_lists_no_earlier_pool_measured(
    toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path
) -> None:
    """A matrix row of an earlier pool measured with the same tools is read back (a planted measure no build
    would give shows it was not rebuilt); a new list is built; a pool of other tools is not read."""
    bitcode = cuda_device_ir(toolchain, cuda, kernel_sources()[2])  # scan
    kernel = "_Z14add_block_sumsPiPKii"
    alone = kernel_unit(toolchain, bitcode, kernel)
    options = device_options(disassemble(toolchain, alone, "scan"), cuda)
    module = module_from_bitcode(toolchain, alone, "scan")
    unit = KernelUnit(f"bench://kernels-v1/scan#{kernel}", "scan", "train", kernel, module, options, "ir")
    planted = {"sass": 1, "registers": 1, "spilled": 0, "stack": 0}
    for name, ptxas in (("same", cuda.version), ("other", "0.0")):
        identity = {"llvm": toolchain.version_string, "ptxas": ptxas, "catalogue": "c", "budget": 1, "seed": 0}
        pool = ["default<O1>"] if name == "same" else ["default<O2>"]
        write_gzip_json(tmp_path / f"pool-{name}.json.gz", {"format": 1, "pool": pool, "size": 1, "identity": identity})
        row = {"format": 1, "uri": unit.uri, "o3": planted, "lists": [planted]}
        write_gzip_json(shard_path(tmp_path, MATRIX, unit, matrix_identity(identity, pool)), row)
    pools = earlier_pools(tmp_path, {"llvm": toolchain.version_string, "ptxas": cuda.version})
    known = earlier_measures(tmp_path, unit, pools)
    assert known == {"default<O1>": planted, "default<O3>": planted}
    row = matrix_row(toolchain, unit, ["default<O1>", "default<O2>"], 1, known)
    assert row["o3"] == planted and row["lists"][0] == planted and row["lists"][1]["sass"] > 1


def stage_units(count: int) -> list[KernelUnit]:
    """Units for run_stage's scheduling, which never reads their IR."""
    module = IRModule("k", b"", "nvptx64-nvidia-cuda")
    return [
        KernelUnit(f"bench://kernels-v1/k#k{n}", "k", "train", "k", module, CompileOptions(), str(n))
        for n in range(count)
    ]


def test_a_stage_labels_kernels_side_by_side_and_leaves_one_it_cannot_label_for_the_next_run(tmp_path: Path) -> None:
    """`gpu labels --jobs 2` searches two kernels at once (each waits for the other at a barrier, which breaks when
    they run one after the other); a kernel that cannot be labelled is reported and labelled by the next run."""
    units = stage_units(3)
    together = threading.Barrier(2, timeout=60)

    def label(unit: KernelUnit, stop: threading.Event) -> dict[str, str]:
        if unit is units[2]:
            raise InputError("no launch")
        together.wait()
        return {"uri": unit.uri}

    skipped: list[str] = []
    identity = {"budget": 1}
    done = run_stage(units, tmp_path, SEARCH, identity, label, on_skip=lambda u, why: skipped.append(why), jobs=2)
    assert done == 2 and skipped == ["no launch"]
    assert sorted(s["uri"] for s in read_shards(tmp_path, SEARCH)) == [units[0].uri, units[1].uri]
    again = run_stage(units, tmp_path, SEARCH, identity, lambda unit, stop: {"uri": unit.uri}, jobs=2)
    assert again == 1 and len(read_shards(tmp_path, SEARCH)) == 3


def test_a_stage_that_fails_stops_the_labels_running_and_keeps_what_finished(tmp_path: Path) -> None:
    """One kernel labelled, a second running until told to stop, a third failing (as an interrupt would): the
    failure propagates once the second has stopped, and only the first kernel's shard is written."""
    units = stage_units(3)
    told: list[bool] = []

    def label(unit: KernelUnit, stop: threading.Event) -> dict[str, str]:
        if unit is units[1]:
            told.append(stop.wait(timeout=60))
            raise StageStopped(unit.uri)
        if unit is units[2]:
            raise RuntimeError("broken")
        return {"uri": unit.uri}

    began = time.monotonic()
    with pytest.raises(RuntimeError, match="broken"):
        run_stage(units, tmp_path, SEARCH, {"budget": 1}, label, jobs=2)
    assert told == [True] and time.monotonic() - began < 30  # stopped when told, not at the timeout
    assert [s["uri"] for s in read_shards(tmp_path, SEARCH)] == [units[0].uri]


def test_a_pipeline_stitchopt_printed_is_taken_back_as_it_is(catalogue_device: Catalogue) -> None:
    printed = "always-inline,invalidate<all>,invalidate<globals-aa>,inliner-wrapper"  # no adaptor, as tuned lists print
    assert pipeline_from_text(f"-passes={printed}", catalogue_device) == printed


@pytest.mark.slow
def test_device_model_trains_saves_and_never_builds_a_worse_kernel(
    labelled: tuple[Path, dict[str, str]], toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path
) -> None:
    labels_dir, env = labelled
    labels, units = labelled_kernels(toolchain, cuda, labels_dir)
    features = labelled_features(toolchain, labels, units)
    model, folds = train_device_model(labels, features, ["train"], toolchain.version_string, "test")
    assert model.trained_on["kernels"] == 16 and len(folds) == 7 and "best single list" in folds
    model.save(tmp_path / "model")
    assert not any(p.suffix in (".pkl", ".pickle") for p in (tmp_path / "model").iterdir())
    again = load_device_model(tmp_path / "model")
    chosen = stacked(features, model.features)
    assert again.order(chosen[0]) == model.order(chosen[0])
    methods = judge(lambda i: model.order(chosen[i]), labels, labels.rows(["validation", "test"]))
    for name in ("static + backup", "jit k=3", "jit k=10", "search"):
        assert not any(outcome.worse for outcome in methods[name]), name

    jit = ("--mode", "jit", "--k", "3", "--json")
    optimized = cli(env, "gpu", "optimize", "bench://kernels-v1/spmv", "--model", str(tmp_path / "model"), *jit)
    assert optimized.returncode == 0, optimized.stderr
    document = json.loads(optimized.stdout)
    o3 = document["builds"][0]["kernels"]
    assert set(o3) == {
        "_Z15spmv_csr_scalariPKiS0_PKfS2_Pf",
        "_Z15spmv_csr_vectoriPKiS0_PKfS2_Pf",
        "_Z8spmv_elliiPKiPKdS2_Pd",
    }
    for build in document["builds"][1:]:  # the chosen build, when a list was kept: no kernel worse than -O3
        for name, kernel in build["kernels"].items():
            assert kernel["sass_bytes"] <= o3[name]["sass_bytes"] and kernel["registers"] <= o3[name]["registers"]
    device = document["device"]
    assert 1 <= len(device["tried"]) <= 3 and set(device["tried"]) <= set(model.lists)  # jit k=3: pool lists only
    if device["kept_list"]:  # the kept list is the one built beside -O3, with no reason against it
        assert device["tried"][device["pipeline"]] is None and document["builds"][1]["pipeline"] == device["pipeline"]
    else:
        assert len(document["builds"]) == 1 and None not in device["tried"].values()

    source = tmp_path / "scaled.cu"
    source.write_text("__global__ void scaled(float *x) { x[threadIdx.x] *= SCALE; }\n")
    defined = cli(env, "gpu", "optimize", str(source), "--model", str(tmp_path / "model"), "--", "-DSCALE=3.0f")
    assert defined.returncode == 0, defined.stderr
    undefined = cli(env, "gpu", "optimize", str(source), "--model", str(tmp_path / "model"))
    assert undefined.returncode == 2 and "SCALE" in undefined.stderr
    ir = cli(
        env,
        "gpu",
        "optimize",
        "bench://kernels-v1/spmv",
        "--model",
        str(tmp_path / "model"),
        "-o",
        str(tmp_path / "c.ptx"),
    )
    assert ir.returncode == 0 and (tmp_path / "c.ptx").read_text().startswith("//")

    device_ir = tmp_path / "scan.bc"
    device_ir.write_bytes(cuda_device_ir(toolchain, cuda, kernel_sources()[2]))
    other_arch = cli(env, "gpu", "measure", str(device_ir), "--arch", "sm_75")
    assert other_arch.returncode == 2 and "--arch applies to source files" in other_arch.stderr
    assert cli(env, "gpu", "measure", str(device_ir), "--arch", "sm_90").returncode == 0

    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{}")
    refused = cli(env, "gpu", "optimize", "bench://kernels-v1/spmv", "--model", str(tmp_path / "broken"))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "device model" in refused.stderr


def test_device_costs_are_what_the_o3_backup_keeps() -> None:
    o3 = [{"sass": 100, "registers": 20, "spilled": 0, "stack": 0}]
    smaller, more_registers, larger = (
        {"sass": 50, "registers": 20, "spilled": 0, "stack": 0},
        {"sass": 50, "registers": 21, "spilled": 0, "stack": 0},
        {"sass": 120, "registers": 20, "spilled": 0, "stack": 0},
    )
    costs = device_costs(o3, [[smaller, more_registers, larger, None]])
    assert costs.shape == (1, 5)
    assert costs[0, 0] == pytest.approx(np.log(0.5))
    assert list(costs[0, 1:]) == [0.0, 0.0, 0.0, 0.0]  # -O3 kept: worse elsewhere, larger, cannot build; -O3


def test_the_best_single_lists_order_covers_kernels_the_earlier_lists_miss() -> None:
    """Static's pick is the lowest mean cost; jit's next list is the one that helps the kernels the first does
    not (l2), not the one that helps the same kernels (l1), which the mean alone would put second."""
    costs = np.array(
        [
            [-0.3, -0.3, 0.0, 0.0],  # kernels x (l0, l1, l2, -O3)
            [-0.3, -0.29, 0.0, 0.0],
            [0.0, 0.0, -0.2, 0.0],
        ]
    )
    assert covering_order(costs) == [0, 2, 1, 3]
    chooser = fit_chooser(np.zeros((3, 2)), costs, BEST_SINGLE_LIST)
    assert list(np.argsort(chooser.order(np.zeros((1, 2)))[0], kind="stable")) == [0, 2, 1, 3]


def test_family_folds_never_split_a_family() -> None:
    families = ["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["d", "e", "f"]
    folds = family_folds(families)
    assert sum(fold.sum() for fold in folds) == len(families)
    for family in set(families):
        members = np.array([f == family for f in families])
        assert sum(bool((fold & members).any()) for fold in folds) == 1


def test_a_broken_device_model_directory_is_one_input_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"kind": "stitched", "format": 1}))
    np.savez(tmp_path / "weights.npz", weights=np.zeros(2))
    with pytest.raises(InputError, match="not a device model"):
        DeviceModel.load(tmp_path)


def test_the_shipped_device_model_loads() -> None:
    model = load_device_model()
    assert model.lists and model.trained_on["splits"] == ["train"]


def _sdist(path: Path) -> str:
    """A stand-in llama-cpp-python sdist: ggml's layout with one .cu file (acc.cu), and its sha256."""
    files = {
        "include/ggml.h": "#pragma once\n#define GGML_ACC 1\n",
        "src/ggml-impl.h": "#pragma once\n",
        "src/ggml-cuda/acc.cu": '#include "ggml.h"\n#include "ggml-impl.h"\n#include <cublas_v2.h>\n' + KERNEL,
        "src/ggml-cpu/ignored.c": "int ignored;\n",
    }
    with tarfile.open(path, "w:gz") as bundle:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"llama_cpp_python-0.3.16/vendor/llama.cpp/ggml/{name}")
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_ggml_cuda_source_builds_a_file_device_only_from_the_pinned_sdist(
    toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path
) -> None:
    cache = tmp_path / "downloads"
    cache.mkdir()
    digest = _sdist(cache / "llama_cpp_python-0.3.16.tar.gz")
    source = GgmlCudaSource(cache, sha256=digest)
    assert source.unit_of("acc.cu#_Z3accPfi") == "acc" and len(source.units()) == 45
    (built,) = source.build("acc", toolchain, tmp_path)
    assert (built.name, built.package, built.split, built.language) == ("acc.cu", "acc", "train", "cuda")
    text = subprocess.run([toolchain.tool("llvm-dis"), "-", "-o", "-"], input=built.bitcode, capture_output=True).stdout
    assert b"nvptx64" in text and b"_Z3accPfi" in text
    assert not (cache / "llama-cpp-python-0.3.16-ggml" / "src" / "ggml-cpu").exists()  # only ggml-cuda is unpacked
    assert b'c"ggml/src/ggml-cuda/acc.cu' in text  # __FILE__ without the cache's path: labels keyed by IR travel
    assert str(tmp_path) not in normalized_text(toolchain, built.bitcode)
    with pytest.raises(DatasetError, match="not one of its units"):
        source.build("ggml-cuda", toolchain, tmp_path)


def _labels(o3: list[dict[str, int]], lists: list[list[dict[str, int] | None]], pool: list[str]) -> DeviceLabels:
    n = len(o3)
    return DeviceLabels([f"k{i}" for i in range(n)], ["f"] * n, ["test"] * n, o3, lists, [None] * n, [80] * n, pool)


def _m(sass: int, registers: int = 20, stack: int = 0) -> dict[str, int]:
    return {"sass": sass, "registers": registers, "spilled": 0, "stack": stack}


def test_judge_keeps_what_each_mode_builds() -> None:
    labels = _labels([_m(100), _m(100)], [[_m(80, 24), _m(90), None], [None, _m(120), _m(70)]], ["a", "b", "c"])
    order = {0: ["a", "b", None, "c"], 1: ["a", None, "b", "c"]}
    methods = judge(order.__getitem__, labels, [0, 1])
    static = methods["static"]
    assert [o.built.sass for o in static] == [80, 200] and [o.worse for o in static] == [True, True]  # no backup
    assert [o.built.sass for o in methods["static + backup"]] == [100, 100]  # -O3 kept: more registers; no build
    assert [o.built.sass for o in methods["jit k=3"]] == [90, 70] and [o.compilations for o in methods["jit k=3"]] == [
        4,
        4,
    ]
    assert [o.compilations for o in methods["search"]] == [80, 80]


def test_every_pool_list_is_tried_whatever_the_order() -> None:
    labels = _labels([_m(100)], [[_m(120), None, _m(95), _m(60)]], ["a", "b", "c", "d"])
    methods = judge(lambda _row: ["a", None], labels, [0])  # an order that offers one list, worse than -O3
    assert methods["jit k=3"][0].built.sass == 100 and methods["jit k=3"][0].compilations == 2
    assert methods[EVERY_LIST][0].built.sass == 60 and methods[EVERY_LIST][0].compilations == 5


def test_the_folds_break_ties_toward_the_simplest_way() -> None:
    families = ["a", "a", "b", "b", "c", "c"]
    features = {
        name: np.random.default_rng(0).normal(size=(6, 3)) for name in ("autophase", "histogram", "func_properties")
    }
    costs = np.zeros((6, 3))  # nothing ever beats -O3: every way scores 0
    (names, how), scores = choose_by_folds(features, costs, families)
    assert how == "best single list" and set(scores.values()) == {0.0}
    with pytest.raises(InputError, match="two families"):
        choose_by_folds(features, costs, ["a"] * 6)


def test_the_pool_comes_from_the_train_split_as_it_is_now() -> None:
    searches = {
        "k1": {"pipeline": "x", "split": "train"},
        "k2": {"pipeline": "y", "split": "train"},
        "k3": {"pipeline": "x", "split": "test"},
    }
    assert pool_of(searches, {"k1", "k3"}, 10) == ["x"]  # k2 moved out of train since its shard was written
    assert pool_of(searches, {"k1", "k2", "k3"}, 1) == ["x"]  # the most often kept first


def test_one_list_for_a_module_weighs_every_kernel() -> None:
    chooser = SoftmaxChooser(
        0.0, np.array([[2.0, -2.0, 0.0], [0.0, 0.0, 0.0]]), 1.0
    )  # 1 feature + bias; lists a, b, -O3
    model = DeviceModel(
        ("a", "b"), ("autophase",), chooser, Standardizer(np.zeros(1), np.ones(1), log=False), "19", "c", {}
    )
    assert model.order(np.array([1.0]))[0] == "a" and model.order(np.array([-1.0]))[0] == "b"
    assert model.order_module([np.array([1.0]), np.array([-3.0])])[0] == "b"  # b's loss on the first is smaller
