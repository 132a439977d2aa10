"""Jerk-limited motion of the 54-D action, one control cycle per step (Ruckig online generation).

The suite's one Ruckig wrapper. The retarget smoother (200 Hz, each joint time-optimal on its
own, new targets at the operator rate) and the bridge's safe approach to the real robot
(reduced limits, all joints arriving together) differ only in the limits and the
synchronisation they pass in.

Ruckig's time synchronisation can fail numerically ("error in step 2") when it re-plans from a
moving state towards a moved target; the Python binding raises ``RuckigError`` then. Such a cycle
is planned again with each joint on its own (still within every limit, only not on a straight
line) and counted in ``unsynchronized_steps``; the next cycle tries the synchronised plan again.
"""

from __future__ import annotations

import numpy as np
from ruckig import InputParameter, OutputParameter, Result, Ruckig, RuckigError, Synchronization

from rynn_common.action_layout import ACTION_DIM, LEFT_ARM, LEFT_HAND, RIGHT_ARM, RIGHT_HAND


def arm_hand_vector(arm: float, hand: float) -> np.ndarray:
    """A per-joint value in action order: ``arm`` on the 14 arm joints, ``hand`` on the 40 hand joints."""
    vector = np.empty(ACTION_DIM)
    vector[LEFT_ARM] = vector[RIGHT_ARM] = arm
    vector[LEFT_HAND] = vector[RIGHT_HAND] = hand
    return vector


class ActionTrajectory:
    """Ruckig over all 54 joints from a state at rest towards a target that may change every cycle."""

    def __init__(self, rate_hz: float, max_velocity: np.ndarray, max_acceleration: np.ndarray,
                 max_jerk: np.ndarray, start: np.ndarray, synchronized: bool):
        """``synchronized``: all joints arrive together along a straight line (else each joint
        finishes on its own, so a joint already there is not slowed by a far one)."""
        self.period = 1.0 / rate_hz
        self._otg = Ruckig(ACTION_DIM, self.period)
        self._input = InputParameter(ACTION_DIM)
        self._output = OutputParameter(ACTION_DIM)
        self._input.max_velocity = np.asarray(max_velocity, dtype=np.float64).tolist()
        self._input.max_acceleration = np.asarray(max_acceleration, dtype=np.float64).tolist()
        self._input.max_jerk = np.asarray(max_jerk, dtype=np.float64).tolist()
        self._synchronization = Synchronization.Phase if synchronized else Synchronization.No
        self._input.synchronization = self._synchronization
        self.last_result = Result.Finished
        self.unsynchronized_steps = 0  # synchronised cycles Ruckig failed to plan, planned per joint instead
        self.reset(start)

    def reset(self, position: np.ndarray) -> None:
        """At rest at ``position``, aiming at it."""
        position = np.asarray(position, dtype=np.float64).tolist()
        zeros = [0.0] * ACTION_DIM
        self._input.current_position = position
        self._input.current_velocity = zeros
        self._input.current_acceleration = zeros
        self._input.target_position = position
        self._input.target_velocity = zeros
        self._input.target_acceleration = zeros

    def set_target(self, position: np.ndarray) -> None:
        self._input.target_position = np.asarray(position, dtype=np.float64).tolist()

    def step(self) -> bool:
        """Advance one cycle; False (state unchanged, reason in ``last_result``) when Ruckig cannot plan."""
        try:
            self.last_result = self._otg.update(self._input, self._output)
        except RuckigError:
            if self._synchronization == Synchronization.No:
                raise
            self._input.synchronization = Synchronization.No
            try:
                self.last_result = self._otg.update(self._input, self._output)
            finally:
                self._input.synchronization = self._synchronization
            self.unsynchronized_steps += 1
        if self.last_result not in (Result.Working, Result.Finished):
            return False
        self._output.pass_to_input(self._input)
        return True

    @property
    def at_target(self) -> bool:
        """The last step reached the target (at rest there until a new target)."""
        return self.last_result == Result.Finished

    @property
    def position(self) -> np.ndarray:
        return np.asarray(self._input.current_position)

    @property
    def velocity(self) -> np.ndarray:
        return np.asarray(self._input.current_velocity)
