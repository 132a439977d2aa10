"""Forward camera frames from the active source only, switch sources atomically, detect stalls.

Consumers subscribe once to the canonical camera topics and must not be able
to tell which robot produced a frame. So the router

* publishes a frame only while its source is the active one, holding one lock
  across "is this source active?" and the publish: once ``switch()`` returns,
  no frame of the old source can be published any more;
* passes frames through untouched: it never restamps, repeats or fills in a
  frame, so a stalled source makes the canonical topic go quiet (and the
  stall is reported) instead of showing a stale scene as live;
* rejects frames whose encoding, size or frame id differ from the canonical
  format, whose step or data length cannot hold that format, whose stamp lies
  beyond ``max_future_s`` ahead of the receiver's clock (such a frame never
  becomes the high-water mark, so one bad stamp cannot block the stream), and
  frames whose stamp does not advance (a repeated or reordered frame). When the wall clock
  (the stamps' time base) steps back, the order starts afresh: frames stamped after the step
  would otherwise all look older than the last one before it, and the stream would latch for
  as long as the step (rynn_common.clock_steps).
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass
from typing import Callable

from rynn_common.clock_steps import ClockStepDetector
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.image_layout import ImageHeader, image_layout_problem

# A frame stamped further ahead of the receiver's clock than this is rejected (clock skew between
# a camera host and this one is milliseconds; a stamp a day ahead is a broken or hostile sender).
MAX_FUTURE_S = 0.5


@dataclass(frozen=True)
class FrameFormat:
    encoding: str
    width: int
    height: int
    frame_id: str


def frame_format(image: ImageHeader) -> FrameFormat:
    return FrameFormat(image.encoding, image.width, image.height, image.frame_id)


class Routed(enum.Enum):
    """What happened to an offered frame; everything but FORWARDED is counted by the node."""

    FORWARDED = "forwarded"
    INACTIVE_SOURCE = "inactive_source"
    WRONG_FORMAT = "wrong_format"
    BAD_LAYOUT = "bad_layout"
    STAMP_IN_FUTURE = "stamp_in_future"
    STAMP_NOT_ADVANCING = "stamp_not_advancing"


class CameraRouter:
    """Times are seconds on one monotonic clock; stamps are the frames' own header stamps in ns,
    compared with ``clock_ns``, the receiver's clock in the same time base (ROS time)."""

    def __init__(self, active: Mode, canonical: FrameFormat, stall_timeout_s: float, now: float,
                 max_future_s: float = MAX_FUTURE_S):
        self.canonical = canonical
        self.stall_timeout_s = float(stall_timeout_s)
        self.max_future_ns = int(max_future_s * 1e9)
        self._lock = threading.Lock()
        self._active = active
        self._active_since = now
        self._last_frame_time: dict[Mode, float] = {}
        self._last_stamp_ns: dict[Mode, int] = {}
        self.clock_steps = ClockStepDetector()  # ``clock_steps.steps``: wall-clock steps seen

    @property
    def active(self) -> Mode:
        return self._active

    def switch(self, source: Mode, now: float) -> None:
        """Make ``source`` the active one; waits for a publish in progress to finish first."""
        with self._lock:
            if source == self._active:
                return
            self._active = source
            self._active_since = now

    def offer_image(self, source: Mode, image: ImageHeader, now: float, clock_ns: int, publish: Callable[[], None]) -> Routed:
        """Publish (by calling ``publish``) a frame of ``source`` if it is active and well-formed."""
        with self._lock:
            if self.clock_steps.step(clock_ns * 1e-9, now) < 0.0:
                self._last_stamp_ns.clear()  # the wall clock went back: its new stamps are not reordered frames
            if source != self._active:
                return Routed.INACTIVE_SOURCE
            if frame_format(image) != self.canonical:
                return Routed.WRONG_FORMAT
            if image_layout_problem(image.encoding, image.width, image.height, image.step, image.data_size):
                return Routed.BAD_LAYOUT
            if image.stamp_ns > clock_ns + self.max_future_ns:
                return Routed.STAMP_IN_FUTURE
            if image.stamp_ns <= self._last_stamp_ns.get(source, -1):
                return Routed.STAMP_NOT_ADVANCING
            self._last_stamp_ns[source] = image.stamp_ns
            self._last_frame_time[source] = now
            publish()
            return Routed.FORWARDED

    def offer_info(self, source: Mode, publish: Callable[[], None]) -> Routed:
        """Camera info follows the same gate as the images (no liveness or stamp rules)."""
        with self._lock:
            if source != self._active:
                return Routed.INACTIVE_SOURCE
            publish()
            return Routed.FORWARDED

    def stall(self, now: float) -> str | None:
        """A description of the active source's stall, or None while frames keep coming.

        A source that has just become active gets one timeout to deliver its first frame.
        """
        with self._lock:
            source = self._active
            last = max(self._last_frame_time.get(source, self._active_since), self._active_since)
        silent = now - last
        if silent <= self.stall_timeout_s:
            return None
        return f"{source.label} camera stalled: no frame for {silent * 1e3:.0f} ms (timeout {self.stall_timeout_s * 1e3:.0f} ms)"
