"""Rotation matrices as the unit quaternions ROS messages carry, many at once (ROS-free)."""

from __future__ import annotations

import numpy as np


def quaternions_xyzw(rotations: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotation matrices -> (n, 4) unit quaternions (x, y, z, w), w >= 0, in one vectorised pass
    (Shepperd's method: each from the largest of its four squared components, so none divides by ~0)."""
    r = np.asarray(rotations, dtype=np.float64)
    r00, r01, r02 = r[:, 0, 0], r[:, 0, 1], r[:, 0, 2]
    r10, r11, r12 = r[:, 1, 0], r[:, 1, 1], r[:, 1, 2]
    r20, r21, r22 = r[:, 2, 0], r[:, 2, 1], r[:, 2, 2]
    squares = np.stack([1 + r00 - r11 - r22, 1 - r00 + r11 - r22, 1 - r00 - r11 + r22, 1 + r00 + r11 + r22], axis=1)
    # Row k: 4 * q_k * (x, y, z, w) for the case where component k is the largest.
    candidates = np.stack([
        np.stack([squares[:, 0], r01 + r10, r02 + r20, r21 - r12], axis=1),
        np.stack([r01 + r10, squares[:, 1], r12 + r21, r02 - r20], axis=1),
        np.stack([r02 + r20, r12 + r21, squares[:, 2], r10 - r01], axis=1),
        np.stack([r21 - r12, r02 - r20, r10 - r01, squares[:, 3]], axis=1),
    ], axis=1)
    largest = np.argmax(squares, axis=1)
    rows = np.arange(len(r))
    quaternions = candidates[rows, largest] / (2.0 * np.sqrt(squares[rows, largest]))[:, None]
    return np.where(quaternions[:, 3:] < 0, -quaternions, quaternions)
