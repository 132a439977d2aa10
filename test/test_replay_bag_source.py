"""source:=replay from a recorded episode bag: the trackers (/tf) and gloves (/rynn/operator/hands)
come back as operator frames with the recorded poses, hands and timing."""

from __future__ import annotations

import time

import numpy as np
from transforms3d.quaternions import mat2quat

from recorded_bags import drop_message_definitions
from rynn_common.bag_types import make_typestore
from rynn_retarget.operator.frame import TRACKER_NAMES
from rynn_retarget.operator.replay import ReplaySource, read_bag_session
from rynn_robot_bridge.recording.rosbag2_mcap import OfferedQos, Rosbag2McapWriter

RATE_HZ, GLOVE_HZ, SECONDS = 100, 50, 0.5


def _pose(k: int, i: int) -> np.ndarray:
    pose = np.eye(4)
    angle = 0.1 * k + i
    pose[:3, :3] = [[np.cos(angle), -np.sin(angle), 0.0], [np.sin(angle), np.cos(angle), 0.0], [0.0, 0.0, 1.0]]
    pose[:3, 3] = [0.01 * k, 0.1 * i, 1.0 + 0.001 * k]
    return pose


def _write_bag(path):
    store = make_typestore()
    t = store.types
    writer = Rosbag2McapWriter(path, store)
    writer.add_topic("/tf", "tf2_msgs/msg/TFMessage", [OfferedQos()])
    writer.add_topic("/rynn/operator/hands", "rynn_teleop_msgs/msg/BimanualSkeleton", [OfferedQos()])

    def header(ns, frame):
        return t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=ns // 10**9, nanosec=ns % 10**9), frame_id=frame)

    for k in range(int(SECONDS * RATE_HZ)):
        ns = 10**9 + k * 10**9 // RATE_HZ
        if k % (RATE_HZ // GLOVE_HZ) == 0:
            hands = [t["rynn_teleop_msgs/msg/HandSkeleton"](
                header=header(ns, "wrist"), side=side,
                joints=[t["geometry_msgs/msg/Point"](x=0.001 * k, y=0.01 * j, z=side) for j in range(21)],
                confidence=np.ones(21, np.float32), valid=True) for side in (0, 1)]
            point = t["geometry_msgs/msg/Point"](x=0.0, y=0.0, z=0.0)
            writer.write_message("/rynn/operator/hands", t["rynn_teleop_msgs/msg/BimanualSkeleton"](
                header=header(ns, "wrist"), left=hands[0], right=hands[1], left_elbow=point, right_elbow=point,
                left_elbow_valid=False, right_elbow_valid=False), ns)
        transforms = []
        for i, name in enumerate(TRACKER_NAMES):
            pose = _pose(k, i)
            w, x, y, z = mat2quat(pose[:3, :3])
            transforms.append(t["geometry_msgs/msg/TransformStamped"](
                header=header(ns, "operator_world"), child_frame_id=f"operator_{name}",
                transform=t["geometry_msgs/msg/Transform"](
                    translation=t["geometry_msgs/msg/Vector3"](x=pose[0, 3], y=pose[1, 3], z=pose[2, 3]),
                    rotation=t["geometry_msgs/msg/Quaternion"](x=x, y=y, z=z, w=w))))
        writer.write_message("/tf", t["tf2_msgs/msg/TFMessage"](transforms=transforms), ns + 1000)  # received 1 µs later
    writer.close()


def test_a_recorded_bag_replays_its_operator_stream(tmp_path):
    _write_bag(tmp_path / "episode")
    meta, frames = read_bag_session(tmp_path / "episode")
    assert meta == {"source_bag": "episode"} and len(frames) == SECONDS * RATE_HZ
    np.testing.assert_allclose([f.stamp for f in frames], 1.0 + np.arange(len(frames)) / RATE_HZ + 1e-6, atol=1e-9)
    for k in (0, 17, 49):
        for i, name in enumerate(TRACKER_NAMES):
            np.testing.assert_allclose(frames[k].trackers[name], _pose(k, i), atol=1e-12)
        glove = k - k % (RATE_HZ // GLOVE_HZ)  # the newest glove sample received before the tracker sample
        assert frames[k].left_hand.valid and frames[k].right_hand.points[0, 2] == 1.0
        np.testing.assert_allclose(frames[k].left_hand.points[:, 0], 0.001 * glove)

    source = ReplaySource(tmp_path / "episode", realtime=True)
    started = time.monotonic()
    replayed = list(source.frames())
    assert len(replayed) == len(frames) and time.monotonic() - started >= 0.98 * (frames[-1].stamp - frames[0].stamp)


def test_a_bag_without_message_definitions_replays_the_same(tmp_path):
    """The replay reads with the project's typestore: with a Jazzy-only one it knew no BimanualSkeleton, so a
    bag that names its types without defining them (rosbag2 sqlite3 bags before Iron) could not be replayed."""
    _write_bag(tmp_path / "episode")
    _, with_definitions = read_bag_session(tmp_path / "episode")
    drop_message_definitions(tmp_path / "episode")
    _, without = read_bag_session(tmp_path / "episode")
    assert [f.stamp for f in without] == [f.stamp for f in with_definitions]
    for old, new in zip(with_definitions, without):
        assert all(np.array_equal(old.trackers[name], new.trackers[name]) for name in TRACKER_NAMES)
        assert np.array_equal(old.left_hand.points, new.left_hand.points)
        assert np.array_equal(old.right_hand.confidence, new.right_hand.confidence)


def test_a_bag_without_the_gloves_is_named(tmp_path):
    store = make_typestore()
    writer = Rosbag2McapWriter(tmp_path / "episode", store)
    writer.add_topic("/tf", "tf2_msgs/msg/TFMessage", [OfferedQos()])
    writer.close()
    try:
        read_bag_session(tmp_path / "episode")
    except ValueError as error:
        assert "/rynn/operator/hands" in str(error)
    else:
        raise AssertionError("a bag without the glove topic must be refused")
