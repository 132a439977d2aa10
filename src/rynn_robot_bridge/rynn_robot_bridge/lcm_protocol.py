"""Encode and decode the robot's LCM messages (rynn_lcm.robot_command_t / robot_state_t).

Decoding never trusts the wire: a packet that does not parse raises
``MalformedPacket`` so the receiver can count and drop it; array lengths and
values are checked by the controller (``robot_safety``), which owns the counters.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

import numpy as np

try:
    from rynn_robot_bridge.lcm_types.rynn_lcm import robot_command_t, robot_state_t
except ImportError as exc:  # the bindings are build output
    raise ImportError(
        "the LCM bindings are not generated: run scripts/generate_lcm_types.sh (make setup does)"
    ) from exc

NUM_JOINTS = robot_command_t.NUM_JOINTS
MODE_POSITION = robot_command_t.MODE_POSITION
MODE_HOLD = robot_command_t.MODE_HOLD


class MalformedPacket(ValueError):
    """The bytes are not a valid encoding of the expected LCM type."""


@dataclass(frozen=True)
class JointCommand:
    utime: int
    sequence: int
    mode: int
    enable: bool
    position: np.ndarray
    velocity_feedforward: np.ndarray | None  # None when the sender sets no feed-forward


@dataclass(frozen=True)
class RobotState:
    utime: int
    sequence: int
    last_command_sequence: int
    last_command_utime: int
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    fault_flags: int
    accepted_commands: int
    rejected_malformed: int
    rejected_wrong_length: int
    rejected_non_finite: int
    rejected_joint_limit: int
    rejected_sequence: int
    watchdog_trips: int


def now_utime() -> int:
    return time.time_ns() // 1000


def encode_command(
    position,
    sequence: int,
    utime: int | None = None,
    velocity_feedforward=None,
    enable: bool = True,
    mode: int = MODE_POSITION,
) -> bytes:
    """Bytes of one command; lengths are written as given so tests can send bad ones."""
    msg = robot_command_t()
    msg.utime = now_utime() if utime is None else int(utime)
    msg.sequence = int(sequence)
    msg.mode = int(mode)
    msg.enable = bool(enable)
    msg.position = [float(v) for v in np.asarray(position, dtype=np.float64).ravel()]
    msg.num_joints = len(msg.position)
    msg.has_velocity_feedforward = velocity_feedforward is not None
    msg.velocity_feedforward = (
        [] if velocity_feedforward is None else [float(v) for v in np.asarray(velocity_feedforward).ravel()]
    )
    msg.num_velocities = len(msg.velocity_feedforward)
    return msg.encode()


def decode_command(data: bytes) -> JointCommand:
    msg = _decode(robot_command_t, data)
    return JointCommand(
        utime=msg.utime,
        sequence=msg.sequence,
        mode=msg.mode,
        enable=bool(msg.enable),
        position=np.asarray(msg.position, dtype=np.float64),
        velocity_feedforward=(
            np.asarray(msg.velocity_feedforward, dtype=np.float64) if msg.has_velocity_feedforward else None
        ),
    )


def encode_state(state: RobotState) -> bytes:
    msg = robot_state_t()
    for name in (
        "utime", "sequence", "last_command_sequence", "last_command_utime", "fault_flags",
        "accepted_commands", "rejected_malformed", "rejected_wrong_length", "rejected_non_finite",
        "rejected_joint_limit", "rejected_sequence", "watchdog_trips",
    ):
        setattr(msg, name, int(getattr(state, name)))
    msg.num_joints = len(state.position)
    msg.position = [float(v) for v in state.position]
    msg.velocity = [float(v) for v in state.velocity]
    msg.effort = [float(v) for v in state.effort]
    return msg.encode()


def decode_state(data: bytes) -> RobotState:
    msg = _decode(robot_state_t, data)
    return RobotState(
        **{name: getattr(msg, name) for name in RobotState.__dataclass_fields__ if name not in ("position", "velocity", "effort")},
        position=np.asarray(msg.position, dtype=np.float64),
        velocity=np.asarray(msg.velocity, dtype=np.float64),
        effort=np.asarray(msg.effort, dtype=np.float64),
    )


def _decode(lcm_type, data: bytes):
    try:
        return lcm_type.decode(bytes(data))
    except (ValueError, struct.error, OverflowError, MemoryError, TypeError) as exc:
        raise MalformedPacket(f"not a {lcm_type.__name__} packet ({len(data)} bytes): {exc}") from exc
