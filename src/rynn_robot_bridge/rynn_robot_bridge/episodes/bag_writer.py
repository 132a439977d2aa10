"""Write one generated episode as a rosbag2 MCAP bag (no ROS install needed).

Messages are the standard Jazzy types plus rynn_teleop_msgs, so the bag's type
definitions are exactly the ones the ROS nodes use, on the recorder's topics (one
episode schema: the training reader reads generated and recorded bags alike). The file is written by the
recorder's writer (``recording.rosbag2_mcap``): each topic carries the QoS the
live graph's publisher of that topic offers, so a replayed generated episode
behaves like a recorded one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rynn_common.action_layout import joint_names
from rynn_common.bag_types import make_typestore
from rynn_common.description import CameraIntrinsics
from rynn_common.ros_names import (
    ACTION_TOPIC,
    BASE_FRAME,
    CAMERA_FRAME,
    CAMERA_INFO_TOPIC,
    CAMERA_SKELETON_TOPIC,
    EPISODE_TOPIC,
    IMAGE_TOPIC,
    JOINT_STATES_TOPIC,
    REFERENCE_IMAGE_TOPIC,
)
from rynn_common.skeleton_arrays import elbow_fields, hand_skeleton_fields
from rynn_robot_bridge.camera_messages import camera_info_fields, rgb8_image_fields
from rynn_robot_bridge.recording.rosbag2_mcap import LATCHED_QOS, OfferedQos, Rosbag2McapWriter

TOPICS = {
    "image": (IMAGE_TOPIC, "sensor_msgs/msg/Image"),
    "camera_info": (CAMERA_INFO_TOPIC, "sensor_msgs/msg/CameraInfo"),
    "reference_image": (REFERENCE_IMAGE_TOPIC, "sensor_msgs/msg/Image"),
    "skeleton": (CAMERA_SKELETON_TOPIC, "rynn_teleop_msgs/msg/BimanualSkeleton"),
    "action": (ACTION_TOPIC, "rynn_teleop_msgs/msg/RobotAction"),
    "joint_states": (JOINT_STATES_TOPIC, "sensor_msgs/msg/JointState"),
    "episode": (EPISODE_TOPIC, "std_msgs/msg/String"),
}
# What the live graph's publishers offer (bridge: canonical camera depth 2, /joint_states depth 10;
# retarget node: reliable depth 10); one-off messages are latched.
OFFERED_QOS = {
    "image": OfferedQos(depth=2),
    "camera_info": OfferedQos(depth=2),
    "reference_image": LATCHED_QOS,
    "skeleton": OfferedQos(),
    "action": OfferedQos(),
    "joint_states": OfferedQos(),
    "episode": LATCHED_QOS,
}


class EpisodeBagWriter:
    """One open bag; ``write_*`` take NumPy data and a time in nanoseconds."""

    def __init__(self, path: Path, intrinsics: CameraIntrinsics):
        self.store = make_typestore()
        self.types = self.store.types
        self.intrinsics = intrinsics
        self._writer = Rosbag2McapWriter(path, self.store)
        for key, (topic, msgtype) in TOPICS.items():
            self._writer.add_topic(topic, msgtype, [OFFERED_QOS[key]])
        self._joint_names = joint_names()
        self._action_sequence = 0

    def close(self, custom_data: dict[str, str]) -> None:
        self._writer.custom_data.update(custom_data)
        self._writer.close()

    def copy_message(self, key: str, raw: bytes, stamp_ns: int) -> None:
        """A message of the ``key`` topic already serialized (CDR), e.g. read from another episode's bag."""
        self._writer.write(TOPICS[key][0], stamp_ns, raw)

    def _write(self, key: str, msg, stamp_ns: int) -> None:
        self._writer.write_message(TOPICS[key][0], msg, stamp_ns)

    def _header(self, stamp_ns: int, frame_id: str):
        Time = self.types["builtin_interfaces/msg/Time"]
        return self.types["std_msgs/msg/Header"](stamp=Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9), frame_id=frame_id)

    def _image(self, rgb: np.ndarray, stamp_ns: int):
        """The live camera's Image (``camera_messages``); ``ValueError`` for anything but (H, W, 3) uint8."""
        return self.types["sensor_msgs/msg/Image"](header=self._header(stamp_ns, CAMERA_FRAME), **rgb8_image_fields(rgb))

    def write_reference_image(self, rgb: np.ndarray, stamp_ns: int) -> None:
        self._write("reference_image", self._image(rgb, stamp_ns), stamp_ns)

    def write_frame(self, rgb: np.ndarray, stamp_ns: int) -> None:
        """Image and CameraInfo under one stamp, as realsense2_camera publishes them."""
        self._write("image", self._image(rgb, stamp_ns), stamp_ns)
        RegionOfInterest = self.types["sensor_msgs/msg/RegionOfInterest"]
        info = self.types["sensor_msgs/msg/CameraInfo"](  # a rosbags message spells out rclpy's defaults: no binning, no ROI
            header=self._header(stamp_ns, CAMERA_FRAME), **camera_info_fields(self.intrinsics),
            binning_x=0, binning_y=0, roi=RegionOfInterest(x_offset=0, y_offset=0, height=0, width=0, do_rectify=False),
        )
        self._write("camera_info", info, stamp_ns)

    def write_skeleton(self, points_camera: np.ndarray, valid: np.ndarray, elbows: np.ndarray, stamp_ns: int) -> None:
        """Both hands (2, 21, 3) and the robot elbows (2, 3; NaN = unknown) in the camera optical
        frame, filled by the retarget node's field rules (``hand_skeleton_fields``, ``elbow_fields``)."""
        Point = self.types["geometry_msgs/msg/Point"]
        Hand = self.types["rynn_teleop_msgs/msg/HandSkeleton"]

        def point(xyz: np.ndarray):
            x, y, z = xyz.tolist()
            return Point(x=x, y=y, z=z)

        header = self._header(stamp_ns, CAMERA_FRAME)
        hands = []
        for side, (joints, ok) in enumerate(zip(points_camera, valid)):  # HandSkeleton.LEFT = 0, RIGHT = 1
            points, confidence, hand_valid = hand_skeleton_fields(joints, valid=bool(ok))
            hands.append(Hand(header=header, side=side, joints=[point(p) for p in points], confidence=confidence,
                              valid=hand_valid))
        (left_elbow, left_elbow_valid), (right_elbow, right_elbow_valid) = (elbow_fields(e) for e in elbows)
        self._write("skeleton", self.types["rynn_teleop_msgs/msg/BimanualSkeleton"](
            header=header, left=hands[0], right=hands[1], left_elbow=point(left_elbow), right_elbow=point(right_elbow),
            left_elbow_valid=left_elbow_valid, right_elbow_valid=right_elbow_valid,
        ), stamp_ns)

    def write_action(self, positions: np.ndarray, stamp_ns: int) -> None:
        self._action_sequence += 1
        msg = self.types["rynn_teleop_msgs/msg/RobotAction"](
            header=self._header(stamp_ns, BASE_FRAME), positions=np.asarray(positions, dtype=np.float64),
            sequence=self._action_sequence,
        )
        self._write("action", msg, stamp_ns)

    def write_joint_state(self, position, velocity, effort, stamp_ns: int) -> None:
        msg = self.types["sensor_msgs/msg/JointState"](
            header=self._header(stamp_ns, ""), name=self._joint_names, position=np.asarray(position, float),
            velocity=np.asarray(velocity, float), effort=np.asarray(effort, float),
        )
        self._write("joint_states", msg, stamp_ns)

    def write_episode_summary(self, summary: dict, stamp_ns: int) -> None:
        self._write("episode", self.types["std_msgs/msg/String"](data=json.dumps(summary, sort_keys=True)), stamp_ns)
