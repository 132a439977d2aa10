"""The contents of the camera's sensor_msgs Image and CameraInfo, as realsense2_camera publishes its
colour stream, and the way back to RGB pixels and intrinsics (ROS-free).

One implementation for every writer and reader of the camera topics: the live nodes fill rclpy
messages from these fields (``ros_camera``), the episode bag writer fills rosbags messages from the
same fields, and the nodes, the exporters and the training reader decode any Image (rclpy or
rosbags) with ``image_to_rgb``. Kept free of ROS message classes so the generator and the training
reader need no rclpy.
"""

from __future__ import annotations

import numpy as np

from rynn_common.description import CameraIntrinsics
from rynn_robot_bridge.image_layout import IMAGE_CHANNELS, image_layout_problem


def rgb8_image_fields(rgb: np.ndarray) -> dict:
    """Every Image field but the header for an (H, W, 3) uint8 array, ``data`` as one flat uint8 array
    (a view of a contiguous ``rgb``); ``ValueError`` on any other shape or dtype."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"rgb8 needs an (H, W, 3) uint8 array, got {rgb.shape} {rgb.dtype}")
    height, width = rgb.shape[:2]
    return {"height": height, "width": width, "encoding": "rgb8", "is_bigendian": 0, "step": width * 3,
            "data": np.ascontiguousarray(rgb).reshape(-1)}


def camera_info_fields(intrinsics: CameraIntrinsics, distortion_model: str = "plumb_bob",
                       distortion=(0.0,) * 5) -> dict:
    """Every CameraInfo field but the header, binning and ROI (all zero), as realsense2_camera fills them for
    the colour stream: K and P from the intrinsics, R identity, the device's distortion (zero for the
    simulated and generated cameras)."""
    k = intrinsics.matrix()
    return {"height": intrinsics.height, "width": intrinsics.width, "distortion_model": distortion_model,
            "d": np.array(distortion, dtype=np.float64), "k": k.ravel(), "r": np.eye(3).ravel(),
            "p": np.hstack([k, np.zeros((3, 1))]).ravel()}


def image_to_rgb(msg) -> np.ndarray:
    """(H, W, 3) uint8 RGB pixels of an Image (rclpy or rosbags message), a view of its data when that is
    rgb8 without row padding; ``ValueError`` naming the problem for another encoding or a step/data
    length that does not fit."""
    data = np.frombuffer(msg.data, dtype=np.uint8)
    problem = image_layout_problem(msg.encoding, msg.width, msg.height, msg.step, data.size)
    if problem:
        raise ValueError(f"{msg.width}x{msg.height} {msg.encoding} image: {problem}")
    channels = IMAGE_CHANNELS[msg.encoding]
    row = msg.width * channels
    pixels = data.reshape(msg.height, msg.step)[:, :row].reshape(msg.height, msg.width, channels)
    if msg.encoding == "mono8":
        return np.repeat(pixels, 3, axis=2)
    rgb = pixels[:, :, :3]
    return np.ascontiguousarray(rgb[:, :, ::-1] if msg.encoding.startswith("bgr") else rgb)


def intrinsics_from_camera_info(msg) -> CameraIntrinsics:
    """The pinhole intrinsics of a CameraInfo (rclpy or rosbags message), read from K."""
    k = msg.k
    return CameraIntrinsics(int(msg.width), int(msg.height), float(k[0]), float(k[4]), float(k[2]), float(k[5]))
