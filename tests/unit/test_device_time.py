"""toolchain/device_time.py: which counted build the time objective keeps (apply/device.py, the timing report and
the chooser benchmark all keep by it)."""

from __future__ import annotations

from stitchopt.toolchain.device_time import fewest_executed


def test_the_fewest_executed_is_kept_where_the_margin_below_o3_allows_and_a_tie_keeps_the_first() -> None:
    assert fewest_executed([0.99, 0.97, None, 0.9, 0.9]) == 3  # 4 ties with 3: the first stays
    assert fewest_executed([0.99, 0.985, None]) is None  # none 2% fewer than -O3's: -O3 stays
    assert fewest_executed([0.99], margin=0.0) == 0 and fewest_executed([1.0], margin=0.0) == 0
    assert fewest_executed([None, 1.2]) is None and fewest_executed([]) is None
