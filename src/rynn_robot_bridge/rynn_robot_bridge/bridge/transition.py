"""Move the real robot from its measured pose to the operator's command without a jump.

Used whenever motion (re)starts on the real robot: digital -> real, start-up,
and after any hold (stale actions, silent state link). Ruckig plans a
jerk-limited path at reduced velocity/acceleration/jerk, re-planned every
cycle towards the newest command so the operator may keep moving meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ruckig import InputParameter, OutputParameter, Result, Ruckig, Synchronization

from rynn_common.action_layout import ACTION_DIM, LEFT_ARM, LEFT_HAND, RIGHT_ARM, RIGHT_HAND
from rynn_robot_bridge.bridge.joint_limits import JointLimits


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
        velocity, acceleration, jerk = np.empty(ACTION_DIM), np.empty(ACTION_DIM), np.empty(ACTION_DIM)
        for part, group in ((LEFT_ARM, "arm"), (RIGHT_ARM, "arm"), (LEFT_HAND, "hand"), (RIGHT_HAND, "hand")):
            velocity[part] = getattr(self, f"{group}_velocity")
            acceleration[part] = getattr(self, f"{group}_acceleration")
            jerk[part] = getattr(self, f"{group}_jerk")
        return np.minimum(velocity, joint_velocity), acceleration, jerk


class SafeTransition:
    """A Ruckig approach from ``start`` (at rest) that follows a moving target until it is reached."""

    def __init__(self, limits: TransitionLimits, joint_limits: JointLimits, rate_hz: float, start: np.ndarray):
        self.tolerance = limits.arrival_tolerance_rad
        self.joint_limits = joint_limits
        self._otg = Ruckig(ACTION_DIM, 1.0 / rate_hz)
        self._input = InputParameter(ACTION_DIM)
        self._output = OutputParameter(ACTION_DIM)
        velocity, acceleration, jerk = limits.per_joint(joint_limits.velocity)
        self._input.max_velocity = velocity.tolist()
        self._input.max_acceleration = acceleration.tolist()
        self._input.max_jerk = jerk.tolist()
        self._input.synchronization = Synchronization.Phase  # all joints arrive together along a straight line
        start = joint_limits.clamp(np.asarray(start, dtype=np.float64))
        self._input.current_position = start.tolist()
        self._input.current_velocity = [0.0] * ACTION_DIM
        self._input.current_acceleration = [0.0] * ACTION_DIM
        self._position = start
        self.done = False

    def step(self, target: np.ndarray) -> np.ndarray:
        """Advance one cycle towards ``target`` (clamped into the joint limits); sets ``done`` on arrival."""
        goal = self.joint_limits.clamp(np.asarray(target, dtype=np.float64))
        self._input.target_position = goal.tolist()
        result = self._otg.update(self._input, self._output)
        if result not in (Result.Working, Result.Finished):
            raise RuntimeError(f"Ruckig failed to plan the approach: {result}")
        self._output.pass_to_input(self._input)
        self._position = np.asarray(self._output.new_position)
        self.done = bool(np.abs(goal - self._position).max() <= self.tolerance)
        return self._position
