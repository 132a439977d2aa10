"""Position and velocity limits of the 54 action joints, read from the robot's URDF with Pinocchio."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rynn_retarget.action_layout import ACTION_DIM, joint_names
from rynn_retarget.description import resolve_urdf_path


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits in action order: lower/upper [rad], velocity [rad/s]."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray

    def __post_init__(self):
        for name in ("lower", "upper", "velocity"):
            if np.shape(getattr(self, name)) != (ACTION_DIM,):
                raise ValueError(f"joint limit '{name}' needs {ACTION_DIM} values, got {np.shape(getattr(self, name))}")
        if not (self.lower < self.upper).all() or not (self.velocity > 0).all():
            raise ValueError("joint limits need lower < upper and a positive velocity for every joint")

    def clamp(self, position: np.ndarray) -> np.ndarray:
        return np.clip(position, self.lower, self.upper)


def joint_limits_from_urdf(urdf_path: str | Path | None = None) -> JointLimits:
    """Limits of the action joints from ``urdf_path`` (default: rynn_retarget's packaged URDF).

    ``ValueError`` naming the joints the URDF lacks, so a foreign description fails at start-up.
    """
    import pinocchio as pin

    path = resolve_urdf_path(str(urdf_path) if urdf_path else None)
    model = pin.buildModelFromUrdf(str(path))
    names = joint_names()
    missing = [name for name in names if not model.existJointName(name)]
    if missing:
        raise ValueError(f"{path}: no joint(s) {missing[:5]} of the 54-D action layout")
    joints = [model.joints[model.getJointId(name)] for name in names]
    return JointLimits(
        lower=np.array([model.lowerPositionLimit[j.idx_q] for j in joints]),
        upper=np.array([model.upperPositionLimit[j.idx_q] for j in joints]),
        velocity=np.array([model.velocityLimit[j.idx_v] for j in joints]),
    )
