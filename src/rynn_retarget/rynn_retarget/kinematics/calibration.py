"""Operator calibration: the fixed T_base / T_ee of the transform chain, per arm.

Capturing the operator in a neutral pose (arms relaxed forward, like the robot's
neutral) fixes the offsets so that this pose maps exactly onto the robot's
neutral end-effector pose; the tracker-to-robot axis alignment (rotation of
T_base) is kept from the config because one pose cannot determine it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rynn_common.config_io import load_config, save_yaml, to_dict
from rynn_retarget.kinematics.transforms import invert, scale_translation


def _identity() -> list:
    return np.eye(4).tolist()


@dataclass(frozen=True)
class ArmCalibration:
    """T_base, T_ee (4x4, row-major lists) and the elbow reference offset [m], one arm."""

    base: list = field(default_factory=_identity)
    ee: list = field(default_factory=_identity)
    elbow_offset: list = field(default_factory=lambda: [0.0, 0.0, 0.0])

    def base_matrix(self) -> np.ndarray:
        return _as_transform(self.base, "base")

    def ee_matrix(self) -> np.ndarray:
        return _as_transform(self.ee, "ee")


@dataclass(frozen=True)
class Calibration:
    left: ArmCalibration = field(default_factory=ArmCalibration)
    right: ArmCalibration = field(default_factory=ArmCalibration)

    def side(self, side: str) -> ArmCalibration:
        return {"left": self.left, "right": self.right}[side]


def calibrate_arm(
    chest: np.ndarray,
    wrist: np.ndarray,
    upper_arm: np.ndarray,
    robot_ee_neutral: np.ndarray,
    robot_elbow_neutral: np.ndarray,
    scale: float,
    base_rotation: np.ndarray,
) -> ArmCalibration:
    """Offsets that map the operator's neutral pose onto the robot's neutral pose.

    T_ee takes the remaining rotation, T_base's translation the remaining
    offset, so T_base . Scale_s(T_chest^-1 T_wrist) . T_ee == robot_ee_neutral.
    """
    relative = scale_translation(invert(chest) @ wrist, scale)
    base = np.eye(4)
    base[:3, :3] = base_rotation
    ee = np.eye(4)
    ee[:3, :3] = (base_rotation @ relative[:3, :3]).T @ robot_ee_neutral[:3, :3]
    base[:3, 3] = robot_ee_neutral[:3, 3] - base_rotation @ relative[:3, 3]
    elbow_mapped = (base @ scale_translation(invert(chest) @ upper_arm, scale))[:3, 3]
    return ArmCalibration(
        base=base.tolist(), ee=ee.tolist(), elbow_offset=(robot_elbow_neutral - elbow_mapped).tolist()
    )


def save_calibration(path: str | Path, calibration: Calibration) -> None:
    save_yaml(path, to_dict(calibration))


def load_calibration(path: str | Path) -> Calibration:
    return load_config(Calibration, path)


def _as_transform(values, name: str) -> np.ndarray:
    matrix = np.asarray(values, dtype=np.float64)
    if matrix.shape != (4, 4) or not np.allclose(matrix[3], [0, 0, 0, 1]):
        raise ValueError(f"calibration {name} must be a 4x4 homogeneous transform, got {matrix.tolist()}")
    if not np.allclose(matrix[:3, :3] @ matrix[:3, :3].T, np.eye(3), atol=1e-4):
        raise ValueError(f"calibration {name} rotation is not orthonormal")
    return matrix
