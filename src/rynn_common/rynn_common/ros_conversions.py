"""Build and read the suite's ROS messages from NumPy arrays.

The only module of the core that imports message types, so the algorithms stay
ROS-free and every node converts the same way. Builders validate: a RobotAction
with the wrong length or a NaN never leaves this module.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Point, TransformStamped
from rynn_teleop_msgs.msg import BimanualSkeleton, HandSkeleton, RobotAction, StageLatency, TeleopStatus
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from rynn_common.action_layout import validate_action
from rynn_common.cdr_layout import BimanualSkeletonLayout, TfMessageLayout
from rynn_common.pipeline_stats import PipelineStats
from rynn_common.ros_names import BASE_FRAME
from rynn_common.rotations import quaternions_xyzw
from rynn_common.skeleton_arrays import elbow_fields, hand_skeleton_fields

SIDE_CODES = {"left": HandSkeleton.LEFT, "right": HandSkeleton.RIGHT}


def _sec_nanosec(seconds: float) -> tuple[int, int]:
    """Whole seconds and nanoseconds of float seconds (the fraction taken apart: an epoch stamp in nanoseconds
    would lose ~256 ns to float64); a fraction that rounds up to a full second carries into it."""
    sec = int(np.floor(seconds))
    nanosec = int(round((seconds - sec) * 1e9))
    return (sec + 1, nanosec - 1_000_000_000) if nanosec >= 1_000_000_000 else (sec, nanosec)


def time_from_seconds(seconds: float) -> Time:
    """A builtin_interfaces/Time from float seconds (e.g. a synthetic clock)."""
    sec, nanosec = _sec_nanosec(seconds)
    return Time(sec=sec, nanosec=nanosec)


def stamp_ns_from_seconds(seconds: float) -> int:
    """``time_from_seconds``'s stamp in nanoseconds (what a preformatted message's ``pack`` takes)."""
    sec, nanosec = _sec_nanosec(seconds)
    return sec * 1_000_000_000 + nanosec


def seconds_from_time(stamp: Time) -> float:
    return _seconds(stamp.sec, stamp.nanosec)


def seconds_from_ns(stamp_ns: int) -> float:
    """What ``seconds_from_time`` reads from the message a stamp of ``stamp_ns`` goes out in."""
    return _seconds(*divmod(int(stamp_ns), 1_000_000_000))


def _seconds(sec: int, nanosec: int) -> float:
    return sec + nanosec * 1e-9


def make_header(stamp: Time | float, frame_id: str) -> Header:
    if not isinstance(stamp, Time):
        stamp = time_from_seconds(float(stamp))
    return Header(stamp=stamp, frame_id=frame_id)


def make_robot_action(
    positions, stamp: Time | float, frame_id: str = BASE_FRAME, sequence: int = 0
) -> RobotAction:
    """A RobotAction from a 54-D joint vector; ``ValueError`` on wrong size or NaN/inf."""
    msg = RobotAction(header=make_header(stamp, frame_id), sequence=int(sequence))
    msg.positions = validate_action(positions)
    return msg


def robot_action_to_array(msg: RobotAction) -> np.ndarray:
    """The validated (54,) float64 joint vector of a received RobotAction."""
    return validate_action(msg.positions)


def make_tf_message(frames: list[tuple[str, str]], matrices, stamp: Time) -> TFMessage:
    """A TFMessage of the (parent, child) ``frames`` at their (n, 4, 4) poses, all stamped ``stamp`` (what goes
    out at 20-120 Hz is packed as bytes instead: ``tf_message_bytes``)."""
    translations, rotations = transform_fields(matrices)
    if len(translations) != len(frames):
        raise ValueError(f"{len(frames)} frames but {len(translations)} poses")
    transforms = []
    for (parent, child), (x, y, z), (qx, qy, qz, qw) in zip(frames, translations, rotations):
        transform = TransformStamped(header=Header(stamp=stamp, frame_id=parent), child_frame_id=child)
        translation, rotation = transform.transform.translation, transform.transform.rotation
        translation.x, translation.y, translation.z = x, y, z
        rotation.x, rotation.y, rotation.z, rotation.w = qx, qy, qz, qw
        transforms.append(transform)
    return TFMessage(transforms=transforms)


def transform_arrays(matrices) -> tuple[np.ndarray, np.ndarray]:
    """What the TransformStamped of (n, 4, 4) poses carry: (n, 3) translations, (n, 4) quaternions (x, y, z, w)."""
    matrices = np.asarray(matrices, dtype=np.float64).reshape(-1, 4, 4)
    return matrices[:, :3, 3], quaternions_xyzw(matrices[:, :3, :3])


def transform_fields(matrices) -> tuple[list[list[float]], list[list[float]]]:
    """``transform_arrays`` as lists of floats (what the message's fields take)."""
    translations, rotations = transform_arrays(matrices)
    return translations.tolist(), rotations.tolist()


def tf_message_bytes(layout: TfMessageLayout, matrices, stamp_ns: int) -> bytes:
    """``make_tf_message``'s message as its CDR bytes, for the frames of ``layout``: no message built."""
    translations, rotations = transform_arrays(matrices)
    if len(translations) != len(layout.frames):
        raise ValueError(f"{len(layout.frames)} frames but {len(translations)} poses")
    return layout.pack(stamp_ns, translations, rotations)


class TfMessagePacker:
    """``tf_message_bytes`` for whatever frames come: a ``TfMessageLayout`` per set of frames, made the first time
    they come and kept (a tracker sample may lack a tracker; a joint state may name some of the joints)."""

    def __init__(self):
        self.layouts: dict[tuple[tuple[str, str], ...], TfMessageLayout] = {}

    def pack(self, frames, matrices, stamp_ns: int) -> bytes:
        frames = tuple(frames)
        layout = self.layouts.get(frames)
        if layout is None:
            layout = self.layouts[frames] = TfMessageLayout(frames)
        return tf_message_bytes(layout, matrices, stamp_ns)


def make_hand_skeleton(
    side: str,
    joints,
    stamp: Time | float,
    frame_id: str,
    confidence=None,
    valid: bool = True,
    into: HandSkeleton | None = None,
) -> HandSkeleton:
    """A HandSkeleton from (21, 3) points [m]; NaN joints get confidence 0.

    A hand with no finite joint at all is marked invalid rather than rejected,
    so a glove dropout reaches consumers as "hand lost", not as silence.
    ``into``: fill this message (e.g. a BimanualSkeleton's own hand) instead of
    building one: each message builds its 21 Points, and a skeleton goes out at 120 Hz.
    """
    if side not in SIDE_CODES:
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    pts, conf, valid = hand_skeleton_fields(joints, confidence, valid)
    msg = HandSkeleton() if into is None else into
    msg.header = make_header(stamp, frame_id)
    msg.side = SIDE_CODES[side]
    msg.valid = valid
    for point, (x, y, z) in zip(msg.joints, pts.tolist()):  # the 21 Points the message was built with
        point.x, point.y, point.z = x, y, z
    msg.confidence = conf
    return msg


def make_bimanual_skeleton(
    left_joints,
    right_joints,
    stamp: Time | float,
    frame_id: str,
    left_confidence=None,
    right_confidence=None,
    left_valid: bool = True,
    right_valid: bool = True,
    left_elbow=None,
    right_elbow=None,
    left_frame_id: str | None = None,
    right_frame_id: str | None = None,
) -> BimanualSkeleton:
    """Both hands under one stamp; elbows are optional (None = unknown).

    Each hand is in ``frame_id`` unless its own frame is given (gloves report
    wrist-relative points, each in its wrist tracker's frame). What goes out at 30 Hz
    is packed as bytes instead, by the same rules: ``bimanual_skeleton_bytes``.
    """
    header = make_header(stamp, frame_id)
    msg = BimanualSkeleton(header=header)
    make_hand_skeleton(
        "left", left_joints, header.stamp, left_frame_id or frame_id, left_confidence, left_valid, into=msg.left
    )
    make_hand_skeleton(
        "right", right_joints, header.stamp, right_frame_id or frame_id, right_confidence, right_valid, into=msg.right
    )
    for side, elbow in (("left", left_elbow), ("right", right_elbow)):
        (x, y, z), ok = elbow_fields(elbow)
        setattr(msg, f"{side}_elbow", Point(x=float(x), y=float(y), z=float(z)))
        setattr(msg, f"{side}_elbow_valid", ok)
    return msg


def bimanual_skeleton_bytes(
    layout: BimanualSkeletonLayout,
    left_joints,
    right_joints,
    stamp_ns: int,
    left_confidence=None,
    right_confidence=None,
    left_valid: bool = True,
    right_valid: bool = True,
    left_elbow=None,
    right_elbow=None,
) -> bytes:
    """``make_bimanual_skeleton``'s message as its CDR bytes, by the same field rules, in the frames of ``layout``:
    no message (and none of its 42 Points) built and serialised."""
    hands = (hand_skeleton_fields(left_joints, left_confidence, left_valid),
             hand_skeleton_fields(right_joints, right_confidence, right_valid))
    return layout.pack(stamp_ns, hands, (elbow_fields(left_elbow), elbow_fields(right_elbow)))


def make_teleop_status(stats: PipelineStats, source: str, mode: int, stamp: Time) -> TeleopStatus:
    """TeleopStatus for /rynn/status from one snapshot of a node's PipelineStats."""
    snapshot = stats.snapshot()
    msg = TeleopStatus(
        header=Header(stamp=stamp),
        source=source,
        mode=int(mode),
        dropped_inputs=snapshot.dropped_total,
        rejected_inputs=snapshot.rejected_total,
        outputs=snapshot.outputs,
        faults=[f"{key}: {text}" for key, text in sorted(snapshot.faults.items())],
    )
    msg.latencies = [
        StageLatency(stage=s.stage, last=s.last, p50=s.p50, p99=s.p99) for s in snapshot.latencies
    ]
    return msg


def make_diagnostics(stats: PipelineStats, name: str, hardware_id: str, stamp: Time) -> DiagnosticArray:
    """One DiagnosticStatus (for /diagnostics) with every latency, counter by reason and counted event.

    ERROR while a fault is active, WARN once anything was rejected, else OK.
    """
    snapshot = stats.snapshot()
    if snapshot.faults:
        level, message = DiagnosticStatus.ERROR, "; ".join(sorted(snapshot.faults.values()))
    elif snapshot.rejected_total:
        level, message = DiagnosticStatus.WARN, f"{snapshot.rejected_total} input(s) rejected"
    else:
        level, message = DiagnosticStatus.OK, "ok"
    values = [KeyValue(key="outputs", value=str(snapshot.outputs))]
    for s in snapshot.latencies:
        values += [
            KeyValue(key=f"{s.stage}.p50_ms", value=f"{s.p50 * 1e3:.3f}"),
            KeyValue(key=f"{s.stage}.p99_ms", value=f"{s.p99 * 1e3:.3f}"),
            KeyValue(key=f"{s.stage}.count", value=str(s.count)),
        ]
    values += [KeyValue(key=f"dropped.{k}", value=str(v)) for k, v in sorted(snapshot.dropped.items())]
    values += [KeyValue(key=f"rejected.{k}", value=str(v)) for k, v in sorted(snapshot.rejected.items())]
    values += [KeyValue(key=f"events.{k}", value=str(v)) for k, v in sorted(snapshot.events.items())]
    status = DiagnosticStatus(level=level, name=name, message=message, hardware_id=hardware_id, values=values)
    return DiagnosticArray(header=Header(stamp=stamp), status=[status])
