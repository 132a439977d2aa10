"""The operator's newest valid action, and the per-cycle limits a commanded position must obey.

The retargeter already smooths its output, but the bridge is the last software
between any publisher of ``/rynn/action`` and the motors, so it enforces the
limits itself: a bad or stale action must never become motion.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rynn_common.action_layout import ACTION_DIM
from rynn_common.description.joint_limits import JointLimits


def action_problem(action: np.ndarray) -> str | None:
    """Why ``action`` (float64) can never be commanded ("wrong_size", "non_finite"), or None."""
    if action.shape != (ACTION_DIM,):
        return "wrong_size"
    if not np.isfinite(action).all():
        return "non_finite"
    return None


@dataclass
class ActionIntake:
    """What became of actions taken together: ``rejected`` reasons (one a refused action), and how many valid
    ones were ``superseded`` by a newer valid one of the same take, so never used."""

    rejected: list[str] = field(default_factory=list)
    superseded: int = 0


class ActionInbox:
    """Keeps the newest valid 54-D action and its arrival time; invalid ones are refused with a reason."""

    def __init__(self, stale_after_s: float):
        self.stale_after_s = float(stale_after_s)
        self._action: np.ndarray | None = None
        self._received_at = float("-inf")

    def submit(self, values, now: float) -> str | None:
        """Store ``values``; returns None, or the rejection reason ("wrong_size", "non_finite")."""
        rejected = self.submit_newest([values], now).rejected
        return rejected[0] if rejected else None

    def submit_newest(self, actions, now: float) -> ActionIntake:
        """Store the newest valid one of ``actions`` (oldest first, taken together); every one is checked, so
        each is either stored, superseded by a newer valid one, or rejected, and counted."""
        intake, newest = ActionIntake(), None
        for values in actions:
            action = np.asarray(values, dtype=np.float64)
            problem = action_problem(action)
            if problem:
                intake.rejected.append(problem)
                continue
            intake.superseded += newest is not None
            newest = action
        if newest is not None:
            self._action, self._received_at = newest.copy(), now
        return intake

    def fresh(self, now: float) -> np.ndarray | None:
        """The newest action if it arrived within ``stale_after_s``, else None (the watchdog's view)."""
        if self._action is None or now - self._received_at > self.stale_after_s:
            return None
        return self._action

    @property
    def newest(self) -> np.ndarray | None:
        """The newest valid action however old it is."""
        return self._action


class CommandLimiter:
    """Clamps targets into the joint limits, then each step to ``velocity x scale / rate``."""

    def __init__(self, limits: JointLimits, rate_hz: float, velocity_scale: float = 1.0):
        if rate_hz <= 0 or not 0 < velocity_scale <= 1:
            raise ValueError(f"need rate_hz > 0 and 0 < velocity_scale <= 1, got {rate_hz}, {velocity_scale}")
        self.limits = limits
        self.period_s = 1.0 / rate_hz
        self.max_step = limits.velocity * velocity_scale * self.period_s
        self._position: np.ndarray | None = None
        self._velocity = np.zeros(ACTION_DIM)

    @property
    def position(self) -> np.ndarray | None:
        """The last limited position (None before the first ``reset``)."""
        return self._position

    @property
    def velocity(self) -> np.ndarray:
        """Velocity of the last step [rad/s]."""
        return self._velocity

    def reset(self, position: np.ndarray) -> np.ndarray:
        """Start from ``position`` (clamped into the limits), at rest."""
        self._position = self.limits.clamp(np.asarray(position, dtype=np.float64))
        self._velocity = np.zeros(ACTION_DIM)
        return self._position

    def step(self, target: np.ndarray, elapsed_s: float | None = None) -> np.ndarray:
        """Towards ``target`` within the joint limits and the velocity limit: by one control period (what the
        real robot executes per command), or by ``elapsed_s`` of measured time (the virtual robot, which must
        move as fast in time however many cycles a loaded machine skipped)."""
        if self._position is None:
            return self.reset(target)
        duration = self.period_s if elapsed_s is None else max(float(elapsed_s), 0.0)
        if duration == 0.0:
            return self._position
        max_step = self.max_step * (duration / self.period_s)
        goal = self.limits.clamp(np.asarray(target, dtype=np.float64))
        delta = np.clip(goal - self._position, -max_step, max_step)
        self._position = self._position + delta
        self._velocity = delta / duration
        return self._position
