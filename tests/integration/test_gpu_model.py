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
import warnings
from pathlib import Path

import numpy as np
import pytest

from stitchopt.datasets.normalize import normalized_text
from stitchopt.datasets.sources.ggml_cuda import GgmlCudaSource
from stitchopt.errors import DatasetError, InputError, ToolchainError
from stitchopt.labels.device import (
    MATRIX,
    SEARCH,
    kernel_units,
    labelled_sources,
    labelled_uris,
    load_device_labels,
    read_shards,
)
from stitchopt.learning.device import family_folds, judge, stacked, train_device_model
from stitchopt.models.device_model import FEATURE_SETS, DeviceModel, device_costs, kernel_features, load_device_model
from stitchopt.toolchain.cuda import CudaToolkit, find_cuda
from stitchopt.toolchain.discovery import Toolchain

KERNEL = (
    "__device__ const char *where() { return __FILE__; }\n"
    "__global__ void acc(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] += where()[0]; }\n"
)


@pytest.fixture(scope="module")
def cuda() -> CudaToolkit:
    try:
        return find_cuda()
    except ToolchainError as exc:
        pytest.skip(f"{exc} (make test installs the gpu extra)")


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stitchopt", *args], capture_output=True, text=True, env=env)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory, cuda: CudaToolkit) -> tuple[Path, dict[str, str]]:
    """Device labels of one kernel per family of the project's kernels (short searches, a pool of 3)."""
    root = tmp_path_factory.mktemp("device-labels")
    env = {**os.environ, "STITCHOPT_CACHE_DIR": str(root / "cache"), "COLUMNS": "200"}
    args = ("gpu", "labels", "bench://kernels-v1", "-o", str(root / "labels"), "--per-file", "1")
    done = cli(env, *args, "--budget", "12", "--pool", "3", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "10 kernels searched, 10 measured" in done.stdout
    return root / "labels", env


@pytest.mark.slow
def test_device_labels_resume_and_skip_a_broken_shard(
    labelled: tuple[Path, dict[str, str]], toolchain: Toolchain, cuda: CudaToolkit
) -> None:
    labels, env = labelled
    searches = read_shards(labels, SEARCH)
    assert len(searches) == 10 and {s["split"] for s in searches} == {"train", "validation", "test"}
    kept = [s for s in searches if s["pipeline"] is not None]
    assert all(s["best"]["sass"] <= s["o3"]["sass"] for s in kept)
    loaded = load_device_labels(labels, kernel_units(toolchain, cuda, ["bench://kernels-v1"], per_file=1))
    assert len(loaded.uris) == 10 and 1 <= len(loaded.pool) <= 3
    assert all(len(row) == len(loaded.pool) for row in loaded.lists)
    again = cli(
        env,
        "gpu",
        "labels",
        "bench://kernels-v1",
        "-o",
        str(labels),
        "--per-file",
        "1",
        "--budget",
        "12",
        "--pool",
        "3",
    )
    assert again.returncode == 0 and "0 kernels searched, 0 measured" in again.stdout
    broken = next((labels / MATRIX).glob("*.json.gz"))
    saved = broken.read_bytes()
    try:
        broken.write_bytes(b"not gzip")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert len(read_shards(labels, MATRIX)) == 9
        assert any(broken.name in str(w.message) for w in caught)
    finally:
        broken.write_bytes(saved)


@pytest.mark.slow
def test_device_model_trains_saves_and_never_builds_a_worse_kernel(
    labelled: tuple[Path, dict[str, str]], toolchain: Toolchain, cuda: CudaToolkit, tmp_path: Path
) -> None:
    labels_dir, env = labelled
    uris = labelled_uris(labels_dir)
    found = kernel_units(toolchain, cuda, labelled_sources(uris), only=uris)
    labels = load_device_labels(labels_dir, found)
    units = {u.uri: u for u in found}
    names = sorted({name for feature_set in FEATURE_SETS for name in feature_set})
    features = {
        n: np.vstack([kernel_features(toolchain, units[uri].module, [n]) for uri in labels.uris]) for n in names
    }
    model, folds = train_device_model(labels, features, ["train"], toolchain.version_string, "test")
    assert model.trained_on["kernels"] == 6 and len(folds) == 7 and "best single list" in folds
    model.save(tmp_path / "model")
    assert not any(p.suffix in (".pkl", ".pickle") for p in (tmp_path / "model").iterdir())
    again = load_device_model(tmp_path / "model")
    chosen = stacked(features, model.features)
    assert again.order(chosen[0]) == model.order(chosen[0])
    methods = judge(lambda i: model.order(chosen[i]), labels, labels.rows(["validation", "test"]))
    for name in ("static + backup", "jit k=3", "jit k=10", "search"):
        assert not any(outcome.worse for outcome in methods[name]), name

    optimized = cli(
        env, "gpu", "optimize", "bench://kernels-v1/spmv", "--model", str(tmp_path / "model"), "--mode", "jit", "--json"
    )
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
    assert document["device"]["kept_list"] == (len(document["builds"]) == 2)
    assert 1 <= len(document["device"]["tried"]) <= 3

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
