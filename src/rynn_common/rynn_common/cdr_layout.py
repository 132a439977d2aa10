"""Fixed-layout messages written straight as CDR bytes (ROS-free): the 200 Hz command and the 100 Hz joint states,
/tf of fixed frames (the trackers, the robot's links) and the hand skeletons; and the command's positions read
straight from its bytes.

A JointState with 54 fixed names, or a RobotAction, built as a Python message and serialised costs
40-50 us (54 strings and three float lists converted per message); the same bytes filled into a
preformatted buffer cost ~2 us. The buffer is laid out once, as Fast CDR writes these types (XCDR1,
little endian: each primitive aligned to its size from the end of the 4-byte encapsulation header),
and publishers publish the bytes (``Publisher.publish(bytes)``). The tests compare the fields rclpy
deserialises with the message's, and every byte with rosbags' serialisation of it (Fast DDS's wire format, which
recorded bags hold: no padding before an empty sequence, unlike ``rclpy.serialization.serialize_message``).
"""

from __future__ import annotations

import struct

import numpy as np

ENCAPSULATION = b"\x00\x01\x00\x00"  # XCDR1 little endian, no options
NS_PER_S = 1_000_000_000


class _Writer:
    def __init__(self):
        self.buffer = bytearray(ENCAPSULATION)

    def align(self, size: int) -> None:
        self.buffer += bytes(-(len(self.buffer) - len(ENCAPSULATION)) % size)

    def uint32(self, value: int) -> None:
        self.align(4)
        self.buffer += struct.pack("<I", value)

    def string(self, text: str) -> None:
        data = text.encode() + b"\x00"
        self.uint32(len(data))
        self.buffer += data

    def space(self, size: int, align: int) -> int:
        """Room for ``size`` bytes aligned to ``align``; its offset."""
        self.align(align)
        offset = len(self.buffer)
        self.buffer += bytes(size)
        return offset


class _Stamped:
    """A message that starts with a std_msgs/Header: stamp at bytes 4-12, then the frame id."""

    def __init__(self, frame_id: str):
        self._writer = _Writer()
        self._writer.space(8, 4)  # builtin_interfaces/Time: int32 sec, uint32 nanosec
        self._writer.string(frame_id)

    def _finish(self) -> None:
        self.buffer = self._writer.buffer
        del self._writer

    def _stamp(self, stamp_ns: int) -> None:
        sec, nanosec = divmod(int(stamp_ns), NS_PER_S)  # as rclpy's Time.to_msg
        struct.pack_into("<iI", self.buffer, 4, sec, nanosec)

    def _doubles(self, offset: int, count: int) -> np.ndarray:
        return np.frombuffer(self.buffer, dtype="<f8", count=count, offset=offset)


class JointStateLayout(_Stamped):
    """sensor_msgs/JointState with fixed ``names`` and ``counts`` (position, velocity, effort lengths)."""

    def __init__(self, names: list[str], counts: tuple[int, int, int], frame_id: str = ""):
        super().__init__(frame_id)
        self._writer.uint32(len(names))
        for name in names:
            self._writer.string(name)
        self.counts = tuple(counts)
        self._arrays = []
        for count in self.counts:
            self._writer.uint32(count)
            # an empty sequence has no padding before its (absent) data: what Fast DDS puts on the wire and what
            # rosbags reads (rclpy.serialization.serialize_message pads it, and rosbags refuses that)
            self._arrays.append((self._writer.space(8 * count, 8 if count else 1), count))
        self._finish()
        self._views = [self._doubles(offset, count) for offset, count in self._arrays]

    def pack(self, stamp_ns: int, position, velocity=(), effort=()) -> bytes:
        """The message's bytes; each array must have its layout's length (``ValueError`` otherwise)."""
        self._stamp(stamp_ns)
        for view, values in zip(self._views, (position, velocity, effort)):
            view[:] = values  # numpy raises ValueError on a length mismatch
        return bytes(self.buffer)


class RobotActionLayout(_Stamped):
    """rynn_teleop_msgs/RobotAction in ``frame_id``: 54 positions (a fixed array), then the uint64 sequence."""

    def __init__(self, frame_id: str, dimension: int = 54):
        super().__init__(frame_id)
        positions = self._writer.space(8 * dimension, 8)
        self._sequence = self._writer.space(8, 8)
        self._finish()
        self._positions = self._doubles(positions, dimension)

    def pack(self, stamp_ns: int, positions, sequence: int) -> bytes:
        """The message's bytes; ``positions`` already validated (rynn_common.action_layout.validate_action)."""
        self._stamp(stamp_ns)
        self._positions[:] = positions
        struct.pack_into("<Q", self.buffer, self._sequence, int(sequence))
        return bytes(self.buffer)


