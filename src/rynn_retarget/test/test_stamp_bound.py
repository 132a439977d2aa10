"""The stamp check that cannot latch (issue 17 row 7), without DDS."""

import math

from rynn_retarget.input_guard import StampBound

DAY = 86_400.0


def test_a_stamp_a_day_ahead_is_rejected_and_never_becomes_the_high_water_mark():
    bound = StampBound(max_future_s=0.2)
    assert bound.check(100.0, clock_now=100.01) is None
    assert bound.check(100.0 + DAY, clock_now=100.02) == "future_stamp"
    assert bound.check(100.03, clock_now=100.03) is None  # the stream goes on at once
    assert bound.last_stamp == 100.03


def test_within_the_bound_a_lead_is_accepted_and_holds_the_stream_back_at_most_that_long():
    bound = StampBound(max_future_s=0.2)
    assert bound.check(10.15, clock_now=10.0) is None  # sender clock 150 ms ahead: accepted
    assert bound.check(10.05, clock_now=10.05) == "out_of_order"
    assert bound.check(10.2, clock_now=10.2) is None  # 0.2 s later the receiver's stamps pass again


def test_out_of_order_and_nonfinite_stamps_are_named():
    bound = StampBound(max_future_s=0.2)
    assert bound.check(5.0, clock_now=5.0) is None
    assert bound.check(5.0, clock_now=5.1) == "out_of_order"
    assert bound.check(math.nan, clock_now=5.1) == "nonfinite_stamp"
    assert bound.check(math.inf, clock_now=None) == "nonfinite_stamp"
    assert bound.check(5.0 + DAY, clock_now=None) is None  # no clock (a recording): order only
