"""GPU device code of a real project: llama.cpp's CUDA back end (ggml-cuda), as vendored in the
`llama-cpp-python` sdist on PyPI. One unit per `.cu` file, compiled device-only for sm_90 (what
`stitchopt gpu measure` compiles a `.cu` file to); its kernels are the device units the label factory
measures (`bench://ggml-cuda-v1/<file>.cu#<kernel>`).

A device-only compile needs none of the libraries ggml links: an 8-line stand-in `cublas_v2.h` (beside this
file) gives the handful of cuBLAS names its host code mentions. Three files need more of cuBLAS's host API
(`ggml-cuda.cu`, `mmf.cu`, `out-prod.cu`) and two have no kernel of their own (`fattn.cu`, `mmq.cu`): they are
not units. Files of one kind (the flash-attention variants, the matrix-vector products, the convolutions, the
optimizer steps, the state-space scans, the reductions) form one family, and the split is by family and
written here, chosen before any label existed so that each split holds several unrelated families: a hash of
the families put 8 kernels in the test split.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import threading
from pathlib import Path

from stitchopt.cache.store import default_cache_dir
from stitchopt.datasets.sources.base import BuiltIR
from stitchopt.datasets.sources.sdist import fetch_sdist
from stitchopt.errors import DatasetError, StitchoptError
from stitchopt.toolchain.cuda import find_cuda
from stitchopt.toolchain.device import cuda_device_ir
from stitchopt.toolchain.discovery import Toolchain

PROJECT, VERSION = "llama-cpp-python", "0.3.16"
SDIST_SHA256 = "34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6"
GGML = "vendor/llama.cpp/ggml"  # inside the sdist's top directory
STUB_DIR = Path(__file__).with_name("ggml_cuda_stub")
FLAGS = ("-std=c++17", "-DGGML_USE_CUDA", "-Wno-everything")
DOWNLOAD_TIMEOUT_S = 600.0

# file stem -> (family, split)
FILES: dict[str, tuple[str, str]] = {
    "acc": ("acc", "train"),
    "add-id": ("add-id", "train"),
    "arange": ("arange", "test"),
    "argmax": ("reduce", "train"),
    "argsort": ("argsort", "train"),
    "binbcast": ("binbcast", "train"),
    "clamp": ("clamp", "train"),
    "concat": ("concat", "validation"),
    "conv-transpose-1d": ("conv", "train"),
    "conv2d-dw": ("conv", "train"),
    "conv2d-transpose": ("conv", "train"),
    "convert": ("convert", "train"),
    "count-equal": ("reduce", "train"),
    "cpy": ("cpy", "train"),
    "cross-entropy-loss": ("cross-entropy-loss", "test"),
    "diagmask": ("diagmask", "validation"),
    "fattn-tile-f16": ("fattn", "train"),
    "fattn-tile-f32": ("fattn", "train"),
    "fattn-wmma-f16": ("fattn", "train"),
    "getrows": ("getrows", "test"),
    "gla": ("gla", "validation"),
    "im2col": ("conv", "train"),
    "mean": ("reduce", "train"),
    "mmvf": ("mmv", "train"),
    "mmvq": ("mmv", "train"),
    "norm": ("norm", "test"),
    "opt-step-adamw": ("opt-step", "train"),
    "opt-step-sgd": ("opt-step", "train"),
    "pad": ("pad", "train"),
    "pool2d": ("pool2d", "test"),
    "quantize": ("quantize", "train"),
    "roll": ("roll", "train"),
    "rope": ("rope", "test"),
    "scale": ("scale", "test"),
    "set-rows": ("set-rows", "train"),
    "softcap": ("softcap", "test"),
    "softmax": ("softmax", "test"),
    "ssm-conv": ("ssm", "test"),
    "ssm-scan": ("ssm", "test"),
    "sum": ("reduce", "train"),
    "sumrows": ("reduce", "train"),
    "tsembd": ("tsembd", "train"),
    "unary": ("unary", "train"),
    "upscale": ("upscale", "validation"),
    "wkv": ("wkv", "validation"),
}

_unpacking = threading.Lock()  # the builder's threads share one unpacked tree


class GgmlCudaSource:
    name = "ggml-cuda"
    version = 1
    licence = "MIT (llama.cpp / ggml, vendored in llama-cpp-python); IR is derived from it"
    description = f"llama.cpp's CUDA kernels (ggml-cuda) from the {PROJECT}=={VERSION} sdist, device-only for sm_90"

    def __init__(self, cache: Path | None = None, sha256: str = SDIST_SHA256) -> None:
        self.cache = cache or default_cache_dir() / "downloads"
        self.sha256 = sha256  # the sdist's, pinned

    def units(self) -> list[str]:
        return list(FILES)

    def unit_of(self, name: str) -> str:
        return name.split("#", 1)[0].removesuffix(".cu")

    def build(self, unit: str, toolchain: Toolchain, scratch: Path) -> list[BuiltIR]:
        if unit not in FILES:
            raise DatasetError(f"ggml-cuda: {unit}.cu is not one of its units")
        ggml = self._ggml_tree()
        source = ggml / "src" / "ggml-cuda" / f"{unit}.cu"
        # __FILE__ (in ggml's asserts) names the tree as "ggml/...": the IR, and the labels keyed by it, do not
        # depend on where the cache is.
        flags = [*FLAGS, f"-ffile-prefix-map={ggml}=ggml", "-I", str(ggml / "include"), "-I", str(ggml / "src")]
        flags += ["-I", str(STUB_DIR)]
        try:
            bitcode = cuda_device_ir(toolchain, find_cuda(), source, flags=flags)
        except StitchoptError as exc:
            raise DatasetError(f"ggml-cuda: {unit}.cu: {exc}") from exc
        family, split = FILES[unit]
        command = f"clang -x cuda --cuda-device-only --cuda-gpu-arch=sm_90 -O3 {' '.join(FLAGS)} {unit}.cu"
        return [BuiltIR(f"{unit}.cu", family, bitcode, command, "cuda", split)]

    def _ggml_tree(self) -> Path:
        """ggml's sources unpacked from the sdist (downloaded once, checked against the pinned sha256)."""
        tree = self.cache / f"{PROJECT}-{VERSION}-ggml"
        with _unpacking:
            if tree.is_dir():
                return tree
            archive = self.cache / f"{PROJECT.replace('-', '_')}-{VERSION}.tar.gz"
            if not archive.is_file() or _sha256(archive) != self.sha256:
                archive = fetch_sdist(PROJECT, VERSION, self.cache, timeout=DOWNLOAD_TIMEOUT_S)
                if _sha256(archive) != self.sha256:
                    raise DatasetError(
                        f"{archive.name}: not the sdist this dataset is pinned to (sha256 {self.sha256})"
                    )
            self.cache.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=self.cache) as scratch:
                _unpack_ggml(archive, Path(scratch))
                os.replace(Path(scratch) / "ggml", tree)
        return tree


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _unpack_ggml(archive: Path, scratch: Path) -> None:
    """ggml's headers and its CUDA back end, into `scratch/ggml`."""
    wanted = ("/include/", "/src/ggml-cuda/")
    with tarfile.open(archive) as bundle:
        for member in bundle.getmembers():
            top, _, inside = member.name.partition("/")
            if not inside.startswith(GGML + "/") or not member.isfile():
                continue
            relative = inside.removeprefix(GGML + "/")
            direct_header = relative.startswith("src/") and relative.count("/") == 1 and relative.endswith(".h")
            if not (direct_header or any(f"/{relative}".startswith(w) for w in wanted)):
                continue
            target = scratch / "ggml" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            extracted = bundle.extractfile(member)
            if extracted is None:
                continue
            with extracted, open(target, "wb") as out:
                shutil.copyfileobj(extracted, out)
