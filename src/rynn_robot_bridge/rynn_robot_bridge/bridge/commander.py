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
measured pose so the switch does not jump, and advancing by the measured time
between cycles (a starved bridge runs fewer cycles; the virtual robot must not
slow down with it). Real commands keep one period per cycle: the robot
executes each one over a period.

Measured state is untrusted input (``robot_safety.StateValidator``): a rejected
state is counted and never becomes the measured pose, so nothing sent or
published (holds, the approach start, the virtual state) derives from it; for
``state_timeout_s`` after a rejection the robot holds and a switch to real is
refused. Commands are numbered here and remembered, and the robot's echo of
the last accepted command is checked (``CommandEchoCheck``): when the robot
took another sender's command, the bridge stops commanding until the operator
asks for real mode again (``request_mode``).

Thread-safe: actions, robot state, mode requests and cycles come from different threads.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

import numpy as np

from rynn_common.description.joint_limits import JointLimits, joint_limits_from_urdf
from rynn_robot_bridge.bridge.command_limiter import ActionInbox, ActionIntake, CommandLimiter
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.bridge.settings import BridgeSettings
from rynn_robot_bridge.bridge.transition import SafeTransition, TransitionLimits
from rynn_robot_bridge.lcm_protocol import RobotState, now_utime
from rynn_robot_bridge.robot_safety import CommandEchoCheck, Fault, StateValidator


