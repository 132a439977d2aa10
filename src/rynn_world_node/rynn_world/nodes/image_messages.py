"""sensor_msgs/Image -> HxWx3 uint8 RGB, for the encodings a camera driver publishes."""

from __future__ import annotations

import cv2
import numpy as np
from sensor_msgs.msg import Image

CHANNELS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}


def image_to_rgb(msg: Image) -> np.ndarray:
    """RGB copy of ``msg``; ``ValueError`` naming the problem for other encodings or sizes."""
    channels = CHANNELS.get(msg.encoding)
    if channels is None:
        raise ValueError(f"unsupported encoding {msg.encoding!r} (supported: {', '.join(CHANNELS)})")
    row = msg.width * channels
    if msg.height == 0 or msg.width == 0 or msg.step < row or len(msg.data) < msg.step * msg.height:
        raise ValueError(
            f"{msg.width}x{msg.height} {msg.encoding} image with step {msg.step} has {len(msg.data)} bytes"
        )
    data = np.frombuffer(msg.data, dtype=np.uint8, count=msg.step * msg.height).reshape(msg.height, msg.step)
    pixels = data[:, :row].reshape(msg.height, msg.width, channels)
    if msg.encoding == "rgb8":
        return pixels.copy()
    if msg.encoding == "mono8":
        return np.repeat(pixels, 3, axis=2)
    code = {"bgr8": cv2.COLOR_BGR2RGB, "rgba8": cv2.COLOR_RGBA2RGB, "bgra8": cv2.COLOR_BGRA2RGB}[msg.encoding]
    return cv2.cvtColor(pixels, code)
