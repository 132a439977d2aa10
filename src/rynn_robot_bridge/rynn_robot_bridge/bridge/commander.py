"""What the bridge sends to the real robot each 200 Hz cycle, and the virtual joint state in digital mode.

Real mode, per cycle:

* no robot state ever received: send nothing (there is no pose to hold or to start from);
* robot state silent or actions stale (the watchdog): send a hold at the measured pose;
* otherwise move: first a Ruckig approach from the measured pose to the command at
  reduced limits (after start-up, a digital -> real switch, or any hold), then
  track the command through the joint-limit and per-step velocity clamp.

Digital mode sends nothing at all on LCM: the real robot must not move, and its
own watchdog already holds it. The same limiter then produces the *virtual*
joint state that ``/joint_states`` reports, starting from the robot's last
measured pose so the switch does not jump.

Thread-safe: actions, robot state, mode requests and cycles come from different threads.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

import numpy as np

from rynn_robot_bridge.bridge.command_limiter import ActionInbox, CommandLimiter
from rynn_robot_bridge.bridge.joint_limits import JointLimits
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.bridge.transition import SafeTransition, TransitionLimits


@dataclass(frozen=True)
class RobotCommand:
    """One command for the LCM link: a position target, or a hold (enable=false, MODE_HOLD)."""

    position: np.ndarray
    hold: bool


class Phase(enum.Enum):
    HOLDING = "holding"
    APPROACHING = "approaching"  # Ruckig from the measured pose to the command
    TRACKING = "tracking"


class RobotCommander:
    """Times are seconds on one monotonic clock."""

    def __init__(
        self,
        mode: Mode,
        joint_limits: JointLimits,
        rate_hz: float,
        action_timeout_s: float,
        state_timeout_s: float,
        transition_limits: TransitionLimits,
        velocity_scale: float = 1.0,
    ):
        self.joint_limits = joint_limits
        self.rate_hz = float(rate_hz)
        self.state_timeout_s = float(state_timeout_s)
        self.transition_limits = transition_limits
        self.inbox = ActionInbox(action_timeout_s)
        self.limiter = CommandLimiter(joint_limits, rate_hz, velocity_scale)
        self.watchdog_trips = 0
        self.approaches = 0
        self._lock = threading.Lock()
        self._mode = mode
        self._phase = Phase.HOLDING
        self._approach: SafeTransition | None = None
        self._measured: np.ndarray | None = None
        self._measured_at = float("-inf")
        self._actions_were_fresh = False

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def phase(self) -> Phase:
        return self._phase

    def submit_action(self, values, now: float) -> str | None:
        """Take an operator action; returns the rejection reason, or None when accepted."""
        with self._lock:
            return self.inbox.submit(values, now)

    def update_measured(self, position: np.ndarray, now: float) -> None:
        """The robot's measured joint positions (from its LCM state)."""
        with self._lock:
            self._measured = np.asarray(position, dtype=np.float64).copy()
            self._measured_at = now

    def request_mode(self, mode: Mode, now: float) -> tuple[bool, str]:
        """Switch mode if it is safe; (accepted, message for the operator)."""
        with self._lock:
            if mode == self._mode:
                return True, f"already in {mode.label} mode"
            if mode == Mode.REAL:
                refusal = self._robot_state_problem(now)
                if refusal:
                    return False, f"refusing to switch to real: {refusal}"
                self._mode, self._phase = Mode.REAL, Phase.HOLDING
                command = self.inbox.fresh(now)
                distance = "" if command is None else (
                    f"; approaching the operator command (max joint distance "
                    f"{np.abs(self.joint_limits.clamp(command) - self._measured).max():.3f} rad) at reduced limits"
                )
                return True, f"switched to real{distance or '; holding until fresh actions arrive'}"
            self._mode = Mode.DIGITAL
            start = self._measured if self._measured is not None else self.limiter.position
            if start is not None:
                self.limiter.reset(start)
            return True, "switched to digital: no commands reach the real robot"

    def cycle(self, now: float) -> RobotCommand | None:
        """One control period; the command to send on LCM, or None to send nothing."""
        with self._lock:
            action = self.inbox.fresh(now)
            if action is None and self._actions_were_fresh:
                self.watchdog_trips += 1
            self._actions_were_fresh = action is not None
            if self._mode == Mode.DIGITAL:
                if action is not None:
                    self.limiter.step(action)
                return None
            if self._measured is None:
                self._phase = Phase.HOLDING
                return None
            if action is None or self._robot_state_problem(now):
                self._phase = Phase.HOLDING
                return RobotCommand(self.joint_limits.clamp(self._measured), hold=True)
            if self._phase == Phase.HOLDING:
                self._approach = SafeTransition(self.transition_limits, self.joint_limits, self.rate_hz, self._measured)
                self._phase = Phase.APPROACHING
                self.approaches += 1
            if self._phase == Phase.APPROACHING:
                position = self._approach.step(action)
                if self._approach.done:
                    self.limiter.reset(position)
                    self._phase, self._approach = Phase.TRACKING, None
                return RobotCommand(position, hold=False)
            return RobotCommand(self.limiter.step(action).copy(), hold=False)

    def virtual_state(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(position, velocity) of the digital robot, None until it has a pose."""
        with self._lock:
            if self.limiter.position is None:
                return None
            return self.limiter.position.copy(), self.limiter.velocity.copy()

    def faults(self, now: float) -> dict[str, str]:
        """Active faults by key, for the status topic."""
        with self._lock:
            faults = {}
            problem = self._robot_state_problem(now)
            if problem:
                faults["robot_state"] = problem
            if self._mode == Mode.REAL and self.inbox.fresh(now) is None:
                faults["actions"] = (
                    f"no fresh action for {self.inbox.stale_after_s * 1e3:.0f} ms: real robot holding"
                )
            return faults

    def _robot_state_problem(self, now: float) -> str | None:
        if self._measured is None:
            return "robot state unknown: no LCM state received yet"
        silent = now - self._measured_at
        if silent > self.state_timeout_s:
            return f"robot LCM state silent for {silent * 1e3:.0f} ms (timeout {self.state_timeout_s * 1e3:.0f} ms)"
        return None
