"""The preformatted CDR buffers write what Fast DDS puts on the wire for the same message: the bytes rosbags
serialises (and reads back from a recorded bag), every field what rclpy deserialises. A JointState with an empty
array is where rclpy's own serialize_message differs (it pads before the empty data, and rosbags refuses that)."""

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from rynn_common.action_layout import joint_names
from rynn_common.cdr_layout import JointStateLayout, RobotActionLayout

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
JOINT_STATE = "sensor_msgs/msg/JointState"
STAMPS_NS = [0, 1, 999_999_999, 1_000_000_000, 1_764_825_600_123_456_789, 2**31 * 1_000_000_000 - 1]


@pytest.mark.parametrize("counts", [(54, 54, 54), (54, 54, 0), (54, 0, 0), (0, 0, 0), (3, 1, 2)])
@pytest.mark.parametrize("frame_id", ["", "base_link", "abc"])
def test_joint_state_bytes_are_the_wire_format(counts, frame_id):
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import JointState

    rng = np.random.default_rng(sum(counts) + len(frame_id))
    names = joint_names() if counts[0] == 54 else ["a", "joint_bc", "d" * 7]
    layout = JointStateLayout(names, counts, frame_id)
    for stamp_ns in STAMPS_NS:
        arrays = [rng.normal(scale=10.0, size=n) for n in counts]
        raw = layout.pack(stamp_ns, *arrays)
        msg = JointState(name=names, position=arrays[0].tolist(), velocity=arrays[1].tolist(), effort=arrays[2].tolist())
        msg.header.frame_id = frame_id
        msg.header.stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
        assert deserialize_message(raw, JointState) == msg
        assert list(deserialize_message(raw, JointState).velocity) == arrays[1].tolist()
        assert raw == bytes(TYPESTORE.serialize_cdr(_rosbags_joint_state(names, frame_id, stamp_ns, arrays), JOINT_STATE))
        if counts == (54, 54, 54):  # no empty array: rclpy's serialize_message writes the same length
            assert len(raw) == len(serialize_message(msg))


