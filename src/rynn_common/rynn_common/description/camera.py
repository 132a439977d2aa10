"""The head camera: a RealSense D435i-like colour stream.

The intrinsics live here, next to the URDF mount, because the skeleton
projection, the world model's CameraInfo and the simulated camera must agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# camera_link pose in torso_link: above the shoulders, pitched down towards the table.
CAMERA_MOUNT_XYZ = (0.0, 0.0, 0.76)
CAMERA_MOUNT_PITCH = 0.8  # rad, positive pitch tilts camera_link's x axis downwards


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole intrinsics of a colour stream (pixels), no distortion."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    def __post_init__(self):
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"image size must be positive, got {self.width}x{self.height}")
        if self.fx <= 0 or self.fy <= 0:
            raise ValueError(f"focal lengths must be positive, got fx={self.fx} fy={self.fy}")

    def scaled(self, width: int, height: int) -> "CameraIntrinsics":
        """The same camera resampled to ``width`` x ``height`` (e.g. the world model's 832x480)."""
        sx, sy = width / self.width, height / self.height
        return CameraIntrinsics(width, height, self.fx * sx, self.fy * sy, self.cx * sx, self.cy * sy)

    def matrix(self) -> np.ndarray:
        """3x3 K as in sensor_msgs/CameraInfo.k."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def project(self, points_optical: np.ndarray) -> np.ndarray:
        """Pixel coordinates (N, 2) of points (N, 3) in the optical frame (z forward)."""
        points = np.asarray(points_optical, dtype=np.float64).reshape(-1, 3)
        z = np.maximum(points[:, 2], 1e-9)
        return np.column_stack([self.fx * points[:, 0] / z + self.cx, self.fy * points[:, 1] / z + self.cy])


D435I_COLOR = CameraIntrinsics(width=640, height=480, fx=615.0, fy=615.0, cx=320.0, cy=240.0)
