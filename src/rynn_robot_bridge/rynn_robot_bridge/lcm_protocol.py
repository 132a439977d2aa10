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


# robot_state_t on the wire (lcm-gen's layout, big endian): fingerprint, utime, sequence, last command sequence
# and utime, num_joints, then position, velocity, effort (num_joints doubles each), then the int32 fault flags
# and seven int64 counters. 500 states a second pass here: read and written straight as arrays, not through
# the generated class (a tuple of floats per array, 17.5 us a decode); the tests compare both byte for byte.
_STATE_FINGERPRINT = robot_state_t._get_packed_fingerprint()
_STATE_HEADER = struct.Struct(">qqqqi")
_STATE_TRAILER = struct.Struct(">iqqqqqqq")
_STATE_COUNTERS = ("fault_flags", "accepted_commands", "rejected_malformed", "rejected_wrong_length",
                   "rejected_non_finite", "rejected_joint_limit", "rejected_sequence", "watchdog_trips")


def encode_state(state: RobotState) -> bytes:
    """``len(state.position)`` joints; a shorter velocity or effort is a ``struct.error``, as lcm-gen's encoder."""
    count = len(state.position)
    arrays = [np.asarray(values, dtype=np.float64)[:count] for values in (state.position, state.velocity, state.effort)]
    if any(len(values) != count for values in arrays):
        raise struct.error(f"pack expected {count} items for packing")
    header = _STATE_HEADER.pack(int(state.utime), int(state.sequence), int(state.last_command_sequence),
                                int(state.last_command_utime), count)
    trailer = _STATE_TRAILER.pack(*(int(getattr(state, name)) for name in _STATE_COUNTERS))
    return b"".join((_STATE_FINGERPRINT, header, np.concatenate(arrays).astype(">f8").tobytes(), trailer))


def decode_state(data: bytes) -> RobotState:
    """What robot_state_t.decode reads (trailing bytes ignored, as there), ``MalformedPacket`` where it fails."""
    data = bytes(data)
    if data[:8] != _STATE_FINGERPRINT:
        raise MalformedPacket(f"not a robot_state_t packet ({len(data)} bytes): Decode error")
    start = 8 + _STATE_HEADER.size
    if len(data) < start:
        raise MalformedPacket(f"not a robot_state_t packet ({len(data)} bytes): too short for its header")
    utime, sequence, last_command_sequence, last_command_utime, count = _STATE_HEADER.unpack_from(data, 8)
    end = start + 24 * count
    if count < 0 or len(data) < end + _STATE_TRAILER.size:
        raise MalformedPacket(f"not a robot_state_t packet ({len(data)} bytes): {count} joints do not fit")
    position, velocity, effort = np.frombuffer(data, ">f8", 3 * count, start).astype(np.float64).reshape(3, count)
    return RobotState(utime, sequence, last_command_sequence, last_command_utime, position, velocity, effort,
                      *_STATE_TRAILER.unpack_from(data, end))


def _decode(lcm_type, data: bytes):
    try:
        return lcm_type.decode(bytes(data))
    except (ValueError, struct.error, OverflowError, MemoryError, TypeError) as exc:
        raise MalformedPacket(f"not a {lcm_type.__name__} packet ({len(data)} bytes): {exc}") from exc
