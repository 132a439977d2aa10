"""One set of field rules for skeleton messages (``rynn_common.skeleton_arrays.hand_skeleton_fields``,
``elbow_fields``): the episode bag writer, which had its own copy of them, stores the bytes the retarget node
publishes on /rynn/operator/skeleton_camera and refuses a hand the live builders refuse."""

import numpy as np
import pytest

from rynn_common.cdr_layout import BimanualSkeletonLayout
from rynn_common.description import CameraIntrinsics
from rynn_common.ros_names import CAMERA_FRAME, CAMERA_SKELETON_TOPIC
from rynn_robot_bridge.episodes.bag_writer import EpisodeBagWriter

INTRINSICS = CameraIntrinsics(32, 24, 30.0, 30.0, 16.0, 12.0)
STAMP_NS = 1_764_825_600_123_456_789


def _stored_skeleton(bag) -> bytes:
    from rosbags.rosbag2 import Reader

    with Reader(bag) as reader:
        connections = [c for c in reader.connections if c.topic == CAMERA_SKELETON_TOPIC]
        return next(raw for _, _, raw in reader.messages(connections=connections))


@pytest.mark.parametrize("elbows", [
    np.array([[0.1, -0.2, 0.7], [np.nan, np.nan, np.nan]]),  # the right elbow unknown
    np.array([[np.inf, 0.0, 0.5], [0.2, 0.1, 0.6]]),  # the left elbow not finite
])
def test_the_bag_writer_stores_the_skeleton_bytes_the_retarget_node_publishes(elbows, tmp_path):
    """Byte for byte, but for the alignment padding, zeroed by a rosbags round trip of the live bytes as
    test_camera_messages does; hands with lost joints (NaN, inf) and a hand the retargeter marks invalid."""
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message
    from rynn_teleop_msgs.msg import BimanualSkeleton

    from rynn_common.bag_types import make_typestore
    from rynn_common.ros_conversions import bimanual_skeleton_bytes, make_bimanual_skeleton

    points = np.random.default_rng(5).uniform(-0.3, 0.6, (2, 21, 3))
    points[0, 4] = np.nan
    points[0, 17, 2] = np.inf
    valid = np.array([True, False])
    writer = EpisodeBagWriter(tmp_path / "bag", INTRINSICS)
    writer.write_skeleton(points, valid, elbows, STAMP_NS)
    writer.close({})
    stored = _stored_skeleton(tmp_path / "bag")

    live = bimanual_skeleton_bytes(BimanualSkeletonLayout(*[CAMERA_FRAME] * 3), points[0], points[1], STAMP_NS,
                                   left_valid=bool(valid[0]), right_valid=bool(valid[1]),
                                   left_elbow=elbows[0], right_elbow=elbows[1])
    msgtype = "rynn_teleop_msgs/msg/BimanualSkeleton"
    store = make_typestore()
    assert stored == bytes(store.serialize_cdr(store.deserialize_cdr(live, msgtype), msgtype))
    stamp = Time(sec=STAMP_NS // 10**9, nanosec=STAMP_NS % 10**9)
    assert deserialize_message(stored, BimanualSkeleton) == make_bimanual_skeleton(
        points[0], points[1], stamp, CAMERA_FRAME, left_valid=bool(valid[0]), right_valid=bool(valid[1]),
        left_elbow=elbows[0], right_elbow=elbows[1])


def test_a_hand_that_is_not_21_joints_is_refused_by_every_writer(tmp_path):
    from rynn_common.ros_conversions import bimanual_skeleton_bytes

    hands = np.zeros((2, 20, 3))
    refusal = r"a hand skeleton needs \(21, 3\) joint positions, got \(20, 3\)"
    with pytest.raises(ValueError, match=refusal):
        bimanual_skeleton_bytes(BimanualSkeletonLayout(*[CAMERA_FRAME] * 3), hands[0], hands[1], STAMP_NS)
    writer = EpisodeBagWriter(tmp_path / "bag", INTRINSICS)
    with pytest.raises(ValueError, match=refusal):
        writer.write_skeleton(hands, np.array([True, True]), np.full((2, 3), np.nan), STAMP_NS)
