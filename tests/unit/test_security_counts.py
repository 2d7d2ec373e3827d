"""The security counts read from IR text, on hand-written functions: one rule per test."""

from __future__ import annotations

import math

import pytest

from stitchopt.core import EvalResult, EvalStatus, Objective
from stitchopt.errors import InputError
from stitchopt.labels.labelset import LabelSet
from stitchopt.validate.security_guard import count_canaries, needs_codegen, read_counts

CLEAR_THEN_RETURN = """
define i32 @f(i32 %n) #0 {
  %key = alloca [16 x i8], align 16
  %p = getelementptr inbounds [16 x i8], ptr %key, i64 0, i64 0
  %r = call i32 @use(ptr %p)
  call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 16, i1 false)
  call void @llvm.lifetime.end.p0(i64 16, ptr %key)
  ret i32 %r
}
attributes #0 = { nounwind sspstrong }
"""


def test_a_zero_write_into_a_local_that_is_not_read_again_is_a_clearing_write() -> None:
    counts = read_counts(CLEAR_THEN_RETURN).own
    assert counts.clearing_writes == 1 and counts.protected_functions == 1
    assert needs_codegen(CLEAR_THEN_RETURN)


def test_a_zero_write_read_afterwards_is_an_initialization() -> None:
    text = CLEAR_THEN_RETURN.replace("  ret i32 %r", "  %again = call i32 @use(ptr %p)\n  ret i32 %r")
    assert read_counts(text).own.clearing_writes == 0


def test_zero_writes_to_globals_and_loaded_pointers_are_not_clearing() -> None:
    text = """
define void @g(ptr %slot) {
  store i32 0, ptr @counter, align 4
  %q = load ptr, ptr %slot, align 8
  store i8 0, ptr %q, align 1
  ret void
}
"""
    assert read_counts(text).own.clearing_writes == 0


def test_heap_memory_cleared_before_free_and_through_a_local_holding_its_pointer() -> None:
    text = """
define void @h() {
  %slot = alloca ptr, align 8
  %m = call ptr @malloc(i64 32)
  store ptr %m, ptr %slot, align 8
  %k = load ptr, ptr %slot, align 8
  %v = call i32 @use(ptr %k)
  store volatile i8 0, ptr %k, align 1
  call void @free(ptr %m)
  ret void
}
"""
    counts = read_counts(text).own
    assert counts.clearing_writes == 1 and counts.volatile_accesses == 1


def test_clearing_calls_fortified_calls_and_overflow_checks() -> None:
    text = """
define i32 @c(ptr %p, i32 %a, i32 %b) {
  call void @explicit_bzero(ptr %p, i64 8)
  %d = call ptr @__memcpy_chk(ptr %p, ptr %p, i64 4, i64 8)
  %s = call { i32, i1 } @llvm.sadd.with.overflow.i32(i32 %a, i32 %b)
  %o = extractvalue { i32, i1 } %s, 1
  br i1 %o, label %trap, label %ok

trap:
  call void @abort()
  unreachable

ok:
  %v = extractvalue { i32, i1 } %s, 0
  ret i32 %v
}
"""
    counts = read_counts(text).own
    assert (counts.clearing_calls, counts.fortified_calls, counts.overflow_checks) == (1, 1, 2)
    assert not needs_codegen(text)


def test_canaries_are_calls_of_stack_chk_fail_not_directives() -> None:
    assembly = "\t.globl f\n\tcallq\t__stack_chk_fail@PLT\n\t.hidden __stack_chk_fail\n"
    assert count_canaries(assembly) == 1


def test_security_is_an_objective_term_that_labels_score_only_with_measured_values() -> None:
    objective = Objective.parse("size=0.3,security=0.7")
    assert objective.probed_terms == ("security",)
    reference = EvalResult(EvalStatus.OK, "oz", size_bytes=100, security=2.0)
    assert objective.score(EvalResult(EvalStatus.OK, "p", size_bytes=90, security=1.0), reference) == pytest.approx(
        0.3 * 0.9 + 0.7 * 0.5
    )
    assert math.isinf(objective.score(EvalResult(EvalStatus.OK, "p", size_bytes=90), reference))
    labels = LabelSet("llvm", "cat", "d", (), (), 0.0)
    with pytest.raises(InputError, match="security"):
        labels.objective_values(objective)


