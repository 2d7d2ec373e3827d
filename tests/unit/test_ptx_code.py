"""toolchain/ptx_code.py on PTX bodies written as llc writes them (its loop comments, labels, `// %bb.N:`
blocks): instructions counted, loops placed by those comments, latches by branches and fall-throughs, memory
counted by elements."""

from __future__ import annotations

from stitchopt.toolchain.ptx_code import LoopShape, PtxCode, ptx_code

# A rotated loop: its one block branches back on a predicate (two successors), with a vector load (4 elements)
# and a parameter load (not counted) in it.
ROTATED = """
	ld.param.u64 	%rd1, [k_param_0];
$L__BB0_1:                              // =>This Inner Loop Header: Depth=1
	ld.param.u32 	%r9, [k_param_1];
	ld.global.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd1];
	st.global.f32 	[%rd1], %f1;
	@%p1 bra 	$L__BB0_1;
// %bb.2:
	ret;
"""

# The same loop tested at the top: its latch only branches back.
TOP_TESTED = """
$L__BB0_1:                              // =>This Inner Loop Header: Depth=1
	@!%p1 bra 	$L__BB0_3;
// %bb.2:                               //   in Loop: Header=BB0_1 Depth=1
	ld.global.f32 	%f1, [%rd1];
	bra.uni 	$L__BB0_1;
$L__BB0_3:
	ret;
"""

# llc's layout of a rotated loop whose latch ends `@%p bra EXIT; bra.uni HEADER`: two successors.
EXIT_THEN_BACK = """
$L__BB0_1:                              // =>This Inner Loop Header: Depth=1
	ld.global.f32 	%f1, [%rd1];
	@%p1 bra 	$L__BB0_2;
	bra.uni 	$L__BB0_1;
$L__BB0_2:
	ret;
"""

# nbody_forces as a list left it: the outer loop's latch sits above its header and falls into it; the inner
# loop's exit branch goes to that latch. Both loops are tested at the top; only the inner loop's memory counts.
NESTED = """
	bra.uni 	$L__BB1_3;
$L__BB1_13:                             //   in Loop: Header=BB1_3 Depth=1
	bar.sync 	0;
$L__BB1_3:                              // =>This Loop Header: Depth=1
                                        //     Child Loop BB1_10 Depth 2
	@%p4 bra 	$L__BB1_7;
	bra.uni 	$L__BB1_4;
$L__BB1_7:                              //   in Loop: Header=BB1_3 Depth=1
	ld.global.v4.f32 	{%f52, %f51, %f50, %f49}, [%rd15];
	st.shared.v4.f32 	[%rd3], {%f52, %f51, %f50, %f49};
$L__BB1_10:                             //   Parent Loop BB1_3 Depth=1
                                        // =>  This Inner Loop Header: Depth=2
	@%p8 bra 	$L__BB1_12;
// %bb.11:                              //   in Loop: Header=BB1_10 Depth=2
	add.s32 	%r13, %r4, %r15;
$L__BB1_12:                             //   in Loop: Header=BB1_10 Depth=2
	@%p9 bra 	$L__BB1_14;
	bra.uni 	$L__BB1_13;
$L__BB1_14:                             //   in Loop: Header=BB1_10 Depth=2
	ld.shared.v4.f32 	{%f28, %f29, %f30, %f31}, [%rd18+-8];
	atom.shared.add.u32 	%r1, [%rd2], 1;
	bra.uni 	$L__BB1_10;
$L__BB1_4:
	ret;
"""


def test_a_rotated_loop_counts_its_elements_but_not_parameters() -> None:
    assert ptx_code([ROTATED]) == PtxCode(instructions=6, loops=LoopShape(loops=1, unrotated=0, inner_memory=5))


def test_a_loop_tested_at_the_top_is_unrotated() -> None:
    assert ptx_code([TOP_TESTED]).loops == LoopShape(loops=1, unrotated=1, inner_memory=1)
    assert ptx_code([EXIT_THEN_BACK]).loops == LoopShape(loops=1, unrotated=0, inner_memory=1)


def test_nested_loops_follow_llcs_comments_wherever_the_blocks_lie() -> None:
    assert ptx_code([NESTED]).loops == LoopShape(loops=2, unrotated=2, inner_memory=5)
    assert ptx_code([NESTED, ROTATED]) == PtxCode(instructions=20, loops=LoopShape(3, 2, 10))
    assert ptx_code(["\tret;\n"]) == PtxCode(1, LoopShape(0, 0, 0))


def test_the_signs_name_what_is_worse_than_o3() -> None:
    o3 = LoopShape(loops=1, unrotated=0, inner_memory=8)
    assert LoopShape(1, 0, 8).slower_signs(o3) == [] and LoopShape(0, 0, 16).slower_signs(o3) == []
    assert LoopShape(2, 1, 2).slower_signs(o3) == [
        "loops 1 -> 2",
        "unrotated loops 0 -> 1",
        "innermost-loop loads/stores 8 -> 2",
    ]
