"""studies/kernel_timing.py: what each method chooses from ptxas's measures, and how its GPU time is counted
(a build with outputs other than -O3's is rejected and the kernel keeps -O3)."""

from __future__ import annotations

from typing import Any

import pytest

from stitchopt.studies.kernel_timing import (
    candidate_rows,
    choices,
    executed_margin_rows,
    executed_rank_rows,
    fastest_train_list,
    loop_sign_rows,
    method_rows,
    summarize,
    vendor_rows,
)


def _variant(sass: int, registers: int) -> dict[str, Any]:
    return {"cubin": f"{sass}.cubin", "sass": sass, "registers": registers, "spilled": 0, "stack": 0}


# Builds: 0 is -O3; 1 smaller but with more registers (worse: every method's backup refuses it); 2 smaller and
# no worse; 3 the smallest, no worse, but its outputs will differ from -O3's; list "e" does not build.
ENTRY: dict[str, Any] = {
    "uri": "bench://kernels-v1/spmv#k",
    "kernel": "k",
    "family": "spmv",
    "split": "test",
    "roles": {"-O3": "O3", "search": "c", "long search": None},
    "pool": ["a", "b", "c", "d", "e"],
    "order": ["a", "O3", "b", "e", "c", "d"],
    "builds": {"O3": 0, "a": 1, "b": 2, "c": 3, "d": 0, "e": None},
    "variants": [_variant(1000, 20), _variant(800, 24), _variant(900, 20), _variant(700, 18)],
}


def test_methods_choose_from_the_ptxas_measures_with_the_o3_backup() -> None:
    chosen = choices(ENTRY)
    assert chosen["static + backup"] == 0  # its top list "a" has more registers than -O3: the backup
    assert chosen["jit k=3"] == 2  # a, b, e: "a" refused, "e" unbuilt, "b" kept
    assert chosen["jit k=10"] == chosen["every pool list"] == chosen["search"] == 3
    assert chosen["long search"] == 0  # its search kept -O3


def test_a_build_with_other_outputs_is_rejected_and_timed_as_o3() -> None:
    document = {
        "manifest": {"kernels": [ENTRY]},
        "kernels": [
            {
                "uri": ENTRY["uri"],
                "identical_outputs": [True, True, True, False],
                "median_ms": [2.0, 1.0, 1.5, 0.5],
                "fastest_again": {"build": 1, "o3_ms": 2.0, "ms": 1.2},  # refused by ptxas's measures, not by a run
            }
        ],
    }
    rows = method_rows(document)
    assert rows["jit k=10"][0] == {"uri": ENTRY["uri"], "split": "test", "time": 1.0, "sass": 1.0, "rejected": True}
    assert rows["jit k=3"][0]["time"] == 0.75
    assert rows["fastest with -O3's outputs"][0]["time"] == 0.6  # as its own rounds timed it, not the first ones
    document["kernels"][0]["fastest_again"] = {"build": 1, "o3_ms": 2.0, "ms": 1.99}
    assert method_rows(document)["fastest with -O3's outputs"][0]["time"] == 1.0  # 0.5% faster: noise, -O3 kept
    document["kernels"][0]["fastest_again"] = {"build": 0, "o3_ms": 2.0, "ms": 1.8}
    assert method_rows(document)["fastest with -O3's outputs"][0]["time"] == 1.0  # -O3 against itself: noise
    summary = {line["method"]: line for line in summarize(rows)}
    assert summary["jit k=10"]["rejected"] == 1 and summary["jit k=10"]["faster"] == 0
    assert summary["jit k=3"]["geomean_time"] == pytest.approx(-0.25) and summary["jit k=3"]["faster"] == 1


def test_the_fastest_train_list_is_learned_on_train_kernels_and_applied_to_the_others() -> None:
    """Over the train kernel, list "b" is fastest (and "c" faster still, but its outputs differ there): the test
    kernel gets "b"'s build, and the train kernel, which taught it, gets no row for it."""
    train = {**ENTRY, "uri": "bench://kernels-v1/gemm#t", "split": "train"}
    document = {
        "manifest": {"kernels": [train, ENTRY]},
        "kernels": [
            {
                "uri": train["uri"],
                "identical_outputs": [True, True, True, False],
                "median_ms": [2.0, 1.8, 1.6, 1.0],
                "fastest_again": {"build": 2, "o3_ms": 2.0, "ms": 1.6},
            },
            {
                "uri": ENTRY["uri"],
                "identical_outputs": [True, True, True, True],
                "median_ms": [2.0, 2.0, 2.2, 2.0],
                "fastest_again": {"build": 0, "o3_ms": 2.0, "ms": 2.0},
            },
        ],
    }
    assert fastest_train_list(document) == "b"
    learned = method_rows(document)["fastest train list"]
    assert [row["uri"] for row in learned] == [ENTRY["uri"]] and learned[0]["time"] == pytest.approx(1.1)


def test_nvccs_build_is_reported_beside_o3_and_only_where_it_was_timed() -> None:
    timed = {
        "uri": ENTRY["uri"],
        "identical_outputs": [True, True, True, True],
        "median_ms": [2.0, 2.0, 2.2, 2.0],
        "fastest_again": {"build": 0, "o3_ms": 2.0, "ms": 2.0},
        "vendor": {"identical_outputs": False, "median_ms": 1.5},
    }
    other = {**ENTRY, "uri": "bench://ggml-cuda-v1/scale.cu#k"}
    untimed = {key: value for key, value in timed.items() if key != "vendor"} | {"uri": other["uri"]}
    document = {"manifest": {"kernels": [ENTRY, other]}, "kernels": [timed, untimed]}
    assert vendor_rows(document) == [
        {"uri": ENTRY["uri"], "split": "test", "o3_ms": 2.0, "nvcc_ms": 1.5, "identical_outputs": False}
    ]


