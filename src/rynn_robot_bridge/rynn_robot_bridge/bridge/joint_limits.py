"""Position, velocity and effort limits of the 54 action joints, read from the robot's URDF.

The one reader of the URDF's <limit> tags: the bridge's limiter and state checks, the simulated
robot's gate and its actuators all take their limits from here. Plain XML: no kinematics library
is needed to read four attributes (test_bridge_core checks they equal what Pinocchio parses).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rynn_common.action_layout import ACTION_DIM, joint_names
from rynn_common.description import resolve_urdf_path

LIMIT_ATTRIBUTES = ("lower", "upper", "velocity", "effort")


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits in action order: lower/upper [rad], velocity [rad/s], effort [N m]."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    def __post_init__(self):
        for name in LIMIT_ATTRIBUTES:
            if np.shape(getattr(self, name)) != (ACTION_DIM,):
                raise ValueError(f"joint limit '{name}' needs {ACTION_DIM} values, got {np.shape(getattr(self, name))}")
        if not (self.lower < self.upper).all() or not (self.velocity > 0).all() or (self.effort < 0).any():
            raise ValueError("joint limits need lower < upper, a positive velocity and a non-negative effort "
                             "for every joint")

    def clamp(self, position: np.ndarray) -> np.ndarray:
        return np.clip(position, self.lower, self.upper)


def joint_limits_from_urdf(urdf_path: str | Path | None = None) -> JointLimits:
    """Limits of the action joints from ``urdf_path`` (default: rynn_retarget's packaged URDF).

    ``ValueError`` naming the joints the URDF lacks (or that have no <limit>), so a foreign
    description fails at start-up.
    """
    path = resolve_urdf_path(str(urdf_path) if urdf_path else None)
    limit_tags = {joint.get("name"): joint.find("limit") for joint in ET.parse(str(path)).getroot().iter("joint")}
    names = joint_names()
    missing = [name for name in names if limit_tags.get(name) is None]
    if missing:
        raise ValueError(f"{path}: no joint(s) with a <limit> for {missing[:5]} of the 54-D action layout")
    try:
        table = np.array([[float(limit_tags[name].get(key)) for key in LIMIT_ATTRIBUTES] for name in names])
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: every action joint's <limit> needs numeric {LIMIT_ATTRIBUTES}: {error}") from None
    return JointLimits(*table.T.copy())
