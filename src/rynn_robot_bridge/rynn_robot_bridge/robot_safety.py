"""The low-level controller's command gate: which commands may move the joints.

Kept free of LCM and ROS so the same rules run in the simulated robot, the
real-robot bridge and the unit tests. The rules mirror a real arm controller:

* a packet that does not decode, a wrong joint count, NaN/inf, or a target
  outside the joint limits is rejected and counted; the robot keeps its
  previous target;
* a sequence number that goes backwards or skips more than
  ``max_sequence_gap`` commands is rejected (commands were lost or reordered);
* no accepted command for ``watchdog_timeout_s`` latches a hold at the
  measured position and raises ``Fault.WATCHDOG``. The next valid command
  clears it and becomes the new sequence baseline, so a restarted sender
  recovers after one watchdog period without any reset.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from rynn_retarget.action_layout import ACTION_DIM


class Fault(enum.IntFlag):
    """Bits of ``robot_state_t.fault_flags`` (the LCM constants are tested to match)."""

    NONE = 0
    WATCHDOG = 1
    DISABLED = 2
    MALFORMED = 4
    WRONG_LENGTH = 8
    NON_FINITE = 16
    JOINT_LIMIT = 32
    SEQUENCE = 64


POSITION_MODE = 0  # robot_command_t.MODE_POSITION; any other mode holds


@dataclass
class GateCounters:
    accepted_commands: int = 0
    rejected_malformed: int = 0
    rejected_wrong_length: int = 0
    rejected_non_finite: int = 0
    rejected_joint_limit: int = 0
    rejected_sequence: int = 0
    watchdog_trips: int = 0


_COUNTER_OF = {
    Fault.MALFORMED: "rejected_malformed",
    Fault.WRONG_LENGTH: "rejected_wrong_length",
    Fault.NON_FINITE: "rejected_non_finite",
    Fault.JOINT_LIMIT: "rejected_joint_limit",
    Fault.SEQUENCE: "rejected_sequence",
}


class CommandGate:
    """Validates joint commands and tracks the watchdog; times are seconds on any monotonic clock."""

    def __init__(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        watchdog_timeout_s: float = 0.1,
        max_sequence_gap: int = 20,
        limit_tolerance: float = 1e-3,
    ):
        self.lower = np.asarray(lower, dtype=np.float64) - limit_tolerance
        self.upper = np.asarray(upper, dtype=np.float64) + limit_tolerance
        if self.lower.shape != (ACTION_DIM,) or self.upper.shape != (ACTION_DIM,):
            raise ValueError(f"joint limits need {ACTION_DIM} entries, got {self.lower.shape}")
        self.watchdog_timeout_s = float(watchdog_timeout_s)
        self.max_sequence_gap = int(max_sequence_gap)
        self.counters = GateCounters()
        self.last_sequence = -1
        self.last_utime = 0
        self._target: np.ndarray | None = None
        self._velocity: np.ndarray | None = None
        self._last_accept_time: float | None = None
        self._stale = True  # nothing accepted yet: hold
        self._disabled = False
        self._last_rejection = Fault.NONE
        self._hold_position: np.ndarray | None = None

    @property
    def fault_flags(self) -> Fault:
        flags = self._last_rejection
        if self._stale:
            flags |= Fault.WATCHDOG
        if self._disabled:
            flags |= Fault.DISABLED
        return flags

    @property
    def holding(self) -> bool:
        return self._stale or self._disabled or self._target is None

    def reject_malformed(self) -> Fault:
        """Count a packet that did not decode."""
        return self._reject(Fault.MALFORMED)

    def submit(self, command, now: float) -> Fault:
        """Check one decoded command (``lcm_protocol.JointCommand``); ``Fault.NONE`` means accepted."""
        position = np.asarray(command.position, dtype=np.float64)
        velocity = command.velocity_feedforward
        if position.shape != (ACTION_DIM,) or (velocity is not None and np.shape(velocity) != (ACTION_DIM,)):
            return self._reject(Fault.WRONG_LENGTH)
        if not np.isfinite(position).all() or (velocity is not None and not np.isfinite(velocity).all()):
            return self._reject(Fault.NON_FINITE)
        if ((position < self.lower) | (position > self.upper)).any():
            return self._reject(Fault.JOINT_LIMIT)
        if not self._stale and self.last_sequence >= 0:
            gap = command.sequence - self.last_sequence
            if gap <= 0 or gap - 1 > self.max_sequence_gap:
                return self._reject(Fault.SEQUENCE)
        self.counters.accepted_commands += 1
        self.last_sequence = int(command.sequence)
        self.last_utime = int(command.utime)
        self._last_accept_time = now
        self._last_rejection = Fault.NONE
        self._stale = False
        self._disabled = (not command.enable) or command.mode != POSITION_MODE
        if self._disabled:
            self._target = None
            self._velocity = None
        else:
            self._target = position.copy()
            self._velocity = None if velocity is None else np.asarray(velocity, dtype=np.float64).copy()
            self._hold_position = None
        return Fault.NONE

    def update(self, now: float) -> None:
        """Run the watchdog; call every control cycle."""
        if self._stale or self._last_accept_time is None:
            return
        if now - self._last_accept_time > self.watchdog_timeout_s:
            self._stale = True
            self._target = None
            self._velocity = None
            self.counters.watchdog_trips += 1

    def joint_targets(self, measured_position: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(position target, velocity feed-forward or None) to apply this cycle.

        While holding, the target is the measured position latched at the first
        cycle of the hold, so a hold never drifts and never jumps.
        """
        if not self.holding:
            return self._target, self._velocity
        if self._hold_position is None:
            self._hold_position = np.asarray(measured_position, dtype=np.float64).copy()
        return self._hold_position, None

    def _reject(self, fault: Fault) -> Fault:
        name = _COUNTER_OF[fault]
        setattr(self.counters, name, getattr(self.counters, name) + 1)
        self._last_rejection = fault
        return fault