def test_a_candidate_alone_counts_as_o3_where_it_does_not_build() -> None:
    entry = {**ENTRY, "candidates": ["b", "e"]}  # "b" builds variant 2, "e" does not build
    timed = {"uri": ENTRY["uri"], "identical_outputs": [True] * 4, "median_ms": [2.0, 2.0, 1.5, 2.0]}
    rows = {row["candidate"]: row for row in candidate_rows({"manifest": {"kernels": [entry]}, "kernels": [timed]})}
    assert rows["b"]["geomean_time"] == pytest.approx(-0.25) and rows["b"]["faster"] == 1
    assert rows["e"]["geomean_time"] == pytest.approx(0.0) and rows["e"]["faster"] == rows["e"]["slower"] == 0


def _with_loops(*shapes: tuple[int, int, int]) -> dict[str, Any]:
    """ENTRY whose variants carry loop shapes (loops, unrotated, innermost loads/stores), as `gpu_timing.py loops`
    writes them."""
    variants = [
        {**variant, "loops": {"loops": a, "unrotated": b, "inner_memory": c}}
        for variant, (a, b, c) in zip(ENTRY["variants"], shapes, strict=True)
    ]
    return {**ENTRY, "variants": variants}


def test_the_time_objective_refuses_builds_whose_loops_lose_o3s_shape() -> None:
    """Build 3 (the smallest, jit k=10's size choice) leaves a loop tested at the top; build 2 keeps -O3's
    loops: the time objective picks 2 where size picks 3; without loop shapes it has no rows."""
    assert "jit k=10, time objective" not in choices(ENTRY)
    entry = _with_loops((1, 0, 8), (1, 0, 8), (1, 0, 8), (1, 1, 8))
    chosen = choices(entry)
    assert chosen["jit k=10"] == 3 and chosen["jit k=10, time objective"] == 2
    assert chosen["static + backup, time objective"] == 0 and chosen["jit k=3, time objective"] == 2
    timed = {"uri": ENTRY["uri"], "identical_outputs": [True, True, True, True], "median_ms": [2.0, 2.0, 2.0, 3.0]}
    document = {"manifest": {"kernels": [entry]}, "kernels": [timed]}
    assert loop_sign_rows(document) == [{"split": "test", "same kept": 2, "slower refused": 1}]
    fewer_loads = _with_loops((1, 0, 8), (1, 0, 8), (1, 0, 4), (0, 0, 8))  # 2 unrolled less; 3 fine
    assert choices(fewer_loads)["jit k=10, time objective"] == 3
    assert choices(fewer_loads)["jit k=3, time objective"] == 0


def test_the_time_objective_with_the_launch_keeps_the_fewest_instructions_executed_by_a_margin() -> None:
    """Builds 4 and 5 are -O3 with unroll counts 4 and 8; 5 executes fewest but spills (local memory, which the
    CPU run does not see), 3's CPU run wrote other outputs (None); 2 executes 1% fewer than -O3: no evidence."""
    unrolled = {"O3 ; -unroll-count=2": None, "O3 ; -unroll-count=4": 4, "O3 ; -unroll-count=8": 5}
    variants = [*ENTRY["variants"], _variant(1500, 30), {**_variant(2000, 40), "spilled": 8}]
    counted = [
        {**variant, "executed": executed}
        for variant, executed in zip(variants, [100, 120, 99, None, 70, 60], strict=True)
    ]
    entry = {**ENTRY, "builds": {**ENTRY["builds"], **unrolled}, "variants": counted}
    chosen = choices(entry)
    assert chosen["static + backup, time objective with the launch"] == 4  # "a" executes more than -O3
    assert chosen["jit k=10, time objective with the launch"] == chosen["fewest executed on the CPU"] == 4
    document = {"manifest": {"kernels": [entry]}, "kernels": [{"uri": ENTRY["uri"], "identical_outputs": [True] * 6}]}
    document["kernels"][0]["median_ms"] = [2.0, 2.5, 2.0, 1.0, 1.5, 1.6]
    # what the margin may keep: 4 (70), which ran faster; not 5 (spills), 3 (no count) or 2 (1% fewer)
    assert executed_margin_rows(document) == [{"split": "test", "faster": 1, "same": 0, "slower": 0}]
    counted[4] = {**counted[4], "executed": 99}
    assert choices(entry)["jit k=10, time objective with the launch"] == 0  # 1% fewer: -O3 stays
    assert "fewest executed on the CPU" not in choices(ENTRY)  # variants without counts: no such rows
    # 3 is left out (no count); 0 and 2 ran as fast; 2 and 4 execute as many (99); 5 fewer than 4 but ran slower.
    timed = {"uri": ENTRY["uri"], "identical_outputs": [True] * 6, "median_ms": [2.0, 2.5, 2.0, 1.0, 1.5, 1.6]}
    ranks = executed_rank_rows({"manifest": {"kernels": [entry]}, "kernels": [timed]})
    assert ranks == [{"split": "test", "alike": 7, "opposite": 1, "tied": 1}]