@dataclass(frozen=True)
class RobotCommand:
    """One command for the LCM link: a position target, or a hold (enable=false, MODE_HOLD).

    ``sequence`` and ``utime`` are what goes on the wire; the robot echoes them back.
    """

    position: np.ndarray
    hold: bool
    sequence: int = 0
    utime: int = 0


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
        state_position_margin_rad: float = 0.1,
        state_velocity_factor: float = 2.0,
    ):
        self.joint_limits = joint_limits
        self.rate_hz = float(rate_hz)
        self.state_timeout_s = float(state_timeout_s)
        self.transition_limits = transition_limits
        self.inbox = ActionInbox(action_timeout_s)
        self.limiter = CommandLimiter(joint_limits, rate_hz, velocity_scale)
        self.watchdog_trips = 0
        self.approaches = 0
        self.approach_unsynchronized_steps = 0  # approach cycles planned per joint: Ruckig's synchronised plan raised
        self._lock = threading.Lock()
        self._mode = mode
        self._phase = Phase.HOLDING
        self._approach: SafeTransition | None = None
        self._measured: np.ndarray | None = None
        self._measured_at = float("-inf")
        self._actions_were_fresh = False
        self._virtual_at: float | None = None  # when the virtual (digital) robot last advanced
        self.state_validator = StateValidator(
            joint_limits.lower, joint_limits.upper, joint_limits.velocity,
            state_position_margin_rad, state_velocity_factor, stale_after_s=self.state_timeout_s,
        )
        self.echo_check = CommandEchoCheck()
        self.second_commander: str | None = None  # set when the robot took another sender's command
        # Sequences start at the wall clock in microseconds: a restarted bridge always numbers above its
        # previous run (200 per second), so an old echo is never mistaken for a newer command of this run.
        self._next_sequence = now_utime()

    @classmethod
    def from_settings(cls, mode: Mode, settings: BridgeSettings, rate_hz: float) -> RobotCommander:
        """The commander the bridge runs: the URDF's joint limits (``settings.urdf_path``), the settings' timeouts,
        approach limits and state checks."""
        return cls(
            mode,
            joint_limits_from_urdf(settings.urdf_path),
            rate_hz=rate_hz,
            action_timeout_s=settings.action_timeout_ms / 1e3,
            state_timeout_s=settings.state_timeout_ms / 1e3,
            transition_limits=settings.transition,
            velocity_scale=settings.velocity_scale,
            state_position_margin_rad=settings.state_position_margin_rad,
            state_velocity_factor=settings.state_velocity_factor,
        )

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

    def submit_actions(self, actions, now: float) -> ActionIntake:
        """Take the operator actions received together (oldest first): the newest valid one wins."""
        with self._lock:
            return self.inbox.submit_newest(actions, now)

    def update_measured(self, state: RobotState, now: float) -> Fault:
        """Take the robot's measured state if it validates; returns ``Fault.NONE`` or why it was dropped."""
        with self._lock:
            fault = self.state_validator.check(state.position, state.velocity, state.effort, state.sequence, now)
            if fault:
                return fault
            self._measured = np.asarray(state.position, dtype=np.float64).copy()
            self._measured_at = now
            foreign = self.echo_check.check(state.last_command_sequence, state.last_command_utime, now)
            if foreign and self.second_commander is None:
                self.second_commander = foreign
            return Fault.NONE

    def request_mode(self, mode: Mode, now: float) -> tuple[bool, str]:
        """Switch mode if it is safe; (accepted, message for the operator)."""
        with self._lock:
            if mode == Mode.REAL and self.second_commander is not None:
                return self._rearm_after_second_commander(now)
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
            self._mode, self._virtual_at = Mode.DIGITAL, now
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
                elapsed = None if self._virtual_at is None else now - self._virtual_at
                self._virtual_at = now
                if action is not None:
                    self.limiter.step(action, elapsed)  # measured time: skipped cycles do not slow it down
                return None
            if self._measured is None or self.second_commander is not None:
                self._phase = Phase.HOLDING
                return None
            if action is None or self._robot_state_problem(now):
                self._phase = Phase.HOLDING
                return self._numbered(self.joint_limits.clamp(self._measured), hold=True)
            if self._phase == Phase.HOLDING:
                self._approach = SafeTransition(self.transition_limits, self.joint_limits, self.rate_hz, self._measured)
                self._phase = Phase.APPROACHING
                self.approaches += 1
            if self._phase == Phase.APPROACHING:
                approach, unsynchronized_before = self._approach, self._approach.unsynchronized_steps
                try:
                    position = approach.step(action)
                finally:  # counted even when the cycle then failed
                    self.approach_unsynchronized_steps += approach.unsynchronized_steps - unsynchronized_before
                if self._approach.done:
                    self.limiter.reset(position)
                    self._phase, self._approach = Phase.TRACKING, None
                return self._numbered(position, hold=False)
            return self._numbered(self.limiter.step(action).copy(), hold=False)

    def hold_command(self) -> RobotCommand | None:
        """A hold at the last good measured pose (what the command thread sends when a cycle failed), or
        None when the bridge must not command (digital mode, no state yet, another commander)."""
        with self._lock:
            self._phase, self._approach = Phase.HOLDING, None
            if self._mode != Mode.REAL or self._measured is None or self.second_commander is not None:
                return None
            return self._numbered(self.joint_limits.clamp(self._measured), hold=True)

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
            if self.second_commander is not None:
                faults["second_commander"] = (
                    f"{self.second_commander}; this bridge stopped commanding. Stop the other sender, then "
                    "request real mode (/rynn/set_mode) to resume from the measured pose"
                )
            if self._mode == Mode.REAL and self.inbox.fresh(now) is None:
                faults["actions"] = (
                    f"no fresh action for {self.inbox.stale_after_s * 1e3:.0f} ms: real robot holding"
                )
            return faults

    def _robot_state_problem(self, now: float) -> str | None:
        if self._measured is None:
            return "robot state unknown: no LCM state received yet"
        rejected = self.state_validator.problem(now, hold_s=self.state_timeout_s)
        if rejected:
            return rejected
        silent = now - self._measured_at
        if silent > self.state_timeout_s:
            return f"robot LCM state silent for {silent * 1e3:.0f} ms (timeout {self.state_timeout_s * 1e3:.0f} ms)"
        return None

    def _rearm_after_second_commander(self, now: float) -> tuple[bool, str]:
        """The operator's way out of a second-commander stop: real mode again, from the measured pose."""
        refusal = self._robot_state_problem(now)
        if refusal:
            return False, f"refusing to resume real mode after another commander: {refusal}"
        cleared, self.second_commander = self.second_commander, None
        self.echo_check.rebaseline(now)
        self._mode, self._phase, self._approach = Mode.REAL, Phase.HOLDING, None
        return True, f"resuming real mode from the measured pose (cleared: {cleared})"

    def _numbered(self, position: np.ndarray, hold: bool) -> RobotCommand:
        command = RobotCommand(position, hold, self._next_sequence, now_utime())
        self.echo_check.sent(command.sequence, command.utime)
        self._next_sequence += 1
        return command