class TfMessageLayout:
    """tf2_msgs/TFMessage of fixed (parent, child) ``frames``, every transform under one stamp: the robot's 54 links
    at 20 Hz and the operator's 5 trackers at 30 Hz, without a TransformStamped built, filled and serialised each."""

    def __init__(self, frames: list[tuple[str, str]]):
        writer = _Writer()
        writer.uint32(len(frames))
        stamps, values = [], []
        for parent, child in frames:
            stamps.append(writer.space(8, 4))  # header.stamp
            writer.string(parent)
            writer.string(child)
            values.append(writer.space(56, 8))  # translation x, y, z; rotation x, y, z, w
        self.frames = [tuple(frame) for frame in frames]
        self.buffer = writer.buffer
        body = len(self.buffer) - len(ENCAPSULATION)  # offsets below count from the body, where alignment does
        self._words = np.frombuffer(self.buffer, dtype="<u4", count=body // 4, offset=len(ENCAPSULATION))
        self._doubles = np.frombuffer(self.buffer, dtype="<f8", count=body // 8, offset=len(ENCAPSULATION))
        self._sec = np.array([(offset - len(ENCAPSULATION)) // 4 for offset in stamps], dtype=np.intp)
        self._values = (np.array([(offset - len(ENCAPSULATION)) // 8 for offset in values], dtype=np.intp)[:, None]
                        + np.arange(7))

    def pack(self, stamp_ns: int, translations: np.ndarray, rotations_xyzw: np.ndarray) -> bytes:
        """The message's bytes for (n, 3) translations and (n, 4) quaternions (``ValueError`` for another n)."""
        sec, nanosec = divmod(int(stamp_ns), NS_PER_S)  # as rclpy's Time.to_msg
        self._words[self._sec] = sec & 0xFFFFFFFF  # int32, two's complement
        self._words[self._sec + 1] = nanosec
        self._doubles[self._values] = np.concatenate((translations, rotations_xyzw), axis=1)
        return bytes(self.buffer)


HAND_POINTS = 21


class BimanualSkeletonLayout(_Stamped):
    """rynn_teleop_msgs/BimanualSkeleton in ``frame_id``, each hand in its own frame (its HandSkeleton's header, under
    the same stamp): two hands of 21 points, confidences and a valid flag, and two optional elbows."""

    def __init__(self, frame_id: str, left_frame_id: str, right_frame_id: str):
        super().__init__(frame_id)
        writer = self._writer
        hands = []
        for side, hand_frame in enumerate((left_frame_id, right_frame_id)):  # HandSkeleton.LEFT = 0, RIGHT = 1
            stamp = writer.space(8, 4)
            writer.string(hand_frame)
            writer.buffer[writer.space(1, 1)] = side
            hands.append((stamp, writer.space(8 * 3 * HAND_POINTS, 8), writer.space(4 * HAND_POINTS, 4), writer.space(1, 1)))
        elbows = writer.space(8 * 6, 8)  # left_elbow, right_elbow: geometry_msgs/Point
        self._elbows_valid = writer.space(2, 1)
        self._finish()
        self._hands = [(stamp, self._doubles(points, 3 * HAND_POINTS),
                        np.frombuffer(self.buffer, dtype="<f4", count=HAND_POINTS, offset=confidence), valid)
                       for stamp, points, confidence, valid in hands]
        self._elbows = self._doubles(elbows, 6)

    def pack(self, stamp_ns: int, hands, elbows) -> bytes:
        """``hands``: (points (21, 3), confidence (21,), valid) of the left then the right hand, as a HandSkeleton
        carries them (rynn_common.skeleton_arrays.hand_skeleton_fields); ``elbows``: ((x, y, z), valid) of each."""
        self._stamp(stamp_ns)
        stamp = bytes(self.buffer[4:12])
        for (stamp_offset, points_view, confidence_view, valid_offset), (points, confidence, valid) in zip(self._hands, hands):
            self.buffer[stamp_offset:stamp_offset + 8] = stamp
            points_view[:] = np.reshape(points, -1)
            confidence_view[:] = confidence
            self.buffer[valid_offset] = bool(valid)
        (left, left_valid), (right, right_valid) = elbows
        self._elbows[:3], self._elbows[3:] = left, right
        self.buffer[self._elbows_valid], self.buffer[self._elbows_valid + 1] = bool(left_valid), bool(right_valid)
        return bytes(self.buffer)


def robot_action_positions(raw: bytes, dimension: int = 54) -> np.ndarray | None:
    """The positions of a RobotAction's CDR bytes laid out exactly as ``RobotActionLayout`` (and rclpy) write them:
    XCDR1 little endian, a NUL-terminated UTF-8 frame id, nothing after the sequence. None for anything else (the
    caller deserialises those as before: big endian, trailing bytes, malformed), so no bytes read differently. The
    bridge takes 200 commands a second; a deserialised message cost 14 us of them, this ~2 us."""
    if len(raw) < 16 or raw[:4] != ENCAPSULATION:
        return None
    (length,) = struct.unpack_from("<I", raw, 12)
    frame_end = 16 + length
    positions = frame_end + (-(frame_end - len(ENCAPSULATION)) % 8)
    if length == 0 or len(raw) != positions + 8 * dimension + 8 or raw[frame_end - 1] != 0:
        return None
    try:
        raw[16:frame_end - 1].decode()
    except UnicodeDecodeError:
        return None
    return np.frombuffer(raw, dtype="<f8", count=dimension, offset=positions).astype(np.float64)
