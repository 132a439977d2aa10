"""sensor_msgs Image/CameraInfo exactly as realsense2_camera publishes its colour stream,
and the way back from an Image to RGB pixels.

Shared by the simulated robot node, the world-model node, the episode generator and the
exporters so all write and read the same topics, frame and encoding as the real camera.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from rynn_common.description import CameraIntrinsics
from rynn_common.ros_names import CAMERA_FRAME
from rynn_robot_bridge.image_layout import IMAGE_CHANNELS, image_layout_problem


def make_image(rgb: np.ndarray, stamp: Time, frame_id: str = CAMERA_FRAME) -> Image:
    """An rgb8 Image from an (H, W, 3) uint8 array; ``ValueError`` on any other shape or dtype."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"rgb8 needs an (H, W, 3) uint8 array, got {rgb.shape} {rgb.dtype}")
    height, width = rgb.shape[:2]
    msg = Image(header=Header(stamp=stamp, frame_id=frame_id), height=height, width=width, encoding="rgb8",
                is_bigendian=0, step=width * 3)
    msg.data = np.ascontiguousarray(rgb).tobytes()
    return msg


def make_camera_info(intrinsics: CameraIntrinsics, stamp: Time, frame_id: str = CAMERA_FRAME,
                     distortion_model: str = "plumb_bob", distortion=(0.0,) * 5) -> CameraInfo:
    """Pinhole CameraInfo as realsense2_camera fills it for the colour stream: K and P from the
    intrinsics, R identity, the device's distortion (zero for the simulated and generated cameras)."""
    k = intrinsics.matrix()
    projection = np.hstack([k, np.zeros((3, 1))])
    return CameraInfo(
        header=Header(stamp=stamp, frame_id=frame_id),
        height=intrinsics.height,
        width=intrinsics.width,
        distortion_model=distortion_model,
        d=[float(c) for c in distortion],
        k=k.ravel().tolist(),
        r=np.eye(3).ravel().tolist(),
        p=projection.ravel().tolist(),
    )


def image_to_rgb(msg) -> np.ndarray:
    """(H, W, 3) uint8 RGB copy of an Image (rclpy or rosbags message); ``ValueError``
    naming the problem for another encoding or a step/data length that does not fit."""
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
