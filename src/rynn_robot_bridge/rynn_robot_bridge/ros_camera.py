"""rclpy sensor_msgs Image/CameraInfo exactly as realsense2_camera publishes its colour stream.

Used by the simulated robot node, the RealSense node and the world-model node; their contents come
from ``camera_messages``, which the episode bag writer fills its messages from too, so live and
recorded or generated episodes hold the same bytes.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from rynn_common.description import CameraIntrinsics
from rynn_common.ros_names import CAMERA_FRAME
from rynn_robot_bridge.camera_messages import camera_info_fields, rgb8_image_fields


def make_image(rgb: np.ndarray, stamp: Time, frame_id: str = CAMERA_FRAME) -> Image:
    """An rgb8 Image from an (H, W, 3) uint8 array; ``ValueError`` on any other shape or dtype."""
    fields = rgb8_image_fields(rgb)
    pixels = fields.pop("data")
    msg = Image(header=Header(stamp=stamp, frame_id=frame_id), **fields)
    # As bytes, set after construction: rclpy copies a NumPy array element by element (60 ms a frame)
    # and data passed to the constructor twice.
    msg.data = pixels.tobytes()
    return msg


def make_camera_info(intrinsics: CameraIntrinsics, stamp: Time, frame_id: str = CAMERA_FRAME,
                     distortion_model: str = "plumb_bob", distortion=(0.0,) * 5) -> CameraInfo:
    """Pinhole CameraInfo of the colour stream (``camera_messages.camera_info_fields``)."""
    return CameraInfo(header=Header(stamp=stamp, frame_id=frame_id),
                      **camera_info_fields(intrinsics, distortion_model, distortion))
