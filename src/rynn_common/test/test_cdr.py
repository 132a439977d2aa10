"""Malformed CDR bytes become a ValueError naming the type, never rclpy's RMWError."""

import pytest

from rynn_common.cdr import MalformedMessage, deserialize


def test_good_bytes_round_trip_and_malformed_ones_are_a_value_error():
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    raw = serialize_message(JointState(name=["a", "b"], position=[0.5, -0.5]))
    assert list(deserialize(raw, JointState).position) == [0.5, -0.5]
    for bad in (b"", raw[:4], raw[:len(raw) // 2], raw[:12] + b"\xff\xff\xff\xff" + raw[16:]):
        with pytest.raises(MalformedMessage, match="malformed JointState"):
            deserialize(bad, JointState)
    assert issubclass(MalformedMessage, ValueError)
