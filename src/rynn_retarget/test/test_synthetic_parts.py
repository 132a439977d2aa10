"""The synthetic operator computes only the parts a source publishes, and the same values either way."""

import threading

import numpy as np

from rynn_retarget.operator.feed import OperatorFeed
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig


def test_partial_frames_equal_the_full_frame_and_skip_the_rest():
    operator = SyntheticOperator(SyntheticOperatorConfig(seed=4))
    for t in np.linspace(0.0, 21.0, 211):  # every motion of the "all" cycle, ramps and holds
        full = operator.frame_at(t)
        trackers = operator.frame_at(t, frozenset({"trackers"}))
        hands = operator.frame_at(t, frozenset({"hands"}))
        assert list(trackers.trackers) == list(full.trackers) == ["chest", "left_wrist", "left_upper_arm",
                                                                    "right_wrist", "right_upper_arm"]
        for name, matrix in full.trackers.items():
            np.testing.assert_array_equal(trackers.trackers[name], matrix)
        assert hands.trackers == {} and not trackers.left_hand.valid and not trackers.right_hand.valid
        for side in ("left_hand", "right_hand"):
            np.testing.assert_array_equal(getattr(hands, side).points, getattr(full, side).points)
            assert getattr(hands, side).valid


def test_a_frame_owns_its_hand_points():
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="reach"))  # open hands: the same pose every frame
    first = operator.frame_at(0.5)
    expected = first.left_hand.points.copy()
    first.left_hand.points[:] = 0.0  # a consumer that edits its frame in place
    np.testing.assert_array_equal(operator.frame_at(0.6).left_hand.points, expected)


def test_the_feed_asks_the_synthetic_source_for_its_parts_only():
    frames, got = [], threading.Event()

    def on_frame(frame):
        frames.append(frame)
        got.set()

    feed = OperatorFeed(SyntheticOperator(), on_frame, rate_hz=100.0, parts=frozenset({"hands"})).start()
    try:
        assert got.wait(10.0)
    finally:
        feed.stop()
    assert frames[0].trackers == {} and frames[0].left_hand.valid and frames[0].right_hand.valid