def _rosbags_joint_state(names, frame_id, stamp_ns, arrays):
    types = TYPESTORE.types
    stamp = types["builtin_interfaces/msg/Time"](sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
    return types[JOINT_STATE](header=types["std_msgs/msg/Header"](stamp=stamp, frame_id=frame_id), name=list(names),
                              position=np.asarray(arrays[0], dtype=np.float64), velocity=np.asarray(arrays[1], dtype=np.float64),
                              effort=np.asarray(arrays[2], dtype=np.float64))


def test_joint_state_arrays_of_another_length_are_refused():
    layout = JointStateLayout(joint_names(), (54, 54, 0))
    with pytest.raises(ValueError):
        layout.pack(0, np.zeros(54), np.zeros(53))
    with pytest.raises(ValueError):
        layout.pack(0, np.zeros(54), np.zeros(54), np.zeros(54))


def test_robot_action_bytes_are_what_rclpy_serialises():
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message, serialize_message
    from rynn_teleop_msgs.msg import RobotAction

    from rynn_common.ros_conversions import make_robot_action
    from rynn_common.ros_names import BASE_FRAME

    rng = np.random.default_rng(7)
    for frame_id in (BASE_FRAME, "", "x"):
        layout = RobotActionLayout(frame_id)
        for stamp_ns, sequence in zip(STAMPS_NS, (0, 1, 200, 2**32 + 5, 2**63 + 1, 2**64 - 1)):
            positions = rng.uniform(-3.0, 3.0, 54)
            sec, nanosec = divmod(stamp_ns, 10**9)
            expected = make_robot_action(positions, Time(sec=sec, nanosec=nanosec), frame_id, sequence)
            raw = layout.pack(stamp_ns, positions, sequence)
            assert len(raw) == len(serialize_message(expected)) and deserialize_message(raw, RobotAction) == expected


def test_robot_action_positions_read_only_what_rclpy_reads_the_same():
    """The bridge's fast read of /rynn/action: the usual bytes give rclpy's positions; anything else is None
    (left to rclpy), never another value."""
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message, serialize_message
    from rynn_teleop_msgs.msg import RobotAction

    from rynn_common.cdr_layout import robot_action_positions
    from rynn_common.ros_conversions import make_robot_action

    rng = np.random.default_rng(3)
    read = 0
    for frame_id in ("base_link", "", "a", "abcd", "x" * 13, "bäse"):
        raw = serialize_message(make_robot_action(rng.uniform(-3, 3, 54), Time(sec=5, nanosec=6), frame_id, 9))
        variants = [raw, raw + b"\x00" * 8, raw[:-1], raw[:20], b"\x00\x00" + raw[2:], raw[:12] + b"\xff" * 4 + raw[16:]]
        for _ in range(200):
            corrupted = bytearray(raw)
            corrupted[int(rng.integers(0, min(len(raw), 40)))] ^= 1 << int(rng.integers(0, 8))
            variants.append(bytes(corrupted))
        for variant in variants:
            fast = robot_action_positions(variant)
            try:
                expected = np.asarray(deserialize_message(variant, RobotAction).positions)
            except Exception:  # rclpy refuses it: so must the fast read (then the bridge counts it malformed)
                assert fast is None
                continue
            if fast is not None:
                read += 1
                assert fast.dtype == np.float64 and fast.tobytes() == expected.tobytes()
        assert robot_action_positions(raw) is not None  # what every publisher here sends
    assert read > 100


@pytest.mark.parametrize("frames", [
    [("operator_world", name) for name in ("operator_chest", "operator_left_wrist", "operator_right_wrist",
                                           "operator_left_upper_arm", "operator_right_upper_arm")],
    [("base_link", "a")],
    [(f"link_{'x' * (i % 5)}{i}", f"child{i}") for i in range(54)],
])
def test_tf_message_bytes_are_what_rclpy_serialises_of_the_same_message(frames):
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message, serialize_message
    from tf2_msgs.msg import TFMessage

    from rynn_common.cdr_layout import TfMessageLayout
    from rynn_common.ros_conversions import make_tf_message, tf_message_bytes

    rng = np.random.default_rng(len(frames))
    layout = TfMessageLayout(frames)
    for stamp_ns in STAMPS_NS:
        matrices = np.tile(np.eye(4), (len(frames), 1, 1))
        for matrix in matrices:
            q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
            matrix[:3, :3], matrix[:3, 3] = q * np.sign(np.linalg.det(q)), rng.normal(scale=2.0, size=3)
        sec, nanosec = divmod(stamp_ns, 10**9)
        expected = make_tf_message(frames, matrices, Time(sec=sec, nanosec=nanosec))
        raw = tf_message_bytes(layout, matrices, stamp_ns)
        assert deserialize_message(raw, TFMessage) == expected
        _same_bytes_but_padding(raw, serialize_message(expected))
        assert raw == bytes(TYPESTORE.serialize_cdr(_rosbags_tf(expected), "tf2_msgs/msg/TFMessage"))
    with pytest.raises(ValueError):
        tf_message_bytes(layout, np.tile(np.eye(4), (len(frames) + 1, 1, 1)), 0)


def test_bimanual_skeleton_bytes_are_what_rclpy_serialises_of_the_same_message():
    """Lost joints (NaN: confidence 0), confidences out of range, an invalid hand, elbows absent, not finite and
    given: every field by make_bimanual_skeleton's rules."""
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message, serialize_message
    from rynn_teleop_msgs.msg import BimanualSkeleton

    from rynn_common.cdr_layout import BimanualSkeletonLayout
    from rynn_common.ros_conversions import bimanual_skeleton_bytes, make_bimanual_skeleton

    rng = np.random.default_rng(11)
    for frame_id, left_frame, right_frame in (("camera_color_optical_frame",) * 3, ("", "operator_left_wrist", "r")):
        layout = BimanualSkeletonLayout(frame_id, left_frame, right_frame)
        for i, stamp_ns in enumerate(STAMPS_NS):
            left, right = rng.normal(scale=0.1, size=(2, 21, 3))
            left[i % 21] = np.nan
            confidence = rng.uniform(-0.5, 1.5, size=(2, 21))
            elbows = [None, [np.inf, 0.0, 0.0], rng.normal(size=3), rng.normal(size=3)]
            fields = dict(left_confidence=confidence[0], right_confidence=None if i % 2 else confidence[1],
                          left_valid=i % 3 != 0, right_valid=True,
                          left_elbow=elbows[i % 4], right_elbow=elbows[(i + 1) % 4])
            sec, nanosec = divmod(stamp_ns, 10**9)
            expected = make_bimanual_skeleton(left, right, Time(sec=sec, nanosec=nanosec), frame_id,
                                              left_frame_id=left_frame, right_frame_id=right_frame, **fields)
            raw = bimanual_skeleton_bytes(layout, left, right, stamp_ns, **fields)
            assert deserialize_message(raw, BimanualSkeleton) == expected
            _same_bytes_but_padding(raw, serialize_message(expected))
    assert not expected.left_elbow_valid or not expected.right_elbow_valid  # the rules were exercised


def _same_bytes_but_padding(raw: bytes, rclpy_bytes: bytes) -> None:
    """rclpy's serialize_message leaves alignment padding as it found the memory (0xcd seen); ours is zero, as
    rosbags writes it. Equal lengths and fields (checked by the caller) fix every other byte."""
    assert len(raw) == len(rclpy_bytes)
    differing = [i for i, (a, b) in enumerate(zip(raw, rclpy_bytes)) if a != b]
    assert all(raw[i] == 0 for i in differing), differing


def _rosbags_tf(msg):
    types = TYPESTORE.types
    Header, Time = types["std_msgs/msg/Header"], types["builtin_interfaces/msg/Time"]
    Vector3, Quaternion = types["geometry_msgs/msg/Vector3"], types["geometry_msgs/msg/Quaternion"]
    transforms = []
    for t in msg.transforms:
        header = Header(stamp=Time(sec=t.header.stamp.sec, nanosec=t.header.stamp.nanosec), frame_id=t.header.frame_id)
        tr, q = t.transform.translation, t.transform.rotation
        transform = types["geometry_msgs/msg/Transform"](translation=Vector3(x=tr.x, y=tr.y, z=tr.z),
                                                         rotation=Quaternion(x=q.x, y=q.y, z=q.z, w=q.w))
        transforms.append(types["geometry_msgs/msg/TransformStamped"](header=header, child_frame_id=t.child_frame_id,
                                                                      transform=transform))
    return types["tf2_msgs/msg/TFMessage"](transforms=transforms)
