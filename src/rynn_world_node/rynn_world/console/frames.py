"""Camera frames on their way to the browser: bounded size and rate, optional skeleton overlay.

The browser gets at most ``max_fps`` frames per second of at most ``max_width`` pixels, whatever
the camera delivers, so one console costs the same with a 640x480 or an 832x480 stream.
The overlay draws the operator skeleton with the world model's own depth-aware renderer.
"""

from __future__ import annotations

import cv2
import numpy as np

from rynn_common.description import D435I_COLOR, CameraIntrinsics
from rynn_world.skeleton import SkeletonRenderer, render_control

MAX_BROWSER_FPS = 15.0
MAX_BROWSER_WIDTH = 640


def downscale(rgb: np.ndarray, max_width: int) -> np.ndarray:
    """The frame itself when it is narrow enough, else an area-averaged copy ``max_width`` wide
    with the same aspect ratio; ``ValueError`` for anything but an (H, W, 3) uint8 image."""
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"expected an (H, W, 3) uint8 image, got {rgb.shape} {rgb.dtype}")
    if max_width <= 0:
        raise ValueError(f"max_width must be positive, got {max_width}")
    height, width = rgb.shape[:2]
    if width <= max_width:
        return rgb
    new_height = max(1, round(height * max_width / width))
    return cv2.resize(rgb, (max_width, new_height), interpolation=cv2.INTER_AREA)


class FramePacer:
    """Lets a frame through at most ``max_fps`` times per second (monotonic seconds)."""

    def __init__(self, max_fps: float):
        if not 0 < max_fps <= MAX_BROWSER_FPS:
            raise ValueError(f"max_fps must be in (0, {MAX_BROWSER_FPS:g}], got {max_fps}")
        self.period = 1.0 / max_fps
        self._last = float("-inf")

    def due(self, now: float) -> bool:
        if now - self._last < self.period:
            return False
        self._last = now
        return True


class SkeletonOverlay:
    """Paints the camera-frame operator skeleton over a (downscaled) camera image.

    The pixels come from the head camera's intrinsics scaled to the image size: the graph's
    cameras (simulated robot, world model) are that camera at another resolution.
    """

    def __init__(self, camera: CameraIntrinsics = D435I_COLOR):
        self.camera = camera
        self._renderer: SkeletonRenderer | None = None
        self._buffer: np.ndarray | None = None

    def draw(self, rgb: np.ndarray, joints: np.ndarray, valid: np.ndarray, elbows: np.ndarray) -> np.ndarray:
        """A copy of ``rgb`` with the skeleton drawn on it. joints (2, 21, 3) metres in the camera
        optical frame (NaN = missing), valid (2,), elbows (2, 3) with NaN where unknown."""
        height, width = rgb.shape[:2]
        if self._renderer is None or (self._renderer.intrinsics.width, self._renderer.intrinsics.height) != (width, height):
            self._renderer = SkeletonRenderer(self.camera.scaled(width, height))
            self._buffer = np.zeros((height, width, 3), dtype=np.uint8)
        drawing = render_control(self._renderer, joints, valid, elbows, out=self._buffer)  # the world model's control frame
        painted = drawing.any(axis=2)
        out = rgb.copy()
        out[painted] = drawing[painted]
        return out