# Two identical wipes, as -Oz leaves them, and what `mergefunc` makes of them: one body and a thunk.
COPIES = """
define internal void @wipe_a(ptr %ctx) {
  call void @llvm.memset.p0.i64(ptr %ctx, i8 0, i64 64, i1 false)
  ret void
}
define internal void @wipe_b(ptr %ctx) {
  call void @llvm.memset.p0.i64(ptr %ctx, i8 0, i64 64, i1 false)
  ret void
}
@table = constant [2 x ptr] [ptr @wipe_a, ptr @wipe_b]
"""
MERGED = """
define internal void @wipe_a(ptr %ctx) {
  call void @llvm.memset.p0.i64(ptr %ctx, i8 0, i64 64, i1 false)
  ret void
}
define internal void @wipe_b(ptr %ctx) {
  tail call void @wipe_a(ptr %ctx)
  ret void
}
@table = constant [2 x ptr] [ptr @wipe_a, ptr @wipe_b]
"""


def test_a_thunk_counts_the_items_of_the_function_it_calls_when_something_else_uses_it() -> None:
    reference = read_counts(COPIES)
    assert reference.own.clearing_writes == 2
    assert read_counts(MERGED).against(reference).clearing_writes == 2  # the merge removed nothing
    assert read_counts(MERGED).own.clearing_writes == 1  # counted per body it would look like a removal
    only_the_thunk_uses_it = MERGED.replace("[ptr @wipe_a, ptr @wipe_b]", "[ptr @wipe_b, ptr @wipe_b]")
    assert read_counts(only_the_thunk_uses_it).against(reference).clearing_writes == 1  # -Oz would have inlined it
    not_a_thunk = MERGED.replace(
        "  tail call void @wipe_a(ptr %ctx)\n", "  tail call void @wipe_a(ptr %ctx)\n  call void @use()\n"
    )
    assert read_counts(not_a_thunk).against(reference).clearing_writes == 1


# A wrapper that clears its buffer and calls a shared helper (-Oz's output), and a list's output that proved the
# clear dead: what is left of the wrapper is a bare call, the shape of a thunk.
WRAPPER = """
define void @helper(ptr %ctx) {
  call void @llvm.memset.p0.i64(ptr %ctx, i8 0, i64 64, i1 false)
  ret void
}
define void @wrapper(ptr %ctx, ptr %key) {
  call void @llvm.memset.p0.i64(ptr %key, i8 0, i64 16, i1 false)
  tail call void @helper(ptr %ctx)
  ret void
}
@hooks = constant [1 x ptr] [ptr @helper]
"""
WRAPPER_STRIPPED = WRAPPER.replace("  call void @llvm.memset.p0.i64(ptr %key, i8 0, i64 16, i1 false)\n", "")


def test_a_wrapper_left_as_a_bare_call_of_what_it_called_is_no_thunk() -> None:
    reference = read_counts(WRAPPER)
    assert reference.own.clearing_writes == 2
    stripped = read_counts(WRAPPER_STRIPPED)
    assert [(t.function, t.callee) for t in stripped.thunks] == [("wrapper", "helper")]  # it has a thunk's shape
    assert stripped.against(reference).clearing_writes == 1  # but the wrapper called the helper before: one lost
    assert stripped.against(read_counts(COPIES)).clearing_writes == 2  # a reference without that call credits it
    through_a_thunk = WRAPPER.replace("tail call void @helper(ptr %ctx)", "tail call void @middle(ptr %ctx)") + (
        "define internal void @middle(ptr %ctx) {\n  tail call void @helper(ptr %ctx)\n  ret void\n}\n"
    )
    assert stripped.against(read_counts(through_a_thunk)).clearing_writes == 1  # it reached the helper before too
