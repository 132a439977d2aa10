"""Ruckig online trajectory generation for the 54-D command at a fixed 200 Hz.

Targets arrive at the operator rate (100-120 Hz, sometimes not at all); the
smoother advances by control periods and keeps converging to the last target,
so the output is jerk-limited and never waits on the input. Its limits are in
seconds: a loop that had to skip periods (``OutputSchedule``) advances the
smoother by all of them at its next tick, so a starved process publishes fewer
commands but never a slower motion.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rynn_common.action_layout import ACTION_DIM
from rynn_common.action_trajectory import ActionTrajectory, arm_hand_vector


@dataclass(frozen=True)
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
        return (arm_hand_vector(self.arm_max_velocity, self.hand_max_velocity),
                arm_hand_vector(self.arm_max_acceleration, self.hand_max_acceleration),
                arm_hand_vector(self.arm_max_jerk, self.hand_max_jerk))


class JointSmoother:
    """The 54 joints clipped to their limits, each time-optimal on its own: a hand that is already
    there is not slowed by an arm."""

    def __init__(self, config: SmoothingConfig, initial: np.ndarray, lower: np.ndarray, upper: np.ndarray):
        self.config = config
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self._target = np.clip(np.asarray(initial, dtype=np.float64), self.lower, self.upper)
        self._trajectory = ActionTrajectory(config.rate_hz, *config.limits(), start=self._target, synchronized=False)
        self.period = self._trajectory.period
        self.counters = {"rejected_targets": 0, "ruckig_errors": 0}

    def reset(self, position: np.ndarray) -> None:
        """Start at rest at ``position`` (clipped to the limits)."""
        self._target = np.clip(np.asarray(position, dtype=np.float64), self.lower, self.upper)
        self._trajectory.reset(self._target)

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
        self._trajectory.set_target(self._target)
        return True

    def step(self, periods: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Advance ``periods`` control periods (1 + those the output loop skipped); returns (position, velocity).

        The state is the one ``periods`` single steps reach; once at the target the rest cost nothing."""
        for _ in range(periods):
            if not self._trajectory.step():
                # Hold where we are; the next target starts a fresh trajectory from rest here.
                self.counters["ruckig_errors"] += 1
                self.reset(self._trajectory.position)
                return self._trajectory.position, np.zeros(ACTION_DIM)
            if self._trajectory.at_target:
                break
        return self._trajectory.position, self._trajectory.velocity


class OutputSchedule:
    """The fixed-rate output loop's clock (monotonic seconds): which control period each tick is.

    A tick late by less than ``max_catch_up_s`` is caught up (the next one is due at once, the rate is
    kept); beyond that the whole periods missed are skipped and the next tick covers them. Every period
    is thus published or skipped exactly once (published + skipped = rate x time, whatever the load),
    ``index`` numbers the periods (the command's sequence: a skipped period is a gap), and the schedule
    stays on its first tick's grid."""

    def __init__(self, period_s: float, max_catch_up_s: float, start: float):
        self.period_s = float(period_s)
        self.max_catch_up_s = float(max_catch_up_s)
        self.index = 0  # the period of the current tick
        self.skipped = 0  # periods skipped so far
        self._due = float(start)  # when the current tick was due

    def next_tick(self, now: float) -> tuple[float, int]:
        """After the current tick, at ``now``: (seconds to wait for the next one, <= 0 to go at once;
        the periods it advances, 1 + those skipped)."""
        self._due += self.period_s
        periods = 1
        late = now - self._due
        if late > self.max_catch_up_s:
            skipped = int(late / self.period_s)
            self._due += skipped * self.period_s
            self.skipped += skipped
            periods += skipped
        self.index += periods
        return self._due - now, periods
