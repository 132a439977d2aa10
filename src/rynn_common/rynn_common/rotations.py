"""Rotation matrices as the unit quaternions ROS messages carry (ROS-free)."""

from __future__ import annotations

import math

import numpy as np


def quaternions_xyzw(rotations: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotation matrices -> (n, 4) unit quaternions (x, y, z, w), w >= 0 (Shepperd's method:
    each from the largest of its four squared components, so none divides by ~0).

    Scalar maths per matrix: messages carry 5 (trackers) to 54 (robot TF) rotations at 20-120 Hz, and
    for so few numpy's per-call overhead dominated (5 rotations: 101 us as arrays, 3 us as floats)."""
    r = np.asarray(rotations, dtype=np.float64).reshape(-1, 9)
    return np.array([_quaternion(*row) for row in r.tolist()], dtype=np.float64).reshape(-1, 4)


def _quaternion(r00, r01, r02, r10, r11, r12, r20, r21, r22) -> tuple[float, float, float, float]:
    s0, s1, s2, s3 = 1 + r00 - r11 - r22, 1 - r00 + r11 - r22, 1 - r00 - r11 + r22, 1 + r00 + r11 + r22
    # 4 * q_k * (x, y, z, w) for the largest squared component s_k (the first one on a tie)
    if s0 >= s1 and s0 >= s2 and s0 >= s3:
        largest, x, y, z, w = s0, s0, r01 + r10, r02 + r20, r21 - r12
    elif s1 >= s2 and s1 >= s3:
        largest, x, y, z, w = s1, r01 + r10, s1, r12 + r21, r02 - r20
    elif s2 >= s3:
        largest, x, y, z, w = s2, r02 + r20, r12 + r21, s2, r10 - r01
    else:
        largest, x, y, z, w = s3, r21 - r12, r02 - r20, r10 - r01, s3
    scale = (-0.5 if w < 0 else 0.5) / math.sqrt(largest)
    return x * scale, y * scale, z * scale, w * scale
