"""recording.reception_order: what the recorder node's takes hand to the bag, without DDS."""

from __future__ import annotations

import pytest

from rynn_robot_bridge.recording.reception_order import ReceptionOrder

MS = 1_000_000


def test_a_message_taken_one_take_late_is_still_written_before_newer_ones():
    """Take 1 begins at 100 ms and takes topic A (empty), then B. A receives a1 at 101 ms while B is taken,
    B received b1 at 102 ms: b1 is taken in take 1, a1 only in take 2. Sorting each take on its own
    wrote b1, then a1 (the bag's log times went backwards)."""
    order = ReceptionOrder(hold_back_ns=0)
    order.add(102 * MS, "b1")
    assert order.release(100 * MS) == []  # received after take 1 began: waits
    order.add(101 * MS, "a1")
    order.add(150 * MS, "b2")
    assert order.release(160 * MS) == [(101 * MS, "a1"), (102 * MS, "b1"), (150 * MS, "b2")]
    assert order.late == 0 and len(order) == 0


def test_the_hold_back_keeps_messages_stamped_just_before_a_take_for_the_next():
    order = ReceptionOrder(hold_back_ns=10 * MS)
    order.add(95 * MS, "x")  # stamped 5 ms before the take: may still have a sibling on its way
    order.add(80 * MS, "y")
    assert order.release(100 * MS) == [(80 * MS, "y")]
    order.add(92 * MS, "surfaced late")  # stamped before x, takeable only now
    assert order.release(200 * MS) == [(92 * MS, "surfaced late"), (95 * MS, "x")]
    assert order.late == 0


def test_a_message_later_than_the_hold_back_is_logged_at_the_last_time_and_counted():
    order = ReceptionOrder(hold_back_ns=10 * MS)
    order.add(50 * MS, "a")
    assert order.release(100 * MS) == [(50 * MS, "a")]
    order.add(40 * MS, "very late")
    order.add(60 * MS, "b")
    assert order.release(200 * MS) == [(50 * MS, "very late"), (60 * MS, "b")]
    assert order.late == 1


def test_release_everything_and_ties_keep_the_order_they_were_added_in():
    order = ReceptionOrder(hold_back_ns=10**12)
    for name in ("first", "second", "third"):
        order.add(7, name)
    order.add(5, "oldest")
    assert order.release(8) == []
    assert [item for _, item in order.release()] == ["oldest", "first", "second", "third"]


def test_nothing_handed_on_after_a_start_is_logged_before_it():
    order = ReceptionOrder(hold_back_ns=0)
    order.advance(500)  # the latched samples were logged at the start's time
    order.add(490, "received just before the start, taken after it")
    assert order.release() == [(500, "received just before the start, taken after it")]
    assert order.late == 1


def test_a_negative_hold_back_is_refused():
    with pytest.raises(ValueError, match="must not be negative"):
        ReceptionOrder(hold_back_ns=-1)
