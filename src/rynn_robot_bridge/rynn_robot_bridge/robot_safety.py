"""Both ends of the robot link treat what arrives as untrusted: the controller's
command gate (which commands may move the joints) and the bridge's state
validator (which measured states may be used), plus the bridge's check that the
robot follows no other commander.

Kept free of LCM and ROS so the same rules run in the simulated robot, the
real-robot bridge and the unit tests. The gate's rules mirror a real arm controller:

* a packet that does not decode, a wrong joint count, an unknown mode, NaN/inf,
  a target outside the joint limits, or a velocity feed-forward beyond the
  joint velocity limits is rejected and counted; the robot keeps its previous target;
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

from rynn_common.action_layout import ACTION_DIM


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


POSITION_MODE = 0  # robot_command_t.MODE_POSITION
HOLD_MODE = 1  # robot_command_t.MODE_HOLD
KNOWN_MODES = (POSITION_MODE, HOLD_MODE)  # any other mode value is a malformed command


@dataclass
class GateCounters:
    accepted_commands: int = 0
    rejected_malformed: int = 0
    rejected_wrong_length: int = 0
    rejected_non_finite: int = 0
    rejected_joint_limit: int = 0
    rejected_sequence: int = 0
    watchdog_trips: int = 0


@dataclass
class StateCounters:
    accepted_states: int = 0
    rejected_wrong_length: int = 0
    rejected_non_finite: int = 0
    rejected_joint_limit: int = 0  # position beyond the margin, or reported/implied velocity implausible
    rejected_sequence: int = 0


_COUNTER_OF = {
    Fault.MALFORMED: "rejected_malformed",
    Fault.WRONG_LENGTH: "rejected_wrong_length",
    Fault.NON_FINITE: "rejected_non_finite",
    Fault.JOINT_LIMIT: "rejected_joint_limit",
    Fault.SEQUENCE: "rejected_sequence",
}


def _count(counters, fault: Fault) -> None:
    name = _COUNTER_OF[fault]
    setattr(counters, name, getattr(counters, name) + 1)


def _limit_arrays(lower, upper, velocity, tolerance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower - tolerance, upper + tolerance, velocity) as float arrays of ACTION_DIM; ValueError otherwise."""
    arrays = [np.asarray(v, dtype=np.float64) for v in (lower, upper, velocity)]
    if any(a.shape != (ACTION_DIM,) for a in arrays):
        raise ValueError(f"joint limits need {ACTION_DIM} entries, got {[a.shape for a in arrays]}")
    if not (arrays[2] > 0).all():
        raise ValueError("joint velocity limits must be positive")
    return arrays[0] - tolerance, arrays[1] + tolerance, arrays[2]


class CommandGate:
    """Validates joint commands and tracks the watchdog; times are seconds on any monotonic clock.

    ``velocity`` [rad/s] bounds the feed-forward: a real controller would turn an
    unbounded one into a velocity it cannot allow, so it is refused like a target
    beyond the position limits (``Fault.JOINT_LIMIT``).
    """

    def __init__(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        velocity: np.ndarray,
        watchdog_timeout_s: float = 0.1,
        max_sequence_gap: int = 20,
        limit_tolerance: float = 1e-3,
    ):
        self.lower, self.upper, self.max_velocity = _limit_arrays(lower, upper, velocity, limit_tolerance)
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
        if command.mode not in KNOWN_MODES:
            return self._reject(Fault.MALFORMED)
        if not np.isfinite(position).all() or (velocity is not None and not np.isfinite(velocity).all()):
            return self._reject(Fault.NON_FINITE)
        if ((position < self.lower) | (position > self.upper)).any():
            return self._reject(Fault.JOINT_LIMIT)
        if velocity is not None and (np.abs(velocity) > self.max_velocity).any():
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
        _count(self.counters, fault)
        self._last_rejection = fault
        return fault


# Slack on the time between two measured states in the position-jump check: states taken up to this much later
# than they arrived (a starved thread, or the bridge taking them in batches in digital mode) are not rejected.
ARRIVAL_JITTER_S = 0.02


