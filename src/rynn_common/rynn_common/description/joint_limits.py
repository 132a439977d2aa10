"""Position, velocity and effort limits of robot joints, read from the robot's URDF.

The one reader of the URDF's <limit> tags: the bridge's limiter and state checks, the simulated
robot's gate, joint ranges and actuators, and the retargeting's IK and hand limits all take their
limits from here. Plain XML, so the bridge needs no kinematics library to read four attributes;
Pinocchio's parse would also give a continuous joint bounds of +-1.01 on its cos/sin coordinates
instead of refusing it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rynn_common.action_layout import joint_names
from rynn_common.description import resolve_urdf_path

LIMIT_ATTRIBUTES = ("lower", "upper", "velocity", "effort")
BOUNDED_JOINT_TYPES = ("revolute", "prismatic")  # a continuous joint has no position range to clamp to


@dataclass(frozen=True)
class JointLimits:
    """Per-joint limits of ``names``, in that order: lower/upper [rad], velocity [rad/s], effort [N m]."""

    names: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray

    def __post_init__(self):
        for attribute in LIMIT_ATTRIBUTES:
            if np.shape(getattr(self, attribute)) != (len(self.names),):
                raise ValueError(f"joint limit '{attribute}' needs {len(self.names)} values, "
                                 f"got {np.shape(getattr(self, attribute))}")
        if not (self.lower < self.upper).all() or not (self.velocity > 0).all() or (self.effort < 0).any():
            raise ValueError("joint limits need lower < upper, a positive velocity and a non-negative effort "
                             "for every joint")

    def clamp(self, position: np.ndarray) -> np.ndarray:
        return np.clip(position, self.lower, self.upper)

    def select(self, names: list[str]) -> JointLimits:
        """The limits of ``names`` (a kinematic chain's joints), in that order."""
        missing = [name for name in names if name not in self.names]
        if missing:
            raise ValueError(f"no limits for joint(s) {missing[:5]}")
        rows = [self.names.index(name) for name in names]
        return JointLimits(tuple(names), *(getattr(self, attribute)[rows] for attribute in LIMIT_ATTRIBUTES))


def joint_limits_from_urdf(urdf_path: str | Path | None = None, names: list[str] | None = None) -> JointLimits:
    """Limits of ``names`` (default: the 54 action joints) from ``urdf_path`` (default: the packaged URDF).

    Each joint's own <limit>, a mimic joint's too (as Pinocchio's default parse reads it).
    ``ValueError`` naming the joints the URDF lacks, that have no <limit> or no position range, so a
    foreign description fails at start-up.
    """
    path = resolve_urdf_path(str(urdf_path) if urdf_path else None)
    joints = {joint.get("name"): joint for joint in ET.parse(str(path)).getroot().iter("joint")}
    names = joint_names() if names is None else list(names)
    missing = [name for name in names if name not in joints or joints[name].find("limit") is None]
    if missing:
        raise ValueError(f"{path}: no joint(s) with a <limit> for {missing[:5]} of the {len(names)} joints asked for")
    unbounded = [name for name in names if joints[name].get("type") not in BOUNDED_JOINT_TYPES]
    if unbounded:
        raise ValueError(f"{path}: joint(s) {unbounded[:5]} are not of a type with a position range "
                         f"{BOUNDED_JOINT_TYPES}")
    try:
        table = np.array([[float(joints[name].find("limit").get(key)) for key in LIMIT_ATTRIBUTES] for name in names])
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: every joint's <limit> needs numeric {LIMIT_ATTRIBUTES}: {error}") from None
    return JointLimits(tuple(names), *table.T.copy())
