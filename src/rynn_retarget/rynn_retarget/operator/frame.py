"""What every operator source delivers: one timestamped sample of trackers and hands.

Conventions (shared by all sources, the recorder format and the UDP ingest):
- Tracker poses are 4x4 homogeneous transforms in the tracking system's world
  frame, metres. The chest tracker frame is the operator's body frame
  (x forward, y left, z up); a wrist tracker frame is that hand's frame below.
- Hand skeletons are 21 MediaPipe-ordered points in the hand frame, metres,
  wrist at the origin: z towards the middle-finger knuckle, x out of the palm
  (the side the fingers curl to), y completing a right-handed frame (thumb on
  +y for the right hand, on -y for the left). This is also the WUJI palm frame,
  so no re-orientation is needed at retargeting time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple, Protocol, runtime_checkable

import numpy as np

TRACKER_NAMES = ("chest", "left_wrist", "right_wrist", "left_upper_arm", "right_upper_arm")
HAND_POINTS = 21


@dataclass(frozen=True)
class OperatorFrames:
    """TF frame ids of the operator's trackers, as the tracker node publishes them."""

    world: str = "operator_world"
    chest: str = "operator_chest"
    left_wrist: str = "operator_left_wrist"
    right_wrist: str = "operator_right_wrist"
    left_upper_arm: str = "operator_left_upper_arm"
    right_upper_arm: str = "operator_right_upper_arm"


class TrackerTransform(NamedTuple):
    """One transform of a tracker sample as a /tf message carries it: what the tracker node hands the retarget
    node in-process, and what the retarget node reads from a TransformStamped; one path from either."""

    parent: str
    child: str
    stamp: float  # s
    translation: tuple[float, float, float]
    rotation: tuple[float, float, float, float]  # quaternion x, y, z, w


class HandsSample(NamedTuple):
    """Both hands as a BimanualSkeleton carries them (rynn_common.skeleton_arrays' dict: NaN where the
    confidence is 0; no elbows), stamped: what the glove node hands the retarget node in-process."""

    stamp: float  # s
    arrays: dict


@dataclass
class HandSkeleton:
    points: np.ndarray = field(default_factory=lambda: np.zeros((HAND_POINTS, 3)))  # (21, 3)
    confidence: np.ndarray = field(default_factory=lambda: np.zeros(HAND_POINTS))  # (21,) in [0, 1]
    valid: bool = False


@dataclass
class OperatorFrame:
    """``trackers`` maps names in TRACKER_NAMES to 4x4 poses; a missing tracker is simply absent."""

    stamp: float  # seconds, source clock
    trackers: dict = field(default_factory=dict)
    left_hand: HandSkeleton = field(default_factory=HandSkeleton)
    right_hand: HandSkeleton = field(default_factory=HandSkeleton)

    def hand(self, side: str) -> HandSkeleton:
        return self.left_hand if side == "left" else self.right_hand


@runtime_checkable
class OperatorSource(Protocol):
    """A stream of operator frames. ``frames()`` ends when the source is exhausted or closed."""

    def frames(self) -> Iterator[OperatorFrame]: ...

    def close(self) -> None: ...


class SampledSource:
    """An ``OperatorSource`` defined by ``frame_at(t)``: sampled at ``rate_hz`` from t = 0, paced to the
    wall clock when ``realtime`` (as a device would deliver them), else as fast as the consumer takes them.
    ``duration_s`` 0 or None: no end."""

    rate_hz: float
    duration_s: float | None
    realtime: bool
    _closed: bool = False

    def frame_at(self, t: float) -> OperatorFrame:
        raise NotImplementedError

    def frames(self) -> Iterator[OperatorFrame]:
        start = time.monotonic()
        index = 0
        while not self._closed:
            t = index / self.rate_hz
            if self.duration_s and t > self.duration_s:
                return
            if self.realtime:
                delay = start + t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            yield self.frame_at(t)
            index += 1

    def close(self) -> None:
        self._closed = True
