"""The operator -> robot transform chain of the paper (Eq. 5) and small SE(3) helpers."""

from __future__ import annotations

import numpy as np
from transforms3d.quaternions import quat2mat


def invert(transform: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform."""
    rotation, translation = transform[:3, :3], transform[:3, 3]
    inverse = np.eye(4)
    inverse[:3, :3] = rotation.T
    inverse[:3, 3] = -rotation.T @ translation
    return inverse


def scale_translation(transform: np.ndarray, scale: float) -> np.ndarray:
    """Scale_s(T): the translation scaled by ``s``, the rotation untouched."""
    scaled = transform.copy()
    scaled[:3, 3] *= scale
    return scaled


def wrist_target(
    chest: np.ndarray, wrist: np.ndarray, base: np.ndarray, ee: np.ndarray, scale: float
) -> np.ndarray:
    """T_target = T_base . Scale_s(T_chest^-1 . T_wrist) . T_ee (paper Eq. 5)."""
    return base @ scale_translation(invert(chest) @ wrist, scale) @ ee


def tracker_point(chest: np.ndarray, tracker: np.ndarray, base: np.ndarray, scale: float) -> np.ndarray:
    """A tracker's position carried into base_link by the same chain (no T_ee)."""
    return (base @ scale_translation(invert(chest) @ tracker, scale))[:3, 3]


def rotation_angle(rotation_a: np.ndarray, rotation_b: np.ndarray) -> float:
    """Geodesic angle [rad] between two rotation matrices."""
    cosine = (np.trace(rotation_a.T @ rotation_b) - 1.0) / 2.0
    return float(np.arccos(np.clip(cosine, -1.0, 1.0)))


def pose(rotation=None, translation=None) -> np.ndarray:
    """4x4 from an optional 3x3 rotation and 3-vector."""
    transform = np.eye(4)
    if rotation is not None:
        transform[:3, :3] = rotation
    if translation is not None:
        transform[:3, 3] = translation
    return transform


def matrix_from_transform(transform) -> np.ndarray:
    """4x4 from a geometry_msgs/Transform (rclpy, or one a bag reader deserialized)."""
    t, q = transform.translation, transform.rotation
    return pose_matrix((t.x, t.y, t.z), (q.x, q.y, q.z, q.w))


def pose_matrix(translation, rotation_xyzw) -> np.ndarray:
    """4x4 from a translation and a quaternion (x, y, z, w), as a geometry_msgs/Transform holds them."""
    x, y, z, w = rotation_xyzw
    matrix = np.eye(4)
    matrix[:3, :3] = quat2mat([w, x, y, z])
    matrix[:3, 3] = translation
    return matrix
