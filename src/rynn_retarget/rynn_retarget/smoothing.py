"""Ruckig online trajectory generation for the 54-D command at a fixed 200 Hz.

Targets arrive at the operator rate (100-120 Hz, sometimes not at all); the
smoother advances one control cycle per ``step`` and keeps converging to the
last target, so the output is jerk-limited and never waits on the input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ruckig import InputParameter, OutputParameter, Result, Ruckig, Synchronization

from rynn_common.action_layout import ACTION_DIM, LEFT_ARM, LEFT_HAND, RIGHT_ARM, RIGHT_HAND


@dataclass
class SmoothingConfig:
    rate_hz: float = 200.0
    arm_max_velocity: float = 2.0  # rad/s
    arm_max_acceleration: float = 10.0  # rad/s^2
    arm_max_jerk: float = 150.0  # rad/s^3
    hand_max_velocity: float = 6.0
    hand_max_acceleration: float = 60.0
    hand_max_jerk: float = 1500.0

    def limits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-joint (velocity, acceleration, jerk) vectors in action order."""
        velocity, acceleration, jerk = (np.empty(ACTION_DIM) for _ in range(3))
        for part, prefix in ((LEFT_ARM, "arm"), (RIGHT_ARM, "arm"), (LEFT_HAND, "hand"), (RIGHT_HAND, "hand")):
            velocity[part] = getattr(self, f"{prefix}_max_velocity")
            acceleration[part] = getattr(self, f"{prefix}_max_acceleration")
            jerk[part] = getattr(self, f"{prefix}_max_jerk")
        return velocity, acceleration, jerk


class JointSmoother:
    """One Ruckig instance over all 54 joints (each joint time-optimal on its own)."""

    def __init__(self, config: SmoothingConfig, initial: np.ndarray, lower: np.ndarray, upper: np.ndarray):
        self.config = config
        self.period = 1.0 / config.rate_hz
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self._otg = Ruckig(ACTION_DIM, self.period)
        self._input = InputParameter(ACTION_DIM)
        self._output = OutputParameter(ACTION_DIM)
        velocity, acceleration, jerk = config.limits()
        self._input.max_velocity = velocity.tolist()
        self._input.max_acceleration = acceleration.tolist()
        self._input.max_jerk = jerk.tolist()
        # Joints finish independently: a hand that is already there must not be slowed by an arm.
        self._input.synchronization = Synchronization.No
        self.counters = {"rejected_targets": 0, "ruckig_errors": 0}
        self.reset(initial)

    def reset(self, position: np.ndarray) -> None:
        """Start at rest at ``position`` (clipped to the limits)."""
        start = np.clip(np.asarray(position, dtype=np.float64), self.lower, self.upper)
        self._input.current_position = start.tolist()
        self._input.current_velocity = [0.0] * ACTION_DIM
        self._input.current_acceleration = [0.0] * ACTION_DIM
        self._input.target_position = start.tolist()
        self._input.target_velocity = [0.0] * ACTION_DIM
        self._input.target_acceleration = [0.0] * ACTION_DIM
        self._target = start

    @property
    def target(self) -> np.ndarray:
        return self._target.copy()

    def set_target(self, target: np.ndarray) -> bool:
        """Aim at a new 54-D target (clipped to limits); non-finite or wrong-size targets are counted and ignored."""
        target = np.asarray(target, dtype=np.float64)
        if target.shape != (ACTION_DIM,) or not np.all(np.isfinite(target)):
            self.counters["rejected_targets"] += 1
            return False
        self._target = np.clip(target, self.lower, self.upper)
        self._input.target_position = self._target.tolist()
        return True

    def step(self) -> tuple[np.ndarray, np.ndarray]:
        """Advance one control cycle; returns (position, velocity)."""
        result = self._otg.update(self._input, self._output)
        if result not in (Result.Working, Result.Finished):
            # Hold where we are; the next target starts a fresh trajectory from rest here.
            self.counters["ruckig_errors"] += 1
            self.reset(np.asarray(self._input.current_position))
            return np.asarray(self._input.current_position), np.zeros(ACTION_DIM)
        self._output.pass_to_input(self._input)
        return np.asarray(self._output.new_position), np.asarray(self._output.new_velocity)
