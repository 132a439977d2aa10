"""Bad operator input -> defined behaviour, counted; never NaN out, never an exception.

| input                               | behaviour                                   | counter              |
|-------------------------------------|---------------------------------------------|----------------------|
| stamp <= last accepted stamp        | frame dropped                               | out_of_order         |
| frame that is not an OperatorFrame  | frame dropped                               | malformed_frames     |
| tracker missing                     | last good pose of that tracker held         | missing_tracker      |
| tracker NaN/inf or not a rigid pose | last good pose held                         | nonfinite_tracker    |
| tracker moved > max_tracker_jump_m  | last good pose held; accepted after         | tracker_jump         |
|   since the last accepted sample    |   ``jump_accept_after`` consistent samples  | jump_accepted        |
| hand reported lost (valid = false)  | last good hand held                         | hand_lost            |
| hand NaN / low confidence           | last good hand held                         | invalid_hand         |
|   / points beyond max_hand_extent_m |                                             |                      |
| no accepted frame for stale_after_s | caller holds its last target                | stale (episodes)     |
| IK residual above threshold         | best in-limit IK solution used (clamped)    | unreachable_{side}   |

``StampBound`` is the stamp check on its own. Node shells check each stream with it at
ingress, against the receiver's clock: a stamp more than ``max_future_s`` ahead is
rejected and never becomes the high-water mark, so one bad stamp cannot latch a stream
(the retarget node counts these as ``tf_future_stamp`` / ``hands_future_stamp``). Given the
receiver's monotonic time too, it notices the wall clock stepping back (rynn_common.clock_steps)
and starts the order afresh (``restarts``), so a clock set back cannot latch a stream either; the
node then restarts the guard's own order before the first sample stamped after the step.

A tracker with no good pose yet makes that arm unusable (``arm_ready`` False)
until one arrives; the pipeline then holds the arm's last command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rynn_common.clock_steps import ClockStepDetector
from rynn_retarget.operator.frame import HAND_POINTS, TRACKER_NAMES, HandSkeleton, OperatorFrame


@dataclass(frozen=True)
class InputGuardConfig:
    max_tracker_jump_m: float = 0.15  # per sample; a human wrist moves < 3 cm in 8 ms
    jump_accept_after: int = 12  # consecutive consistent samples before a jump is believed (re-localisation)
    stale_after_s: float = 0.1
    max_hand_extent_m: float = 0.35  # wrist-relative keypoints beyond this are garbage
    min_hand_confidence: float = 0.3  # mean keypoint confidence
    # Stamps may lead the receiver's clock by this much (sender clock offset); a stamp further
    # ahead is rejected, so a stream is held back by at most this long after any bad stamp.
    max_future_s: float = 0.2


COUNTER_NAMES = (
    "accepted",
    "out_of_order",
    "malformed_frames",
    "missing_tracker",
    "nonfinite_tracker",
    "tracker_jump",
    "jump_accepted",
    "hand_lost",
    "invalid_hand",
    "stale",
    "unreachable_left",
    "unreachable_right",
    "nonfinite_solution",
)


@dataclass
class CleanFrame:
    """A frame whose every present tracker and hand is finite and plausible."""

    stamp: float
    trackers: dict = field(default_factory=dict)  # only trackers with a good pose so far
    hands: dict = field(default_factory=dict)  # side -> (21, 3), only hands with a good skeleton so far

    def arm_ready(self, side: str) -> bool:
        return all(name in self.trackers for name in ("chest", f"{side}_wrist", f"{side}_upper_arm"))


_HOMOGENEOUS_ROW = np.array([0.0, 0.0, 0.0, 1.0])
_IDENTITY3 = np.eye(3)


def is_rigid_pose(value) -> bool:
    try:
        matrix = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if matrix.shape != (4, 4) or not np.isfinite(matrix).all():
        return False
    rotation = matrix[:3, :3]
    # np.allclose's test (|a - b| <= atol + 1e-5 |b|) written out: a quarter of its cost, 5 trackers a sample
    return bool(
        (np.abs(matrix[3] - _HOMOGENEOUS_ROW) <= 1e-6 + 1e-5 * _HOMOGENEOUS_ROW).all()
        and (np.abs(rotation @ rotation.T - _IDENTITY3) <= 1e-3 + 1e-5 * _IDENTITY3).all()
        and np.linalg.det(rotation) > 0.0
    )


class StampBound:
    """Stamps of one stream must advance and may not lie beyond ``max_future_s`` ahead of the
    receiver's clock. Only a stamp within that bound becomes the high-water mark, so a message
    stamped a day ahead is rejected on its own instead of making every later one look old."""

    def __init__(self, max_future_s: float):
        self.max_future_s = float(max_future_s)
        self.last_stamp = float("-inf")
        self.clock_steps = ClockStepDetector()
        self.restarts = 0  # orders started afresh after the wall clock stepped back

    def restart(self) -> None:
        self.last_stamp = float("-inf")
        self.restarts += 1

    def check(self, stamp: float, clock_now: float | None, monotonic_now: float | None = None) -> str | None:
        """None if ``stamp`` is accepted (and becomes the high-water mark), else the reason:
        ``nonfinite_stamp``, ``future_stamp`` or ``out_of_order``. ``clock_now`` is the receiver's clock in the
        stamps' time base; None skips the future bound (stamps from a recording). ``monotonic_now``, read with
        ``clock_now``: a step back of that clock restarts the order (a stamp from before the step is then
        beyond the future bound, never the new high-water mark)."""
        if clock_now is not None and monotonic_now is not None and self.clock_steps.step(clock_now, monotonic_now) < 0:
            self.restart()
        if not np.isfinite(stamp):
            return "nonfinite_stamp"
        if clock_now is not None and stamp > clock_now + self.max_future_s:
            return "future_stamp"
        if stamp <= self.last_stamp:
            return "out_of_order"
        self.last_stamp = float(stamp)
        return None


class InputGuard:
    def __init__(self, config: InputGuardConfig | None = None):
        self.config = config or InputGuardConfig()
        self.counters = {name: 0 for name in COUNTER_NAMES}
        self._stamps = StampBound(self.config.max_future_s)
        self._last_accept_time: float | None = None
        self._good_trackers: dict[str, np.ndarray] = {}
        self._jump_candidates: dict[str, tuple[np.ndarray, int]] = {}
        self._good_hands: dict[str, np.ndarray] = {}
        self._stale = False

    def restart_order(self) -> None:
        """The stamps' clock stepped back (the node saw it at ingress): the next stamp starts the order afresh."""
        self._stamps.restart()

    def accept(self, frame, now: float) -> CleanFrame | None:
        """Clean ``frame`` received at ``now`` (monotonic s); None if dropped entirely. Frame
        stamps need not be wall-clock (replayed sessions): the future bound against the
        receiver's clock is the node shell's ``StampBound`` at ingress."""
        if not isinstance(frame, OperatorFrame) or not np.isfinite(_as_float(frame.stamp)):
            self.counters["malformed_frames"] += 1
            return None
        if self._stamps.check(float(frame.stamp), clock_now=None) is not None:
            self.counters["out_of_order"] += 1
            return None
        self._last_accept_time = now
        self._stale = False
        self.counters["accepted"] += 1
        trackers = frame.trackers if isinstance(frame.trackers, dict) else {}
        for name in TRACKER_NAMES:
            self._accept_tracker(name, trackers.get(name))
        for side in ("left", "right"):
            self._accept_hand(side, frame.hand(side))
        return CleanFrame(
            stamp=float(frame.stamp),
            trackers={k: v.copy() for k, v in self._good_trackers.items()},
            hands={k: v.copy() for k, v in self._good_hands.items()},
        )

    def check_stale(self, now: float) -> bool:
        """True while no frame was accepted for ``stale_after_s``; counts each stale episode once."""
        if self._last_accept_time is None or now - self._last_accept_time <= self.config.stale_after_s:
            return False
        if not self._stale:
            self._stale = True
            self.counters["stale"] += 1
        return True

    def count(self, name: str) -> None:
        self.counters[name] += 1

    def _accept_tracker(self, name: str, value) -> None:
        if value is None:
            self.counters["missing_tracker"] += 1
            return
        if not is_rigid_pose(value):
            self.counters["nonfinite_tracker"] += 1
            return
        pose = np.asarray(value, dtype=np.float64)
        previous = self._good_trackers.get(name)
        limit = self.config.max_tracker_jump_m
        if previous is not None and np.linalg.norm(pose[:3, 3] - previous[:3, 3]) > limit:
            candidate = self._jump_candidates.get(name)
            if candidate is not None and np.linalg.norm(pose[:3, 3] - candidate[0][:3, 3]) <= limit:
                streak = candidate[1] + 1
            else:
                streak = 1
            if streak < self.config.jump_accept_after:
                self._jump_candidates[name] = (pose, streak)
                self.counters["tracker_jump"] += 1
                return
            self.counters["jump_accepted"] += 1
        self._jump_candidates.pop(name, None)
        self._good_trackers[name] = pose

    def _accept_hand(self, side: str, hand) -> None:
        if not isinstance(hand, HandSkeleton):
            self.counters["invalid_hand"] += 1
            return
        if not hand.valid:
            self.counters["hand_lost"] += 1
            return
        try:
            points = np.asarray(hand.points, dtype=np.float64)
            confidence = np.asarray(hand.confidence, dtype=np.float64)
        except (TypeError, ValueError):
            self.counters["invalid_hand"] += 1
            return
        if (
            points.shape != (HAND_POINTS, 3)
            or not np.all(np.isfinite(points))
            or np.abs(points).max() > self.config.max_hand_extent_m
            or confidence.shape != (HAND_POINTS,)
            or not np.all(np.isfinite(confidence))
            or confidence.mean() < self.config.min_hand_confidence
        ):
            self.counters["invalid_hand"] += 1
            return
        self._good_hands[side] = points - points[0]


def _as_float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")