class StateValidator:
    """The bridge's check of each measured robot state before anything is derived from it.

    A state is rejected (counted by reason) when its arrays have the wrong length,
    any value is NaN/inf, a position is beyond the joint limits by more than
    ``position_margin_rad``, a reported velocity exceeds ``velocity_factor`` times
    the joint's limit, the position moved further since the last accepted state
    than that velocity allows (plus ``arrival_jitter_s`` of slack), or the
    sequence did not advance. The last accepted state stays the measured one.
    After ``stale_after_s`` without an accepted state the next valid one is a new
    baseline (no jump or sequence check), so a restarted robot is taken back.
    Times are seconds on one monotonic clock.
    """

    def __init__(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        velocity: np.ndarray,
        position_margin_rad: float,
        velocity_factor: float,
        stale_after_s: float,
        arrival_jitter_s: float = ARRIVAL_JITTER_S,
    ):
        if position_margin_rad < 0 or velocity_factor < 1 or stale_after_s <= 0:
            raise ValueError("need position_margin_rad >= 0, velocity_factor >= 1 and stale_after_s > 0")
        self.lower, self.upper, velocity = _limit_arrays(lower, upper, velocity, position_margin_rad)
        self.max_velocity = velocity * velocity_factor
        self.stale_after_s = float(stale_after_s)
        self.arrival_jitter_s = float(arrival_jitter_s)
        self.counters = StateCounters()
        self.last_rejection = Fault.NONE
        self.last_rejected_at = float("-inf")
        self._last_position: np.ndarray | None = None
        self._last_sequence = 0
        self._last_accepted_at = float("-inf")

    def check(self, position, velocity, effort, sequence: int, now: float) -> Fault:
        """``Fault.NONE`` when the state may be used; else the reason it was dropped (and counted).

        The sequence is checked first: it is the cheapest test, so a flood of replayed states costs little.
        """
        elapsed = now - self._last_accepted_at
        following = self._last_position is not None and elapsed <= self.stale_after_s
        if following and sequence <= self._last_sequence:
            return self._reject(Fault.SEQUENCE, now)
        arrays = [np.asarray(v, dtype=np.float64) for v in (position, velocity, effort)]
        if any(a.shape != (ACTION_DIM,) for a in arrays):
            return self._reject(Fault.WRONG_LENGTH, now)
        position, velocity, effort = arrays
        if not (np.isfinite(position).all() and np.isfinite(velocity).all() and np.isfinite(effort).all()):
            return self._reject(Fault.NON_FINITE, now)
        if ((position < self.lower) | (position > self.upper)).any() or (np.abs(velocity) > self.max_velocity).any():
            return self._reject(Fault.JOINT_LIMIT, now)
        if following:
            reachable = self.max_velocity * (max(elapsed, 0.0) + self.arrival_jitter_s)
            if (np.abs(position - self._last_position) > reachable).any():
                return self._reject(Fault.JOINT_LIMIT, now)
        self.counters.accepted_states += 1
        self._last_position, self._last_sequence, self._last_accepted_at = position, int(sequence), now
        return Fault.NONE

    def problem(self, now: float, hold_s: float) -> str | None:
        """A description while a state was rejected within the last ``hold_s`` seconds, else None."""
        if now - self.last_rejected_at > hold_s:
            return None
        rejected = {name.removeprefix("rejected_"): n for name, n in vars(self.counters).items()
                    if name.startswith("rejected_") and n}
        return (f"robot state rejected ({self.last_rejection.name.lower()}; counts {rejected}): "
                "using the last good state, real robot holding")

    def _reject(self, fault: Fault, now: float) -> Fault:
        _count(self.counters, fault)
        self.last_rejection, self.last_rejected_at = fault, now
        return fault


class CommandEchoCheck:
    """Detects a second commander from the command the robot echoes as its last accepted one.

    The robot echoes (``last_command_sequence``, ``last_command_utime``) of the last
    command it accepted. Anything other than a command this bridge sent (kept for
    the last ``history`` commands), or the echo seen before it sent anything
    (``rebaseline``), means the robot took another sender's command.

    After ``rebaseline`` the states already on their way still echo the other sender's last
    commands (a starved bridge reads them late, after the operator re-armed): until the robot
    echoes a command of ours, or ``grace_s`` has passed, a foreign echo becomes the new baseline
    instead of a fault. A sender that keeps commanding is caught once the grace ends.
    """

    def __init__(self, history: int = 1000, grace_s: float = 1.0):
        self.grace_s = float(grace_s)
        self._grace_until = float("-inf")
        self._sent: dict[int, int] = {}
        self._history = int(history)
        self._first_sent: int | None = None
        self._last_sent = -1
        self._baseline: tuple[int, int] | None = None
        self.latest_echo: tuple[int, int] | None = None

    def sent(self, sequence: int, utime: int) -> None:
        self._sent[int(sequence)] = int(utime)
        if len(self._sent) > self._history:
            del self._sent[next(iter(self._sent))]  # dicts keep insertion order: the oldest goes
        if self._first_sent is None:
            self._first_sent = int(sequence)
        self._last_sent = int(sequence)

    def rebaseline(self, now: float) -> None:
        """Accept the robot's current echo, and for ``grace_s`` the ones still in flight, as not foreign
        (the operator has resolved the conflict)."""
        self._baseline = self.latest_echo
        self._grace_until = now + self.grace_s

    def check(self, echo_sequence: int, echo_utime: int, now: float) -> str | None:
        """None when the echo is a command of ours (or the baseline); else what the robot accepted instead."""
        echo = (int(echo_sequence), int(echo_utime))
        self.latest_echo = echo
        if self._baseline is None:
            self._baseline = echo  # before our first command: whatever the robot did before
        if echo == self._baseline:
            return None
        ours = self._sent.get(echo[0])
        if ours == echo[1]:
            self._grace_until = float("-inf")  # the robot follows us again: strict from here
            return None
        if ours is None and self._first_sent is not None and self._first_sent <= echo[0] <= self._last_sent:
            return None  # one of ours, older than the history
        if now < self._grace_until:
            self._baseline = echo  # accepted before the re-arm, read after it
            return None
        return (f"the robot accepted command sequence {echo[0]} (utime {echo[1]}) that this bridge did not send "
                f"(its last: {self._last_sent}): another sender commands the robot")
