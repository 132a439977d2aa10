"""Move the real robot from its measured pose to the operator's command without a jump.

Used whenever motion (re)starts on the real robot: digital -> real, start-up,
and after any hold (stale actions, silent state link). Ruckig plans a
jerk-limited path at reduced velocity/acceleration/jerk, re-planned every
cycle towards the newest command so the operator may keep moving meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rynn_common.action_trajectory import ActionTrajectory, arm_hand_vector
from rynn_common.description.joint_limits import JointLimits


@dataclass(frozen=True)
class TransitionLimits:
    """Reduced limits for the approach, and how close counts as arrived."""

    arm_velocity: float = 0.5  # rad/s
    arm_acceleration: float = 1.0  # rad/s^2
    arm_jerk: float = 5.0  # rad/s^3
    hand_velocity: float = 1.0
    hand_acceleration: float = 4.0
    hand_jerk: float = 40.0
    arrival_tolerance_rad: float = 0.005  # then the velocity-clamped tracker takes over

    def per_joint(self, joint_velocity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(velocity, acceleration, jerk) per action joint; velocity never above the URDF limit."""
        return (np.minimum(arm_hand_vector(self.arm_velocity, self.hand_velocity), joint_velocity),
                arm_hand_vector(self.arm_acceleration, self.hand_acceleration),
                arm_hand_vector(self.arm_jerk, self.hand_jerk))


class SafeTransition:
    """An approach from ``start`` (at rest) that follows a moving target until it is reached; all
    joints arrive together along a straight line."""

    def __init__(self, limits: TransitionLimits, joint_limits: JointLimits, rate_hz: float, start: np.ndarray):
        self.tolerance = limits.arrival_tolerance_rad
        self.joint_limits = joint_limits
        self._trajectory = ActionTrajectory(rate_hz, *limits.per_joint(joint_limits.velocity),
                                            start=joint_limits.clamp(np.asarray(start, dtype=np.float64)),
                                            synchronized=True)
        self.done = False

    @property
    def unsynchronized_steps(self) -> int:
        """Cycles Ruckig could not plan synchronised, planned per joint instead (``ActionTrajectory``)."""
        return self._trajectory.unsynchronized_steps

    def step(self, target: np.ndarray) -> np.ndarray:
        """Advance one cycle towards ``target`` (clamped into the joint limits); sets ``done`` on arrival."""
        goal = self.joint_limits.clamp(np.asarray(target, dtype=np.float64))
        self._trajectory.set_target(goal)
        if not self._trajectory.step():
            raise RuntimeError(f"Ruckig failed to plan the approach: {self._trajectory.last_result}")
        position = self._trajectory.position
        self.done = bool(np.abs(goal - position).max() <= self.tolerance)
        return position
