"""Lifting assembly to IR: pairs, round trips, the retrieval baseline, and the mechanics of the LLM Compiler
backend with a tiny randomly initialized Llama and a tokenizer made here (pipeline, prompts, parsing; not
quality)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stitchopt.cache.store import EvaluationStore
from stitchopt.core import IRModule
from stitchopt.datasets.benchmarks import Benchmark
from stitchopt.datasets.demo import demo_programs
from stitchopt.evaluation.evaluator import Evaluator
from stitchopt.learning.heldout import evaluate_model
from stitchopt.lifting.backends import RetrievalLifter, defined_functions, rename_functions
from stitchopt.lifting.harness import lift_eval
from stitchopt.lifting.llm_compiler import (
    DISASSEMBLY,
    FLAG_TUNING,
    extract_code,
    parse_passes,
)
from stitchopt.lifting.pairs import PairSet, make_pairs
from stitchopt.lifting.roundtrip import normalize_asm, round_trip
from stitchopt.models.flag_model import FlagModel
from stitchopt.models.shipped import DEFAULT_MODEL_DIR
from stitchopt.passes.catalogue import Catalogue
from stitchopt.reports.lifting import lift_rows
from stitchopt.toolchain.baselines import load_baselines
from stitchopt.toolchain.discovery import Toolchain
from stitchopt.toolchain.frontend import load_module

pytestmark = pytest.mark.slow

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def modules(toolchain: Toolchain) -> list[IRModule]:
    demo = sorted(demo_programs().values())
    return [load_module(toolchain, path) for path in (DATA / "loop_sum.c", demo[0], demo[1])]


@pytest.fixture(scope="module")
def pairs(toolchain: Toolchain, modules: list[IRModule]) -> PairSet:
    return make_pairs(toolchain, modules)


def test_pairs_round_trip_exactly_from_their_own_reference_ir(toolchain: Toolchain, pairs: PairSet) -> None:
    assert len(pairs.pairs) == 3 and pairs.split_modules == 0
    options = load_baselines(toolchain, ("Oz",))["Oz"].options
    for pair in pairs.pairs:
        assert "define" in pair.ir and ".text" in pair.asm
        trip = round_trip(toolchain, pair.ir, pair.asm, options)
        assert trip.parses and trip.exact and trip.edit_distance == 0.0
    broken = round_trip(toolchain, "define i32 @f( {", pairs.pairs[0].asm, options)
    assert not broken.parses and not broken.exact and broken.edit_distance == 1.0 and broken.error
    assert normalize_asm('  movl $1, %eax   # comment\n\n\t.ident "clang"\n') == ["movl $1, %eax"]


def test_modules_too_long_for_the_context_are_split_per_function(toolchain: Toolchain, modules: list[IRModule]) -> None:
    split = make_pairs(toolchain, modules[:1], fits=lambda pair: ":" in pair.name and "main" not in pair.name)
    assert split.split_modules == 1
    assert [p.name for p in split.pairs] == ["loop_sum:checksum", "loop_sum:classify"]
    assert split.too_long == ("loop_sum:main",)  # counted, not silently dropped


def test_retrieval_finds_itself_and_renames_the_neighbours_functions(toolchain: Toolchain, pairs: PairSet) -> None:
    own = lift_eval(toolchain, pairs, RetrievalLifter(pairs.pairs))
    assert all(r.exact for r in own.results) and own.bleu == pytest.approx(1.0)
    assert "BLEU" in lift_rows([own], "t").headers and own.bleu_signature.startswith("nrefs:1")
    others = RetrievalLifter(pairs.pairs[1:])
    lifted = others.lift(pairs.pairs[0].asm)
    assert set(defined_functions(pairs.pairs[0].asm)) & {
        line.split("@")[1].split("(")[0] for line in lifted.splitlines() if line.startswith("define")
    }  # the neighbour's functions carry the input's names
    assert rename_functions("call @a() @ab @b", ["a", "b"], ["b", "a"]) == "call @b() @ab @a"


def test_llm_answers_are_parsed_robustly() -> None:
    answer = "Here:\n<code>define void @f() {\n  ret void\n}</code> done"
    assert extract_code(answer) == "define void @f() {\n  ret void\n}\n"
    assert extract_code("<code>define void @f()") == "define void @f()\n"  # cut off by the token budget
    assert extract_code("```llvm\nret void\n```") == "ret void\n"
    assert parse_passes("Run passes -reg2mem -instcombine -simplifycfg to reduce instruction count from 9 to 4") == (
        "reg2mem",
        "instcombine",
        "simplifycfg",
    )
    assert parse_passes("opt -p 'sroa,gvn' does it.") == ("sroa", "gvn")
    assert parse_passes("no idea") == ()
    assert FLAG_TUNING.format(ir="X") == (
        "[INST] Tell me how to optimize this LLVM-IR for object file size:\n\n<code>X</code> [/INST]"
    )
    assert DISASSEMBLY.format(asm="A") == "[INST] Disassemble this code to LLVM-IR:\n\n<code>A</code> [/INST]"


def _tiny_llama(directory: Path) -> None:
    """A Llama of a few thousand parameters and a byte-level BPE tokenizer trained on two sentences."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(
        [DISASSEMBLY.format(asm="movl $1, %eax\nretq"), "define i32 @f() { ret i32 0 }"], trainer
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.save_pretrained(directory)
    config = transformers.LlamaConfig(
        vocab_size=len(fast),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(directory)


def test_llm_compiler_backend_runs_a_local_model_and_never_downloads(
    toolchain: Toolchain, catalogue: Catalogue, pairs: PairSet, store: EvaluationStore, tmp_path: Path
) -> None:
    _tiny_llama(tmp_path / "tiny")
    from stitchopt.lifting.flag_tuning import llm_compiler_proposer
    from stitchopt.lifting.llm_compiler import LLMCompiler

    backend = LLMCompiler(tmp_path / "tiny", max_new_tokens=6, context=4096)
    answer = backend.generate(DISASSEMBLY.format(asm="movl $1, %eax"))
    assert isinstance(answer, str) and answer == backend.generate(DISASSEMBLY.format(asm="movl $1, %eax"))  # greedy
    assert isinstance(backend.tune_flags("define void @f() { ret void }"), tuple)
    small = PairSet(pairs.pairs[:1], 0, ())
    result = lift_eval(toolchain, small, backend)
    assert len(result.results) == 1 and not result.results[0].exact  # random weights: garbage, judged as such
    assert backend.fits(pairs.pairs[0]) == (
        backend.count_tokens(DISASSEMBLY.format(asm=pairs.pairs[0].asm)) + backend.count_tokens(pairs.pairs[0].ir)
        <= 4096
    )
    with Evaluator(toolchain, store, jobs=2) as evaluator:
        model = FlagModel.from_pretrained(DEFAULT_MODEL_DIR, catalogue)
        program = Benchmark(str(DATA / "loop_sum.c"), DATA / "loop_sum.c", "loop_sum", "test")
        proposer = llm_compiler_proposer(toolchain, catalogue, backend)
        evaluation = evaluate_model(evaluator, catalogue, model, [program], ks=(2,), proposers={"LLM": proposer})
    (outcome,) = evaluation.programs
    assert outcome.ratios["LLM + backup"] <= 1.0 and outcome.compilations["LLM + backup"] in (1, 2)
    from stitchopt.features.base import Representation
    from stitchopt.features.module import FeatureModule
    from stitchopt.lifting.llm_expert import LLMCompilerRepresentation

    representation = LLMCompilerRepresentation(backend)
    assert isinstance(representation, Representation)  # what the stitching study takes as an extra expert
    module = FeatureModule.from_bytes(toolchain, (DATA / "features_sample.ll").read_bytes(), "sample")
    vector = representation.extract(module)
    assert vector.shape == (16,) == (len(representation.feature_names()),) and np.isfinite(vector).all()
    assert np.array_equal(vector, representation.extract(module))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "stitchopt",
            "lift-eval",
            str(DATA / "loop_sum.c"),
            "--lifter",
            "llm-compiler",
            "--weights",
            str(tmp_path / "none"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert missing.returncode == 2 and "never downloads weights" in missing.stderr
